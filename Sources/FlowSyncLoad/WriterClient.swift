import FlowSyncCore
import FlowSyncProtocol

/// A writer: sends Mutates on a schedule (open loop) or as fast as its in-flight window
/// allows (closed loop), and measures write→ack.
///
/// Open loop (`rate > 0`): mutation *k* is due at `start + k × interval`, whatever the
/// answers. It is sent at the first timer tick at or after that time, if the in-flight
/// window has room; otherwise it waits, and its latency still counts from the due
/// ("intended") time. That is the correction for coordinated omission: a stall of the
/// daemon shows in the percentiles instead of silently lowering the send rate.
final class WriterClient: LoadConnection {
    let index: Int
    private var generators: [(list: String, generator: OperationGenerator)]
    private var listCursor = 0
    private var nextSeq: UInt64 = 1
    private var inFlight: [UInt64: (intended: UInt64, sent: UInt64)] = [:]
    /// The next due time (open loop).
    private(set) var nextDue: UInt64 = 0
    private var interval: UInt64 = 0
    /// The version of the last Ack per list (the base with `--base acked`).
    private var lastCommitted: [String: ListVersion] = [:]
    private(set) var running = false

    init(context: LoadContext, index: Int, generators: [(list: String, generator: OperationGenerator)]) {
        self.index = index
        self.generators = generators
        super.init(context: context, clientID: "load-w\(index)")
    }

    /// Mutations sent and not answered.
    var inFlightCount: Int { inFlight.count }

    /// How far the schedule has slipped behind (ns), 0 when on time or closed loop.
    func slip(now: UInt64) -> UInt64 { running && interval > 0 && nextDue < now ? now - nextDue : 0 }

    override func didBecomeReady() {
        context.metrics.writersEstablished += 1
    }

    /// Starts sending: the first mutation is due at `start`, then every `interval` ns
    /// (0: closed loop).
    func start(at start: UInt64, interval: UInt64) {
        self.nextDue = start
        self.interval = interval
        running = true
        pump(now: MonotonicClock.nanoseconds())
    }

    /// Stops scheduling new mutations (answers to those in flight still count).
    func stop() { running = false }

    /// Sends every mutation that is due and fits the window.
    func pump(now: UInt64) {
        guard running, isReady, !generators.isEmpty else { return }
        let window = context.configuration.maxInFlightPerWriter
        if interval == 0 {
            while inFlight.count < window { sendMutation(intended: now, now: now) }
        } else {
            while nextDue <= now, inFlight.count < window {
                sendMutation(intended: nextDue, now: now)
                nextDue += interval
            }
        }
    }

    private func sendMutation(intended: UInt64, now: UInt64) {
        let seq = nextSeq
        nextSeq += 1
        let slot = listCursor
        listCursor = (listCursor + 1) % generators.count
        let operations = generators[slot].generator.nextOperations(count: context.configuration.opsPerMutation)
        let list = generators[slot].list
        let atHead = ListVersion(epoch: 0, version: 0)
        let base = context.configuration.writeBase == .acked ? lastCommitted[list] ?? atHead : atHead
        let mutate = Mutate(listName: list, clientID: clientID, seq: seq, base: base, operations: operations)
        context.recordIntended(writer: index, seq: seq, at: intended)
        inFlight[seq] = (intended, now)
        let metrics = context.metrics
        metrics.totalSent += 1
        if metrics.measuring, intended >= metrics.windowStart { metrics.mutationsSent += 1 }
        send([context.encoder.encode(.mutate(mutate))])
    }

    override func didReceive(_ frame: DecodedFrame) {
        let metrics = context.metrics
        switch frame.message {
        case .ack(let ack):
            guard let record = inFlight.removeValue(forKey: ack.seq) else {
                metrics.protocolError("\(clientID): Ack for seq \(ack.seq), which is not in flight")
                return
            }
            metrics.totalAnswered += 1
            lastCommitted[ack.listName] = ack.committed
            let now = MonotonicClock.nanoseconds()
            if metrics.measuring, record.intended >= metrics.windowStart {
                metrics.mutationsAcked += 1
                metrics.recordAck(nanoseconds: Int64(bitPattern: now &- record.intended))
                metrics.sendToAck.record(nanoseconds: Int64(bitPattern: now &- record.sent))
            }
            pump(now: now)
        case .reject(let reject):
            guard inFlight.removeValue(forKey: reject.seq) != nil else {
                metrics.protocolError("\(clientID): Reject for seq \(reject.seq), which is not in flight")
                return
            }
            metrics.totalAnswered += 1
            if metrics.measuring {
                metrics.mutationsRejected += 1
                metrics.rejectsByCode[reject.code.rawValue, default: 0] += 1
            }
            if metrics.rejectExamples.count < 10 {
                metrics.rejectExamples.append("\(clientID) seq \(reject.seq): \(reject.code) \(reject.message)")
            }
            pump(now: MonotonicClock.nanoseconds())
        case .error(let error):
            metrics.protocolError("\(clientID): \(error.code) \(error.message)")
        default:
            break
        }
    }
}
