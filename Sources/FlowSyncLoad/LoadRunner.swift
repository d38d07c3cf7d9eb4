import FlowSyncCore
import FlowSyncLoop
import FlowSyncProcess
import FlowSyncProtocol
import Foundation

/// Runs one load test from start to end and returns its report:
///
/// 1. start the daemon (`--spawn`) or reach the given one;
/// 2. create the lists (sections and initial rows) through a control connection;
/// 3. connect the subscribers (each gets its Snapshot), then the writers;
/// 4. write for the warm-up, then for the measured time (injecting the resume storm or
///    the slow consumers), printing a progress line every second;
/// 5. stop the writers and wait for every answer (a missing one is a *lost ack*);
/// 6. ask the daemon for each list's version and digest, wait for every subscriber to
///    reach that version, and count **divergences** (position or digest differs, or a
///    problem was found on the way); compare a sample of full replicas row by row with
///    a fresh Snapshot;
/// 7. close everything and stop the daemon (also when a step throws).
///
/// The runner's own thread only waits; all clients live on one ``EventLoopThread``.
public final class LoadRunner {
    private let configuration: LoadConfiguration
    private let scenario: String?
    private let progress: Bool

    /// A runner for `configuration`; `scenario` only labels the box.report.
    public init(configuration: LoadConfiguration, scenario: String?, progress: Bool = true) {
        self.configuration = configuration
        self.scenario = scenario
        self.progress = progress
    }

    private struct Unchecked<T>: @unchecked Sendable { var value: T }
    private final class Slot<T>: @unchecked Sendable {
        var value: T?
        init() {}
    }

    /// Runs `body` on the loop thread and waits for its result.
    private func onLoop<T>(_ loop: EventLoop, _ body: @escaping () -> T) -> T {
        let slot = Slot<T>()
        let semaphore = DispatchSemaphore(value: 0)
        let job = Unchecked(value: body)
        let accepted = loop.execute {
            slot.value = job.value()
            semaphore.signal()
        }
        precondition(accepted, "Internal inconsistency in LoadRunner: the load loop stopped early")
        semaphore.wait()
        return slot.value!
    }

