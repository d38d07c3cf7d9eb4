import FlowSyncCore
import FlowSyncLoop
import FlowSyncProtocol

#if canImport(Glibc)
import Glibc
#endif

/// The load clients of one run and the steps the runner drives them through. Every
/// member is touched only on the load loop thread; the runner reaches it through
/// ``LoadRunner``'s `onLoop`, which is why it is `@unchecked Sendable`.
final class LoadEngine: @unchecked Sendable {
    let context: LoadContext
    let listNames: [String]
    private(set) var control: ControlClient!
    private(set) var subscribers: [SubscriberClient] = []
    private(set) var writers: [WriterClient] = []
    private var tick: LoopTimer?
    private var progressTimer: LoopTimer?
    private var sampleTimer: LoopTimer?
    private var writersStarted = false
    private var slowTimer: LoopTimer?
    private var slowResumeTimer: LoopTimer?
    private var slowSet: [SubscriberClient] = []
    var controlReady = false
    var setupPending = 0
    var setupFailures: [String] = []
    var stormDropped = 0
    var stormResults: [(viaDiff: Bool, nanoseconds: UInt64)] = []
    var progressEnabled = true
    private var lastProgress: (at: UInt64, sent: Int, acked: Int, frames: Int, rows: Int)?

    var configuration: LoadConfiguration { context.configuration }
    var metrics: LoadMetrics { context.metrics }

    init(context: LoadContext, listPrefix: String) {
        self.context = context
        listNames = (0..<context.configuration.lists).map { "\(listPrefix)\($0)" }
    }

    // MARK: Setup

    func connectControl() {
        control = ControlClient(context: context)
        control.readyCallback = { [weak self] in self?.controlReady = true }
        context.enqueueConnect(control)
    }

    /// Creates every list's sections and initial rows, at head, chunked under the
    /// frame limit; ``setupPending`` counts the answers still due.
    func setUpLists() {
        let c = configuration
        let sections = OperationGenerator.initialSections(
            rows: c.initialRows, sections: c.sectionsPerList, payloadBytes: c.payloadBytes)
        let chunk = max(1, min(2_000, (1 << 20) / max(c.payloadBytes + 40, 1)))
        for list in listNames {
            var mutations: [[FlowSyncCore.Operation]] = [[.insertSections(sections.map { Section(id: $0.id) }, at: 0)]]
            for section in sections {
                var offset = 0
                while offset < section.rows.count {
                    let end = min(offset + chunk, section.rows.count)
                    mutations.append([.insertRows(Array(section.rows[offset..<end]), in: .id(section.id), at: offset)])
                    offset = end
                }
            }
            for operations in mutations {
                setupPending += 1
                control.mutate(list: list, operations) { [weak self] (result: Result<ListVersion, LoadError>) in
                    guard let self else { return }
                    self.setupPending -= 1
                    if case .failure(let error) = result { self.setupFailures.append("\(list): \(error)") }
                }
            }
        }
    }

    func connectSubscribers() {
        let c = configuration
        startSampling()
        let full = c.fullReplicasPerList ?? c.subscribersPerList
        var serial = 0
        // Interleave lists so every list fills up evenly while connecting.
        for k in 0..<c.subscribersPerList {
            for (index, list) in listNames.enumerated() {
                let subscriber = SubscriberClient(
                    context: context, listName: list, listIndex: index, serial: serial, isFull: k < full)
                serial += 1
                // Every list gets subscribers on every endpoint (a plain `serial % n`
                // would put all of a list's on one when n divides the list count).
                subscriber.endpointIndex = (k + index) % context.targets.count
                subscriber.onRecovered = { [weak self] viaDiff, ns in self?.stormResults.append((viaDiff, ns)) }
                subscribers.append(subscriber)
                context.enqueueConnect(subscriber)
            }
        }
    }

    var subscribersSettled: Bool { subscribers.allSatisfy { $0.hasPosition || $0.isClosed } }

    func connectWriters() {
        let c = configuration
        context.intendedTimes = Array(repeating: [], count: c.writers)
        context.writerEndpoints = (0..<c.writers).map { $0 % context.targets.count }
        for w in 0..<c.writers {
            let generators = c.lists(ofWriter: w).map { l -> (list: String, generator: OperationGenerator) in
                let writersOfList = c.writers(ofList: l)
                let position = writersOfList.firstIndex(of: w) ?? 0
                let owned = OperationGenerator.initialOwnership(
                    rows: c.initialRows, sections: c.sectionsPerList, writers: writersOfList.count, writer: position)
                let generator = OperationGenerator(
                    writerID: "w\(w)", sharedSections: OperationGenerator.sharedSectionIDs(c.sectionsPerList),
                    ownedRows: owned, mix: c.mix, payloadBytes: c.payloadBytes, seed: c.seed &+ UInt64(l) &* 1_000_003)
                return (listNames[l], generator)
            }
            let writer = WriterClient(context: context, index: w, generators: generators)
            writer.endpointIndex = context.writerEndpoints[w]
            context.writerIndex[writer.clientID] = w
            writers.append(writer)
            context.enqueueConnect(writer)
        }
    }

    var writersSettled: Bool { writers.allSatisfy { $0.isReady || $0.isClosed } }

    // MARK: Running

