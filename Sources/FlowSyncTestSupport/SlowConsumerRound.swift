import FlowSyncCore
import FlowSyncLoop
import FlowSyncProcess
import FlowSyncProtocol
import Foundation

/// One round of issue #33's slow-consumer case against a running `flowsyncd` process:
/// a writer replaces large rows of one list as fast as it can while, among the list's
/// subscribers, some read everything, some stop reading for a while (with a small
/// socket receive buffer) and some never read at all. The daemon's RSS is sampled
/// throughout: the watermarks must bound it every time, and it must come back down once
/// the round's clients are gone.
///
/// Shared by the in-suite test (`SlowConsumerMemoryTests`, a few harsh rounds) and the
/// soak (`flowsync-server-bench --slow-consumer-soak`, 20 rounds and more), so both run
/// the same case.
public enum SlowConsumerRound {
    public struct Parameters: Sendable {
        /// Rows in the list, each replaced over and over.
        public var rows = 64
        /// Bytes per row payload (random: deflate cannot shrink them).
        public var rowBytes = 16_384
        /// Subscribers that read everything.
        public var fastSubscribers = 1
        /// Subscribers that stop reading for ``pause`` and then read again.
        public var pausedSubscribers = 2
        /// Subscribers that never read (not even their snapshot).
        public var deadSubscribers = 2
        /// `SO_RCVBUF` of the paused and dead subscribers.
        public var receiveBufferBytes = 4_096
        /// How long the paused subscribers stop reading, seconds.
        public var pause = 4.0
        /// How long the writer writes, seconds (from the start of the pause).
        public var writing = 5.0
        /// Mutations the writer keeps unanswered.
        public var writeWindow = 16
        /// At most this many writes a round (`nil`: as many as ``writing`` allows). A
        /// cap keeps a round's CPU small where it shares the machine with other tests;
        /// the pause and the catch-up are the same once the paused subscribers' queues
        /// passed the high watermark and the history.
        public var maxWrites: Int? = nil
        /// RSS sampling interval, milliseconds.
        public var sampleMilliseconds = 10

        public init() {}
    }

    /// What one round measured.
    public struct Figures: Sendable {
        /// Daemon RSS before the writer started (list and subscribers in place), KiB.
        public var baselineKiB = 0
        /// Highest RSS sampled while the round ran (the daemon's VmHWM after a reset of
        /// it, when the kernel allows, else the highest sample), KiB.
        public var peakKiB = 0
        /// RSS once the round's subscribers were closed and the daemon had a moment, KiB.
        public var afterKiB = 0
        /// Batches the writer had acknowledged.
        public var batches = 0
        /// Snapshots each paused subscriber received after its first (catch-ups).
        public var catchUpSnapshots: [Int] = []
        /// The reasons of the paused subscribers' catch-up snapshots.
        public var catchUpReasons: [Snapshot.Reason] = []
        /// Whether a paused subscriber got Diffs between two catch-up snapshots.
        public var diffsBetweenSnapshots = false
        /// Diffs each paused subscriber received.
        public var pausedDiffs: [Int] = []
        /// Bytes each paused subscriber received, and whether its connection ended.
        public var pausedBytes: [Int] = []
        public var pausedClosed: [Bool] = []
        /// Diffs the fast subscriber received.
        public var fastDiffs = 0
        /// Error codes sent to the paused and fast subscribers (none expected).
        public var errors: [ErrorCode] = []
        /// Seconds the round took.
        public var seconds = 0.0
        /// Seconds from the writer's end until the paused subscribers were at its last
        /// version (and quiet for half a second).
        public var catchUpSeconds = 0.0

        public var peakRiseMiB: Double { Double(peakKiB - baselineKiB) / 1024 }
        public var afterRiseMiB: Double { Double(afterKiB - baselineKiB) / 1024 }

        public init() {}
    }

    /// The daemon a round runs against: its port, and its process for `/proc`.
    public struct Target: Sendable {
        public var port: Int
        public var pid: Int32

        public init(port: Int, pid: Int32) {
            self.port = port
            self.pid = pid
        }

        func sample() -> ProcessSample? { ProcessSample.read(pid: String(pid)) }
    }