    /// Polls `condition` on the loop every 20 ms until it holds or `timeout` seconds pass.
    @discardableResult
    private func wait(_ loop: EventLoop, timeout: Double, _ condition: @escaping () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if onLoop(loop, condition) { return true }
            usleep(20_000)
        }
        return onLoop(loop, condition)
    }

    private func note(_ text: String) {
        if progress { FileHandle.standardError.write(Data(("flowsync-load: " + text + "\n").utf8)) }
    }

    /// Starts the daemon for `--spawn`: a temporary data directory and config, metrics on
    /// port 0, a connection limit above this machine's fd limit (so the fd limit is what
    /// binds), and stopped by the kernel if the load tester dies without stopping it.
    static func spawnDaemon(
        _ c: LoadConfiguration, tls: (certificate: String, key: String)? = nil
    ) throws -> DaemonProcess {
        // heartbeat_ms = 0: the lean load clients never ping, and a subscriber that only
        // reads would be closed as silent after twice the default interval (40 s).
        var toml = "# Written by flowsync-load --spawn.\n[limits]\nmax_connections = 1000000\nheartbeat_ms = 0\n"
        if let tls {
            // The pre-auth cap follows the load: every client may be in its handshake at once.
            toml += "[tls]\nmode = \"required\"\ncertificate_file = \"\(tls.certificate)\"\nkey_file = \"\(tls.key)\"\n"
        }
        if c.daemonStorage != nil || c.daemonFsync != nil {
            toml += "[storage]\n"
            if let storage = c.daemonStorage { toml += "engine = \"\(storage)\"\n" }
            if let fsync = c.daemonFsync { toml += "fsync = \"\(fsync)\"\n" }
        }
        if c.daemonWritePath != nil || c.daemonFlushSliceMicroseconds != nil || c.daemonSealWaitMicroseconds != nil {
            toml += "[server]\n"
            if let writePath = c.daemonWritePath { toml += "write_path = \"\(writePath)\"\n" }
            if let slice = c.daemonFlushSliceMicroseconds { toml += "flush_slice_us = \(slice)\n" }
            if let wait = c.daemonSealWaitMicroseconds { toml += "seal_wait_us = \(wait)\n" }
        }
        var options = DaemonProcess.Options(binary: c.daemonPath)
        options.configText = toml
        options.metrics = true
        options.stopsWithParent = true
        options.startTimeout = .seconds(20)
        do {
            return try DaemonProcess.startBlocking(options)
        } catch {
            throw LoadError("the daemon did not start: \(error)")
        }
    }

    /// Runs the test. - Throws: ``LoadError`` when the run cannot start or set up.
    public func run() throws -> LoadReport {
        let c = configuration
        let box = ReportBox(LoadReport(configuration: c))
        box.report.scenario = scenario
        box.report.startedAt = ISO8601DateFormatter().string(from: Date())
        var daemon: DaemonProcess?
        // TLS: the spawned daemon's pair (given, or made for this run) and what clients trust.
        let tlsFiles = try c.tls.map { try LoadTLSFiles.prepare($0, spawn: c.spawn) }
        defer { tlsFiles?.removeTemporary() }
        if c.spawn {
            daemon = try Self.spawnDaemon(c, tls: tlsFiles?.daemonPair)
            note(
                "spawned \(c.daemonPath) (pid \(daemon!.pid)) on 127.0.0.1:\(daemon!.port), storage \(c.daemonStorage ?? "default"), fsync \(c.daemonFsync ?? "default")"
            )
        }
        // This runs on a thread of its own (the command's main thread, or a test's load
        // thread), so waiting for the daemon's exit here blocks no cooperative thread.
        defer { daemon?.terminateBlocking() }
        guard let endpoints = c.resolvedEndpoints else {
            throw LoadError("malformed --endpoints: \(c.endpoints ?? [])")
        }
        let targets =
            try daemon.map { [try SocketAddress(host: "127.0.0.1", port: $0.port)] }
            ?? endpoints.map { try SocketAddress(host: $0.host, port: $0.port) }
        let target = targets[0]
        var sources: [SocketAddress] = []
        if c.sourceAddresses > 1 {
            guard targets.allSatisfy({ $0.host.hasPrefix("127.") }) else {
                throw LoadError("--source-addresses needs a loopback daemon address")
            }
            sources = try (1...c.sourceAddresses).map { try SocketAddress(host: "127.0.0.\($0)", port: 0) }
        }
        let thread = try EventLoopThread()
        let loop = thread.loop
        let context = LoadContext(configuration: c, loop: loop, targets: targets, sources: sources)
        if let tlsFiles {
            do {
                context.tls = try tlsFiles.clientContext()
            } catch {
                throw LoadError("TLS: \(error)")
            }
            context.serverName = c.tls?.serverName ?? "localhost"
        }
        let prefix = "load-\(String(UInt32.random(in: 0...UInt32.max), radix: 16))-"
        let engine = LoadEngine(context: context, listPrefix: prefix)
        engine.progressEnabled = progress
        defer {
            onLoop(loop) { engine.closeAll() }
            usleep(100_000)
            thread.shutdown()
        }

        // Control connection and lists.
        onLoop(loop) { engine.connectControl() }
        guard wait(loop, timeout: 10, { engine.controlReady || engine.control.isClosed }),
            onLoop(loop, { engine.controlReady })
        else {
            let why = onLoop(loop) {
                (engine.metrics.connectionFailureExamples + engine.metrics.protocolErrorExamples).joined(
                    separator: "; ")
            }
            throw LoadError("cannot reach the daemon at \(target): \(why.isEmpty ? "no Welcome within 10 s" : why)")
        }
        onLoop(loop) { engine.setUpLists() }
        guard wait(loop, timeout: 60 + Double(c.lists) / 20, { engine.setupPending == 0 }) else {
            throw LoadError("list setup did not finish")
        }
        let setupFailures = onLoop(loop) { engine.setupFailures }
        guard setupFailures.isEmpty else {
            throw LoadError("list setup rejected: \(setupFailures.prefix(3).joined(separator: "; "))")
        }
        note("\(c.lists) list(s) set up with \(c.initialRows) rows each (\(prefix)*)")

        // Subscribers, then writers.
        usleep(300_000)
        let rssBefore = daemon?.sample()?.rssKiB
        let connectStart = Date()
        onLoop(loop) { engine.connectSubscribers() }
        wait(loop, timeout: 60 + Double(c.subscriberCount) / 100) { engine.subscribersSettled }
        let subscribed = onLoop(loop) { engine.subscribers.filter(\.hasPosition).count }
        note(
            "\(subscribed)/\(c.subscriberCount) subscribers have their snapshot (\(String(format: "%.1f", Date().timeIntervalSince(connectStart))) s)"
        )
        usleep(500_000)
        if let rssBefore, let after = daemon?.sample()?.rssKiB {
            box.report.daemon.rssBeforeSubscribersKiB = rssBefore
            box.report.daemon.rssAfterSubscribersKiB = after
            if subscribed > 0 {
                box.report.daemon.bytesPerConnection = Double(after - rssBefore) * 1024 / Double(subscribed)
            }
        }
        onLoop(loop) { engine.connectWriters() }
        wait(loop, timeout: 30) { engine.writersSettled }

        // Warm-up, then the measured window.
        onLoop(loop) { engine.startWriters() }
        sleep(until: MonotonicClock.nanoseconds() + UInt64(c.warmup * 1e9))
        let windowStart = onLoop(loop) { () -> UInt64 in
            let now = MonotonicClock.nanoseconds()
            engine.metrics.startWindow(at: now)
            return now
        }
        let counters0 = serverCounters(loop, engine)
        let daemon0 = daemon?.sample()
        let self0 = ProcessSample.read(pid: "self")
        if c.slowConsumers > 0 { onLoop(loop) { engine.startSlowConsumers(count: c.slowConsumers) } }
        if c.resumeStormSubscribers > 0 {
            sleep(until: windowStart + UInt64(c.duration / 2 * 1e9))
            note("resume storm: dropping \(c.resumeStormSubscribers) subscribers")
            onLoop(loop) { engine.resumeStorm(count: c.resumeStormSubscribers) }
        }
        // The window, cut short when the daemon goes away (its control connection ends):
        // nothing more can be measured, and the report should say so now, not later.
        let windowEndsAt = windowStart + UInt64(c.duration * 1e9)
        let remaining = Double(windowEndsAt &- min(windowEndsAt, MonotonicClock.nanoseconds())) / 1e9
        if wait(loop, timeout: remaining, { engine.control.isClosed }) {
            note("the daemon closed the control connection: the measured window ends early")
        }
        if c.untilSubscribersClosed > 0 {
            // Driven by the event, not the clock: on a loaded machine the writers may need
            // longer to fill a paused subscriber's socket past the daemon's limits.
            let target = c.untilSubscribersClosed
            if !wait(loop, timeout: c.eventWaitSeconds, { engine.metrics.unexpectedDisconnects >= target }) {
                note("the daemon closed fewer than \(target) subscribers within \(Int(c.eventWaitSeconds)) s more")
            }
        }
        let windowEnd = onLoop(loop) { () -> UInt64 in
            engine.metrics.measuring = false
            return MonotonicClock.nanoseconds()
        }
        let daemon1 = daemon?.sample()
        let self1 = ProcessSample.read(pid: "self")
        let counters1 = serverCounters(loop, engine)
        onLoop(loop) {
            engine.stopWriters()
            engine.stopSlowConsumers()
        }
        // Every answer, unless no writer is left to receive one (the daemon went away).
        wait(loop, timeout: 15) { engine.answersOutstanding == 0 || engine.writers.allSatisfy(\.isClosed) }
        // Every subscriber the daemon closed is back (each reconnects after a 1 s backoff)
        // before the final checks, so "closed" and "reconnected" describe one finished
        // story rather than a race with the backoff timer.
        wait(loop, timeout: c.eventWaitSeconds) {
            engine.metrics.reconnectsAfterDisconnect >= engine.metrics.unexpectedDisconnects || engine.control.isClosed
        }
        let seconds = Double(windowEnd - windowStart) / 1e9
        box.report.measuredSeconds = seconds

        // Figures of the window.
        onLoop(loop) { self.fill(&box.report, engine.metrics, seconds: seconds) }
        if targets.count > 1 {
            onLoop(loop) {
                box.report.endpoints = targets.indices.map { e in
                    let subscribers = engine.subscribers.filter { $0.endpointIndex == e }
                    let writers = engine.writers.filter { $0.endpointIndex == e }
                    return LoadReport.EndpointLoad(
                        endpoint: "\(targets[e])", subscribers: subscribers.count, writers: writers.count,
                        readyAtWindowEnd: (subscribers.filter(\.isReady).count + writers.filter(\.isReady).count))
                }
                box.report.latency.crossEndpointDelivery = engine.metrics.crossEndpointDelivery.summary
                box.report.latency.sameEndpointDelivery = engine.metrics.sameEndpointDelivery.summary
            }
        }
        for key in counters1.keys.sorted()
        where [
            "batches", "mutations.committed", "mutations.rejected", "subscribers.paused", "catchup.diffs",
            "catchup.snapshots", "frames.sent", "bytes.sent",
        ].contains(key) {
            box.report.daemon.counters[key] = counters1[key]! - (counters0[key] ?? 0)
        }
        box.report.deliveries.batches = Int(box.report.daemon.counters["batches"] ?? 0)
        box.report.deliveries.batchesPerSecond = Double(box.report.deliveries.batches) / seconds
        box.report.mutations.committedPerSecond =
            Double(box.report.daemon.counters["mutations.committed"] ?? 0) / seconds
        box.report.daemon.spawned = c.spawn
        if let a = daemon0, let b = daemon1 {
            box.report.daemon.process = .init(
                cpuPercent: ProcessSample.cpuPercent(from: a, to: b), rssKiB: b.rssKiB, peakRSSKiB: b.peakRSSKiB)
        }
        if let a = self0, let b = self1 {
            box.report.loadTool = .init(
                cpuPercent: ProcessSample.cpuPercent(from: a, to: b), rssKiB: b.rssKiB, peakRSSKiB: b.peakRSSKiB)
        }
        box.report.mutations.lostAcks = onLoop(loop) { engine.answersOutstanding }

        verify(box, loop: loop, engine: engine)
        if c.resumeStormSubscribers > 0 {
            onLoop(loop) {
                var storm = LoadReport.ResumeStorm()
                storm.dropped = engine.stormDropped
                let results = engine.stormResults
                storm.resumedWithDiff = results.filter(\.viaDiff).count
                storm.resumedWithSnapshot = results.count - storm.resumedWithDiff
                storm.notRecovered = max(0, engine.stormDropped - results.count)
                let ms = results.map { Double($0.nanoseconds) / 1e6 }.sorted()
                if !ms.isEmpty {
                    storm.recoveryMillisecondsP50 = ms[ms.count / 2]
                    storm.recoveryMillisecondsMax = ms.last!
                }
                box.report.resumeStorm = storm
            }
        }
        // Errors found during verification count too.
        onLoop(loop) {
            let m = engine.metrics
            box.report.connections.closedByDaemon = m.unexpectedDisconnects
            box.report.connections.reconnects = m.reconnects
            box.report.checks.protocolErrors = m.protocolErrors
            box.report.checks.protocolErrorExamples = m.protocolErrorExamples
            box.report.connections.failed = m.connectionsFailed
            box.report.connections.failureExamples = m.connectionFailureExamples
        }
        box.report.judge()
        return box.report
    }

    private func sleep(until deadline: UInt64) {
        while true {
            let now = MonotonicClock.nanoseconds()
            guard deadline > now else { return }
            usleep(UInt32(min(deadline - now, 1_000_000_000) / 1_000))  // ≤ 1 s per call
        }
    }

    /// The daemon's server-wide counters (StatsRequest without a list).
    private func serverCounters(_ loop: EventLoop, _ engine: LoadEngine) -> [String: Int64] {
        let slot = Slot<[String: Int64]>()
        onLoop(loop) { engine.control.stats(list: nil) { slot.value = $0 } }
        wait(loop, timeout: 10) { slot.value != nil || engine.control.isClosed }
        return onLoop(loop) { slot.value ?? [:] }
    }

    private final class ReportBox: @unchecked Sendable {
        var report: LoadReport
        init(_ report: LoadReport) { self.report = report }
    }

    private func fill(_ report: inout LoadReport, _ m: LoadMetrics, seconds: Double) {
        report.connections.subscribers = m.subscribersEstablished
        report.connections.writers = m.writersEstablished
        report.connections.reconnects = m.reconnects
        report.connections.closedByDaemon = m.unexpectedDisconnects
        report.mutations.sent = m.mutationsSent
        report.mutations.acked = m.mutationsAcked
        report.mutations.rejected = m.mutationsRejected
        report.mutations.rejectedByCode = Dictionary(
            uniqueKeysWithValues: m.rejectsByCode.map { (String($0.key), $0.value) })
        report.mutations.rejectExamples = m.rejectExamples
        report.mutations.sentPerSecond = Double(m.mutationsSent) / seconds
        report.mutations.ackedPerSecond = Double(m.mutationsAcked) / seconds
        report.deliveries.frames = m.batchDeliveries
        report.deliveries.framesPerSecond = Double(m.batchDeliveries) / seconds
        report.deliveries.rowChanges = m.rowChangesDelivered
        report.deliveries.rowChangesPerSecond = Double(m.rowChangesDelivered) / seconds
        report.deliveries.catchUpDiffs = m.catchUpDiffs
        report.deliveries.snapshots = m.snapshots
        report.bytes.wire = m.wireBytes
        report.bytes.raw = m.rawBytes
        report.bytes.ratio = m.wireBytes > 0 ? Double(m.rawBytes) / Double(m.wireBytes) : 0
        report.bytes.wirePerSecond = Double(m.wireBytes) / seconds
        report.latency.writeToDelivery = m.writeToDelivery.summary
        report.latency.writeToAck = m.writeToAck.summary
        report.latency.sendToAck = m.sendToAck.summary
        report.latency.writeToDeliveryCurve = m.writeToDelivery.percentileCurve()
        report.latency.writeToAckCurve = m.writeToAck.percentileCurve()
        report.timeline = m.timeline?.samples ?? []
    }

    /// Steps 6 of the run: final positions and digests against the daemon's, then a
    /// row-by-row compare of a sample of replicas with a fresh Snapshot.
    private func verify(_ box: ReportBox, loop: EventLoop, engine: LoadEngine) {
        let c = configuration
        final class Finals: @unchecked Sendable {
            var byList: [String: (ListVersion, UInt64)] = [:]
            var pending = 0
        }
        let finals = Finals()
        onLoop(loop) {
            for list in engine.listNames {
                finals.pending += 1
                engine.control.stats(list: list) { values in
                    finals.pending -= 1
                    if let epoch = values["list.epoch"], let version = values["list.version"],
                        let digest = values["list.digest"]
                    {
                        finals.byList[list] = (
                            ListVersion(epoch: UInt64(bitPattern: epoch), version: UInt64(version)),
                            UInt64(bitPattern: digest)
                        )
                    }
                }
            }
        }
        // A daemon that went away (or stopped answering) fails the run with a report,
        // not an exception: the figures so far are still worth printing.
        guard wait(loop, timeout: 30, { finals.pending == 0 || engine.control.isClosed }),
            onLoop(loop, { finals.pending == 0 })
        else {
            box.report.checks.verificationErrors.append(
                "the daemon did not answer the final StatsRequests: nothing could be verified")
            return
        }
        // Every live subscriber should reach its list's final version.
        wait(loop, timeout: 30) {
            engine.subscribers.allSatisfy { s in
                (s.isClosed && !s.isRecovering) || (finals.byList[s.listName].map { s.position == $0.0 } ?? true)
            }
        }
        onLoop(loop) {
            var divergences = 0
            var examples: [String] = []
            for s in engine.subscribers {
                guard let (position, digest) = finals.byList[s.listName] else { continue }
                var why: String?
                if s.problems > 0 {
                    why = "\(s.problems) problem(s) during the run"
                } else if s.position != position {
                    why =
                        "at \(s.position.map { "\($0)" } ?? "nothing"), the daemon at \(position)\(s.isClosed ? " (connection closed)" : "")"
                } else if s.digest?.rawValue != digest {
                    why = "digest \(s.digest.map { "\($0)" } ?? "none") ≠ daemon's \(StateDigest(rawValue: digest))"
                } else if s.isFull, s.director?.digest.rawValue != digest {
                    why = "replica digest ≠ daemon's"
                }
                if let why {
                    divergences += 1
                    if examples.count < 10 { examples.append("\(s.clientID) (\(s.listName)): \(why)") }
                }
            }
            box.report.checks.lists = engine.listNames.count
            box.report.checks.subscribersChecked = engine.subscribers.count
            box.report.checks.fullReplicas = engine.subscribers.filter(\.isFull).count
            box.report.checks.divergences = divergences
            box.report.checks.divergenceExamples = examples
            let m = engine.metrics
            box.report.checks.gaps = m.gaps
            box.report.checks.digestMismatches = m.digestMismatches
            box.report.checks.applyFailures = m.applyFailures
            box.report.checks.problemExamples = m.problemExamples
        }
        // Full compare on a sample of lists.
        let sample = Array(engine.listNames.prefix(c.fullCompareLists))
        final class Snapshots: @unchecked Sendable { var byList: [String: Snapshot] = [:] }
        let snapshots = Snapshots()
        onLoop(loop) { for list in sample { engine.control.snapshot(list: list) { snapshots.byList[list] = $0 } } }
        wait(loop, timeout: 30) { snapshots.byList.count == sample.count || engine.control.isClosed }
        onLoop(loop) {
            var compared = 0
            var mismatches = 0
            for list in sample {
                guard let snapshot = snapshots.byList[list] else {
                    mismatches += 1
                    continue
                }
                for s in engine.subscribers.filter({ $0.listName == list && $0.isFull }).prefix(c.fullCompareReplicas) {
                    compared += 1
                    if s.position != snapshot.position || s.director?.sections != snapshot.sections
                        || s.director?.digest != snapshot.digest
                    {
                        mismatches += 1
                        if box.report.checks.divergenceExamples.count < 10 {
                            box.report.checks.divergenceExamples.append(
                                "\(s.clientID) (\(list)): replica differs from a fresh Snapshot at \(snapshot.position)"
                            )
                        }
                    }
                }
            }
            box.report.checks.fullCompared = compared
            box.report.checks.fullCompareMismatches = mismatches
        }
    }
}
