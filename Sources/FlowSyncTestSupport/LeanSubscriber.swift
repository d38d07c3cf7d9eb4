import FlowSyncCore
import FlowSyncLoop
import FlowSyncProtocol

/// A subscriber that counts the frames it receives by type instead of decoding them, so
/// that a test or a benchmark can drive fast fan-outs of large rows without the client
/// side costing more than the daemon. It decodes only what a memory test asks about: the
/// Welcome (for its dictionary), every Snapshot (its reason and position) and every
/// Error. It can stop reading (a slow consumer) or never start (a dead one), and give
/// its socket a small receive buffer, like a constrained client.
///
/// Thread-safety: the socket lives on `thread`'s loop; the tallies are behind a lock.
public final class LeanSubscriber: Sendable {
    /// What arrived so far.
    public struct Tally: Sendable {
        /// Frames by message type byte.
        public var frames: [UInt8: Int] = [:]
        /// Bytes received.
        public var bytes = 0
        /// Every Snapshot, in order: its reason and position.
        public var snapshots: [(reason: Snapshot.Reason, position: ListVersion)] = []
        /// Every Error's code.
        public var errors: [ErrorCode] = []
        /// Diffs received since the last Snapshot.
        public var diffsSinceSnapshot = 0
        /// Whether a Diff arrived between two catch-up Snapshots (after the first one).
        public var diffsBetweenSnapshots = false
        /// When the last bytes were received (``MonotonicClock``, ns).
        public var lastReceivedAt: UInt64 = 0
        /// The connection ended.
        public var closed = false
        /// The version the subscriber's replica is at: the last Snapshot's position, or
        /// the last Diff's end (only when it tracks positions: see ``connect``).
        public var position: ListVersion?

        public var diffs: Int { frames[0x21, default: 0] }
    }

    public let thread: EventLoopThread
    private let connection = LoopConfined<TCPConnection?>(nil)
    private let splitter = LoopConfined(Splitter())
    private let decoder = LoopConfined(FrameDecoder(limits: .client))
    private let tally = Shared(Tally())

    private init(thread: EventLoopThread, tracksPosition: Bool) {
        self.thread = thread
        splitter.value.keepsDiffs = tracksPosition
    }

    /// Connects to 127.0.0.1:`port`, sends Hello and Subscribe(`list`) at once, and reads
    /// unless `reading` is false (then nothing is ever read until ``resumeReading()``).
    /// `receiveBufferBytes` > 0 sets `SO_RCVBUF`. `tracksPosition` decodes the Diffs too
    /// (inflating each), so that ``Tally/position`` says how far it got.
    @inline(never)
    public static func connect(
        port: Int, on thread: EventLoopThread, list: String, clientID: String, receiveBufferBytes: Int = 0,
        reading: Bool = true, tracksPosition: Bool = false
    ) async throws -> LeanSubscriber {
        let subscriber = LeanSubscriber(thread: thread, tracksPosition: tracksPosition)
        let result = Shared<Result<Void, UVError>?>(nil)
        let hello = FrameEncoder(configuration: .disabled).encode(
            .hello(Hello(minVersion: 1, maxVersion: 1, clientName: "lean", clientID: clientID, authToken: nil)))
        let subscribe = FrameEncoder(configuration: .disabled).encode(.subscribe(Subscribe(listName: list)))
        thread.loop.execute {
            TCPConnection.connect(
                loop: thread.loop, to: try! SocketAddress(host: "127.0.0.1", port: port),
                receiveBufferBytes: receiveBufferBytes
            ) { outcome in
                switch outcome {
                case .failure(let error):
                    result.set(.failure(error))
                case .success(let tcp):
                    subscriber.connection.value = tcp
                    tcp.onRead = { bytes in subscriber.received(bytes) }
                    tcp.onEnd = { _ in subscriber.tally.update { $0.closed = true } }
                    tcp.onClose = { subscriber.tally.update { $0.closed = true } }
                    if reading { try? tcp.startReading() }
                    _ = try? tcp.write([hello, subscribe])
                    result.set(.success(()))
                }
            }
        }
        guard await eventually({ result.get() != nil }), let outcome = result.get() else {
            throw UVError(code: -1, operation: "connect timed out")
        }
        // Not `try outcome.get()`: its typed throw inlined into an async caller crashed
        // the Swift 6.3.1 optimizer (CoroSplit, swifterror).
        if case .failure(let error) = outcome { throw error as any Error }
        return subscriber
    }