    /// Runs one round on `list` (a fresh name) of `daemon`, whose client side runs on
    /// `thread`. Never blocks a thread: every wait is an `await`.
    public static func run(
        daemon: DaemonProcess, thread: EventLoopThread, list: String, parameters p: Parameters, seed: UInt64
    ) async throws -> Figures {
        try await run(
            daemon: Target(port: daemon.port, pid: daemon.pid), thread: thread, list: list, parameters: p, seed: seed)
    }

    /// Runs one round against a daemon started elsewhere (under a profiler, say).
    public static func run(
        daemon: Target, thread: EventLoopThread, list: String, parameters p: Parameters, seed: UInt64
    ) async throws -> Figures {
        let began = ContinuousClock.now
        let writer = try await TestClient.connect(port: daemon.port, on: thread, clientID: "writer-\(list)")
        let state = WriterState(seed: seed)
        if let problem = await makeList(writer, list, p, state) {
            writer.close()
            throw CrashTestError(problem)
        }
        let subscribers: Subscribers
        do {
            subscribers = try await connect(daemon: daemon, thread: thread, list: list, p)
        } catch {
            writer.close()
            throw error
        }
        let all = subscribers.fast + subscribers.paused + subscribers.dead
        var figures = Figures()
        let problem = await measure(daemon, thread, writer, list, p, state, subscribers, &figures)
        for s in all { s.close() }
        writer.close()
        if let problem { throw CrashTestError(problem) }
        // Memory given back: the round's connections are gone; the list stays (it is
        // stored) with its history.
        try? await Task.sleep(for: .milliseconds(1_500))
        figures.afterKiB = daemon.sample()?.rssKiB ?? 0
        figures.seconds = seconds(began.duration(to: .now))
        return figures
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// The writer's sequence numbers and random payloads, across the round's steps.
    final class WriterState: @unchecked Sendable {
        var random: SeededRandom
        var seq: UInt64 = 1
        /// The newest version an Ack named.
        var lastCommitted: ListVersion?
        init(seed: UInt64) { random = SeededRandom(seed: seed) }

        func acknowledged(_ message: Message?) {
            guard case .ack(let ack)? = message else { return }
            if lastCommitted.map({ $0.version < ack.committed.version }) ?? true { lastCommitted = ack.committed }
        }

        func nextSeq() -> UInt64 {
            defer { seq += 1 }
            return seq
        }
    }

    struct Subscribers {
        var fast: [LeanSubscriber] = []
        var paused: [LeanSubscriber] = []
        var dead: [LeanSubscriber] = []
    }

    /// The list: one section of `rows` rows, written in chunks small enough for the
    /// default frame limit. Returns the problem, if any.
    private static func makeList(
        _ writer: TestClient, _ list: String, _ p: Parameters, _ state: WriterState
    ) async -> String? {
        guard await commit(writer, list, state.nextSeq(), [.insertSections([Section(id: "s")], at: 0)]) else {
            return "the list could not be created"
        }
        let perChunk = max(1, 512 * 1024 / p.rowBytes)
        for start in stride(from: 0, to: p.rows, by: perChunk) {
            let rows = (start..<min(start + perChunk, p.rows)).map {
                Row(id: "r\($0)", kind: "blob", payload: payload(&state.random, p.rowBytes))
            }
            guard await commit(writer, list, state.nextSeq(), [.insertRows(rows, in: .id("s"), at: start)]) else {
                return "rows could not be inserted"
            }
        }
        return nil
    }

    private static func connect(
        daemon: Target, thread: EventLoopThread, list: String, _ p: Parameters
    ) async throws -> Subscribers {
        var subscribers = Subscribers()
        for k in 0..<p.fastSubscribers {
            subscribers.fast.append(
                try await LeanSubscriber.connect(port: daemon.port, on: thread, list: list, clientID: "fast-\(k)"))
        }
        for k in 0..<p.pausedSubscribers {
            subscribers.paused.append(
                try await LeanSubscriber.connect(
                    port: daemon.port, on: thread, list: list, clientID: "paused-\(k)",
                    receiveBufferBytes: p.receiveBufferBytes,
                    tracksPosition: true))
        }
        for k in 0..<p.deadSubscribers {
            subscribers.dead.append(
                try await LeanSubscriber.connect(
                    port: daemon.port, on: thread, list: list, clientID: "dead-\(k)",
                    receiveBufferBytes: p.receiveBufferBytes,
                    reading: false))
        }
        return subscribers
    }

    /// The round itself, from the baseline to the paused subscribers' catch-up.
    /// Returns the problem, if any.
    private static func measure(
        _ daemon: Target, _ thread: EventLoopThread, _ writer: TestClient, _ list: String, _ p: Parameters,
        _ state: WriterState, _ subscribers: Subscribers, _ figures: inout Figures
    ) async -> String? {
        let readers = subscribers.fast + subscribers.paused
        debugLog("connected")
        guard await eventually(timeout: 60, { readers.allSatisfy { $0.current.snapshots.count == 1 } }) else {
            return "the subscribers did not get their snapshots"
        }
        // Let the dead subscribers' snapshots settle in the daemon's queues first.
        try? await Task.sleep(for: .milliseconds(300))
        figures.baselineKiB = daemon.sample()?.rssKiB ?? 0
        let peakWasReset = resetPeak(of: daemon)
        let peak = Shared(figures.baselineKiB)
        let sampling = Shared(true)
        let interval = p.sampleMilliseconds
        let sampler = Task {
            while sampling.get() {
                if let rss = daemon.sample()?.rssKiB { peak.update { $0 = max($0, rss) } }
                try? await Task.sleep(for: .milliseconds(interval))
            }
        }
        debugLog("baseline \(figures.baselineKiB)")
        let written = await write(writer, list, p, state, paused: subscribers.paused)
        debugLog("written \(written) paused \(subscribers.paused.map { ($0.current.bytes, $0.current.frames) })")
        // The paused subscribers catch up: each reaches the last acknowledged version
        // (through a catch-up and the Diffs after it), and nothing more arrives for half a
        // second. Not only silence: a catch-up built on a worker can keep a subscriber
        // silent for seconds while the daemon's memory is at its highest.
        let final = state.lastCommitted
        let writingEnded = ContinuousClock.now
        let reached = await eventually(timeout: 60) {
            let now = MonotonicClock.nanoseconds()
            return subscribers.paused.allSatisfy {
                let t = $0.current
                return now > t.lastReceivedAt + 500_000_000
                    && (final.map { f in t.position.map { $0.version >= f.version } ?? false } ?? true)
            }
        }
        figures.catchUpSeconds = seconds(writingEnded.duration(to: .now))
        if !reached, case .success = written {
            sampling.set(false)
            await sampler.value
            return "the paused subscribers did not reach version \(final.map { "\($0.version)" } ?? "?") within 60 s: "
                + "\(subscribers.paused.map { $0.current.position.map { "\($0.version)" } ?? "nil" })"
        }
        debugLog("caught up paused \(subscribers.paused.map { ($0.current.bytes, $0.current.frames) })")
        sampling.set(false)
        await sampler.value
        let hwm = daemon.sample()?.peakRSSKiB ?? 0
        figures.peakKiB = max(peak.get(), peakWasReset ? hwm : 0)
        switch written {
        case .failure(let problem): return problem.description
        case .success(let batches): figures.batches = batches
        }
        for s in subscribers.paused {
            let t = s.current
            figures.catchUpSnapshots.append(t.snapshots.count - 1)
            figures.catchUpReasons += t.snapshots.dropFirst().map(\.reason)
            figures.pausedDiffs.append(t.diffs)
            figures.pausedBytes.append(t.bytes)
            figures.pausedClosed.append(t.closed)
            figures.diffsBetweenSnapshots = figures.diffsBetweenSnapshots || t.diffsBetweenSnapshots
            figures.errors += t.errors
        }
        for s in subscribers.fast {
            figures.errors += s.current.errors
            figures.fastDiffs += s.current.diffs
        }
        return nil
    }

    /// The writer replaces rows, `writeWindow` writes unanswered, for `writing` seconds;
    /// the paused subscribers stop reading at its start and read again after `pause`.
    /// Returns the writes acknowledged.
    private static func write(
        _ writer: TestClient, _ list: String, _ p: Parameters, _ state: WriterState, paused: [LeanSubscriber]
    ) async -> Result<Int, CrashTestError> {
        for s in paused { s.pauseReading() }
        let writeStart = ContinuousClock.now
        var resumed = false
        var pending: [UInt64] = []
        var next = 0
        var acknowledged = 0
        while writeStart.duration(to: .now) < .seconds(p.writing) {
            if !resumed, writeStart.duration(to: .now) >= .seconds(p.pause) {
                debugLog("resuming; paused \(paused.map { ($0.current.bytes, $0.current.frames) })")
                for s in paused { s.resumeReading() }
                resumed = true
            }
            if let cap = p.maxWrites, next >= cap {
                // Every write sent: wait for the answers, then only for the pause to end.
                if pending.isEmpty {
                    try? await Task.sleep(for: .milliseconds(20))
                    continue
                }
            }
            while pending.count < p.writeWindow, next < (p.maxWrites ?? Int.max) {
                let row = Row(id: "r\(next % p.rows)", kind: "blob", payload: payload(&state.random, p.rowBytes))
                let seq = state.nextSeq()
                writer.send(
                    .mutate(
                        Mutate(
                            listName: list, clientID: writer.clientID, seq: seq,
                            base: ListVersion(epoch: 0, version: 0),
                            operations: [.replaceRow(.id(row.id), with: row)])))
                pending.append(seq)
                next += 1
            }
            // Wait for the oldest answer (an Ack: a Reject would be a bug here).
            let oldest = pending[0]
            guard await writer.waitFor(timeout: 30, { answers($0, oldest) }) != nil else {
                if !resumed { for s in paused { s.resumeReading() } }
                return .failure(CrashTestError("no answer to write \(oldest)"))
            }
            for message in writer.drain() {
                if case .ack(let ack) = message {
                    state.acknowledged(message)
                    pending.removeAll { $0 == ack.seq }
                    acknowledged += 1
                } else if case .reject(let reject) = message {
                    if !resumed { for s in paused { s.resumeReading() } }
                    return .failure(CrashTestError("write \(reject.seq) rejected: \(reject.code) \(reject.message)"))
                }
            }
        }
        if !resumed { for s in paused { s.resumeReading() } }
        for oldest in pending {
            guard let answer = await writer.waitFor(timeout: 30, { answers($0, oldest) }) else {
                return .failure(CrashTestError("no answer to write \(oldest)"))
            }
            state.acknowledged(answer)
        }
        return .success(acknowledged + pending.count)
    }

    static func debugLog(_ text: String) {
        if ProcessInfo.processInfo.environment["FLOWSYNC_ROUND_DEBUG"] != nil {
            FileHandle.standardError.write(Data("[\(Date())] \(text)\n".utf8))
        }
    }

    private static func answers(_ message: Message, _ seq: UInt64) -> Bool {
        if case .ack(let ack) = message { return ack.seq == seq }
        if case .reject(let reject) = message { return reject.seq == seq }
        return false
    }

    private static func commit(
        _ writer: TestClient, _ list: String, _ mine: UInt64, _ ops: [FlowSyncCore.Operation]
    ) async -> Bool {
        writer.send(
            .mutate(
                Mutate(
                    listName: list, clientID: writer.clientID, seq: mine, base: ListVersion(epoch: 0, version: 0),
                    operations: ops)))
        let reply = await writer.waitFor(timeout: 30) { answers($0, mine) }
        _ = writer.drain()
        if case .ack? = reply { return true }
        return false
    }

    private static func payload(_ random: inout SeededRandom, _ count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var k = 0
        while k < count {
            var word = random.next()
            for _ in 0..<8 where k < count {
                bytes[k] = UInt8(truncatingIfNeeded: word)
                word >>= 8
                k += 1
            }
        }
        return bytes
    }

    /// Resets the daemon's `VmHWM` to its current RSS (writing 5 to `clear_refs`), so the
    /// peak read at the end is this round's; `false` when the kernel did not allow it
    /// (then only the samples count).
    private static func resetPeak(of daemon: Target) -> Bool {
        guard let handle = FileHandle(forWritingAtPath: "/proc/\(daemon.pid)/clear_refs") else { return false }
        defer { try? handle.close() }
        return (try? handle.write(contentsOf: Data("5".utf8))) != nil
    }
}