    /// Starts the writers' schedule and the 1 ms send tick and the 1 s progress line.
    func startWriters() {
        let c = configuration
        writersStarted = true
        let now = MonotonicClock.nanoseconds()
        let interval: UInt64 = c.rate > 0 ? UInt64(Double(c.writers) / c.rate * 1e9) : 0
        for (w, writer) in writers.enumerated() {
            let offset = c.writers > 0 ? interval / UInt64(c.writers) * UInt64(w) : 0
            writer.start(at: now + offset, interval: interval)
        }
        let tick = LoopTimer(loop: context.loop)
        tick.start(after: 1, repeat: 1) { [weak self] in
            guard let self else { return }
            let now = MonotonicClock.nanoseconds()
            for writer in self.writers { writer.pump(now: now) }
        }
        self.tick = tick
        let progress = LoopTimer(loop: context.loop)
        progress.start(after: 1_000, repeat: 1_000) { [weak self] in self?.printProgress() }
        progressTimer = progress
    }

    func stopWriters() {
        for writer in writers { writer.stop() }
        tick?.close()
        tick = nil
        sampleTimer?.close()
        sampleTimer = nil
    }

    /// Samples the run every second from now until the writers stop (the HTML report's
    /// charts over the run).
    private func startSampling() {
        guard sampleTimer == nil else { return }
        metrics.timeline = TimelineSampler(start: MonotonicClock.nanoseconds())
        let timer = LoopTimer(loop: context.loop)
        timer.start(after: 1_000, repeat: 1_000) { [weak self] in
            guard let self else { return }
            let m = self.metrics
            let phase: TimelineSample.Phase =
                m.measuring ? .measure : !self.writersStarted ? .connect : m.windowStart == 0 ? .warmUp : .drain
            // O(connections) once a second: 20,000 flags, far below a millisecond.
            m.timeline?.sample(
                now: MonotonicClock.nanoseconds(), phase: phase, metrics: m,
                subscribers: self.subscribers.count { $0.isReady }, writers: self.writers.count { $0.isReady })
        }
        sampleTimer = timer
    }

    var answersOutstanding: Int { metrics.totalSent - metrics.totalAnswered }

    /// The progress line (stderr): rates over the last second, p99s so far, schedule
    /// slip ("lag": how far the open-loop schedule is behind), subscribers connected.
    private func printProgress() {
        guard progressEnabled else { return }
        let m = metrics
        let now = MonotonicClock.nanoseconds()
        let current = (
            at: now, sent: m.totalSent, acked: m.totalAnswered, frames: m.batchDeliveries, rows: m.rowChangesDelivered
        )
        defer { lastProgress = current }
        guard let last = lastProgress else { return }
        let dt = Double(now - last.at) / 1e9
        let frames = current.frames >= last.frames ? current.frames - last.frames : current.frames
        let rows = current.rows >= last.rows ? current.rows - last.rows : current.rows
        let slip = writers.map { $0.slip(now: now) }.max() ?? 0
        let open = subscribers.filter(\.isReady).count
        let phase = m.measuring ? "measure" : (m.windowStart == 0 ? "warm-up" : "drain")
        let line =
            "[\(phase)] sent \(LoadReport.number(Double(current.sent - last.sent) / dt))/s, answered \(LoadReport.number(Double(current.acked - last.acked) / dt))/s, deliveries \(LoadReport.number(Double(frames) / dt))/s, row changes \(LoadReport.number(Double(rows) / dt))/s, p99 write→delivery \(LoadReport.fixed(m.writeToDelivery.microseconds(atPercentile: 99) / 1000, 2)) ms, p99 write→ack \(LoadReport.fixed(m.writeToAck.microseconds(atPercentile: 99) / 1000, 2)) ms, lag \(LoadReport.fixed(Double(slip) / 1e6, 1)) ms, in flight \(answersOutstanding), subscribers \(open)/\(subscribers.count)\n"
        line.utf8CString.withUnsafeBufferPointer { _ = write(2, $0.baseAddress, $0.count - 1) }
    }

    // MARK: Injected events

    /// Drops the first `count` subscribers and reconnects each with resume.
    func resumeStorm(count: Int) {
        let victims = subscribers.prefix(count).filter(\.isReady)
        stormDropped = victims.count
        for subscriber in victims { subscriber.dropAndResume() }
    }

    /// Makes the last `count` subscribers stop reading for a while, periodically.
    func startSlowConsumers(count: Int) {
        guard count > 0 else { return }
        let c = configuration
        slowSet = Array(subscribers.suffix(count))
        if c.slowReceiveBufferBytes > 0 {
            for s in slowSet { s.receiveBufferBytes = c.slowReceiveBufferBytes }
        }
        let pause = LoopTimer(loop: context.loop)
        let resume = LoopTimer(loop: context.loop)
        pause.start(after: 1, repeat: UInt64(c.slowPeriodMilliseconds)) { [weak self] in
            guard let self else { return }
            for s in self.slowSet { s.pauseReading() }
            resume.start(after: UInt64(c.slowPauseMilliseconds)) { [weak self] in
                for s in self?.slowSet ?? [] { s.resumeReading() }
            }
        }
        slowTimer = pause
        slowResumeTimer = resume
    }

    func stopSlowConsumers() {
        slowTimer?.close()
        slowResumeTimer?.close()
        slowTimer = nil
        slowResumeTimer = nil
        for s in slowSet { s.resumeReading() }
    }

    // MARK: End

    func closeAll() {
        context.shuttingDown = true
        stopWriters()
        stopSlowConsumers()
        progressTimer?.close()
        progressTimer = nil
        sampleTimer?.close()
        sampleTimer = nil
        for s in subscribers { s.close() }
        for w in writers { w.close() }
        control?.close()
    }
}