    /// What arrived so far.
    public var current: Tally { tally.get() }

    public func pauseReading() {
        let connection = self.connection
        thread.loop.execute { connection.value?.stopReading() }
    }

    public func resumeReading() {
        let connection = self.connection
        thread.loop.execute {
            do { try connection.value?.startReading() } catch {
                SlowConsumerRound.debugLog("resume failed: \(error)")
            }
            SlowConsumerRound.debugLog("resumed \(connection.value == nil ? "no connection" : "reading")")
        }
    }

    public func close() {
        let connection = self.connection
        thread.loop.execute { connection.value?.close() }
    }

    /// Loop thread only.
    private func received(_ bytes: UnsafeRawBufferPointer) {
        let now = MonotonicClock.nanoseconds()
        var frames: [(type: UInt8, bytes: [UInt8]?)] = []
        splitter.value.feed(bytes) { type, frame in frames.append((type, frame)) }
        var decoded: [Message] = []
        for frame in frames {
            guard let bytes = frame.bytes else { continue }
            decoder.value.feed(bytes)
            if let message = try? decoder.value.next() {
                if case .welcome(let welcome) = message {
                    decoder.value.dictionary = CompressionDictionary(welcomeBytes: welcome.dictionary)
                }
                decoded.append(message)
            }
        }
        tally.update { tally in
            tally.bytes += bytes.count
            tally.lastReceivedAt = now
            for frame in frames {
                tally.frames[frame.type, default: 0] += 1
                if frame.type == 0x21 { tally.diffsSinceSnapshot += 1 }
            }
            for message in decoded {
                switch message {
                case .snapshot(let snapshot):
                    if tally.snapshots.count >= 2 && tally.diffsSinceSnapshot > 0 { tally.diffsBetweenSnapshots = true }
                    tally.snapshots.append((snapshot.reason, snapshot.position))
                    tally.diffsSinceSnapshot = 0
                    tally.position = snapshot.position
                case .diff(let diff):
                    tally.position = ListVersion(epoch: diff.epoch, version: diff.toVersion)
                case .error(let error):
                    tally.errors.append(error.code)
                default:
                    break
                }
            }
        }
    }

    /// Splits the byte stream into frames by their length prefix; keeps the bytes only of
    /// the frames worth decoding (Welcome, Snapshot, Error).
    struct Splitter {
        private var header: [UInt8] = []
        private var frame: [UInt8] = []
        private var remaining = 0
        private var keep = false
        private var type: UInt8 = 0
        /// Keep (and so decode) the Diffs too.
        var keepsDiffs = false

        mutating func feed(_ bytes: UnsafeRawBufferPointer, _ emit: (UInt8, [UInt8]?) -> Void) {
            var i = 0
            while i < bytes.count {
                if remaining == 0 {
                    header.append(bytes[i])
                    i += 1
                    guard header.count == 5 else { continue }
                    let length = Int(header[0]) << 24 | Int(header[1]) << 16 | Int(header[2]) << 8 | Int(header[3])
                    type = header[4]
                    keep = type == 0x02 || type == 0x20 || type == 0x30 || (keepsDiffs && type == 0x21)
                    frame = keep ? header : []
                    header = []
                    remaining = length - 1
                    if remaining == 0 { emit(type, keep ? frame : nil) }
                    continue
                }
                let take = min(remaining, bytes.count - i)
                if keep { frame.append(contentsOf: bytes[i..<(i + take)]) }
                remaining -= take
                i += take
                if remaining == 0 {
                    emit(type, keep ? frame : nil)
                    frame = []
                }
            }
        }
    }
}
