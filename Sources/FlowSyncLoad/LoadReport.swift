import Foundation

/// Every figure of one run: what `--json` prints and what the summary table shows.
/// Rates are per second of the measured window.
public struct LoadReport: Codable, Sendable {
    public struct Connections: Codable, Sendable {
        public init() {}
        public var subscribers = 0
        public var writers = 0
        public var failed = 0
        public var failureExamples: [String] = []
        public var reconnects = 0
        /// Subscriber connections the daemon ended during the run (they resumed).
        public var closedByDaemon = 0
    }
    public struct Mutations: Codable, Sendable {
        public init() {}
        public var sent = 0
        public var acked = 0
        public var rejected = 0
        public var rejectedByCode: [String: Int] = [:]
        public var rejectExamples: [String] = []
        /// Mutations sent in the whole run that never got an Ack or a Reject.
        public var lostAcks = 0
        public var sentPerSecond = 0.0
        public var ackedPerSecond = 0.0
        /// Committed mutations per second, from the daemon's own counter.
        public var committedPerSecond = 0.0
    }
    public struct Deliveries: Codable, Sendable {
        public init() {}
        /// Batches the daemon committed in the window (its `batches` counter).
        public var batches = 0
        public var batchesPerSecond = 0.0
        /// Batch Diff frames received, summed over subscribers (frames × subscribers).
        public var frames = 0
        public var framesPerSecond = 0.0
        /// Row changes in those frames (and in catch-ups), summed over subscribers.
        public var rowChanges = 0
        public var rowChangesPerSecond = 0.0
        public var catchUpDiffs = 0
        public var snapshots = 0
    }
    public struct Bytes: Codable, Sendable {
        public init() {}
        /// Snapshot and Diff bytes received by subscribers, as sent (compressed).
        public var wire = 0
        /// The same frames uncompressed.
        public var raw = 0
        public var ratio = 0.0
        public var wirePerSecond = 0.0
    }
    public struct Latency: Codable, Sendable {
        public init() {}
        /// Intended send time → each subscriber decoded the Diff that carries the mutation.
        public var writeToDelivery = LatencySummary.empty
        /// Intended send time → Ack at the writer.
        public var writeToAck = LatencySummary.empty
        /// Actual send time → Ack (service time, without the schedule's slip).
        public var sendToAck = LatencySummary.empty
        /// The window's whole distributions, for percentile plots (``PercentilePoint``);
        /// empty in reports written before they were recorded.
        public var writeToDeliveryCurve: [PercentilePoint] = []
        public var writeToAckCurve: [PercentilePoint] = []
        /// With several endpoints: write → delivery where the writer and the subscriber
        /// were on different endpoints (write on A → delivery on B); `nil` with one.
        public var crossEndpointDelivery: LatencySummary?
        /// With several endpoints: write → delivery with writer and subscriber on the same one.
        public var sameEndpointDelivery: LatencySummary?

        enum CodingKeys: String, CodingKey {
            case writeToDelivery, writeToAck, sendToAck, writeToDeliveryCurve, writeToAckCurve, crossEndpointDelivery,
                sameEndpointDelivery
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            writeToDelivery = try c.decode(LatencySummary.self, forKey: .writeToDelivery)
            writeToAck = try c.decode(LatencySummary.self, forKey: .writeToAck)
            sendToAck = try c.decode(LatencySummary.self, forKey: .sendToAck)
            writeToDeliveryCurve = try c.decodeIfPresent([PercentilePoint].self, forKey: .writeToDeliveryCurve) ?? []
            writeToAckCurve = try c.decodeIfPresent([PercentilePoint].self, forKey: .writeToAckCurve) ?? []
            crossEndpointDelivery = try c.decodeIfPresent(LatencySummary.self, forKey: .crossEndpointDelivery)
            sameEndpointDelivery = try c.decodeIfPresent(LatencySummary.self, forKey: .sameEndpointDelivery)
        }
    }
    /// The clients of one endpoint (``LoadConfiguration/endpoints``).
    public struct EndpointLoad: Codable, Sendable, Hashable {
        /// `host:port`.
        public var endpoint: String
        /// Subscriber connections assigned to it.
        public var subscribers: Int
        /// Writer connections assigned to it.
        public var writers: Int
        /// Of those, the ones connected (after their Welcome) at the end of the window.
        public var readyAtWindowEnd: Int

        public init(endpoint: String, subscribers: Int, writers: Int, readyAtWindowEnd: Int) {
            self.endpoint = endpoint
            self.subscribers = subscribers
            self.writers = writers
            self.readyAtWindowEnd = readyAtWindowEnd
        }
    }
    public struct ProcessFigures: Codable, Sendable {
        public init(cpuPercent: Double = 0, rssKiB: Int = 0, peakRSSKiB: Int = 0) {
            self.cpuPercent = cpuPercent
            self.rssKiB = rssKiB
            self.peakRSSKiB = peakRSSKiB
        }
        public var cpuPercent = 0.0
        public var rssKiB = 0
        public var peakRSSKiB = 0
    }
    public struct Daemon: Codable, Sendable {
        public init() {}
        public var spawned = false
        public var process: ProcessFigures?
        /// RSS before and after the subscribers connected, and the difference per connection.
        public var rssBeforeSubscribersKiB: Int?
        public var rssAfterSubscribersKiB: Int?
        public var bytesPerConnection: Double?
        /// Deltas of the daemon's own counters over the window (StatsRequest).
        public var counters: [String: Int64] = [:]
    }
    public struct ResumeStorm: Codable, Sendable {
        public init() {}
        public var dropped = 0
        public var resumedWithDiff = 0
        public var resumedWithSnapshot = 0
        public var notRecovered = 0
        public var recoveryMillisecondsP50 = 0.0
        public var recoveryMillisecondsMax = 0.0
    }
    public struct Checks: Codable, Sendable {
        public init() {}
        public var lists = 0
        public var subscribersChecked = 0
        public var fullReplicas = 0
        /// Subscribers whose final position or digest differs from the daemon's, or
        /// that found a problem during the run. Must be 0.
        public var divergences = 0
        public var divergenceExamples: [String] = []
        /// Replicas compared row by row with a fresh Snapshot, and how many differed.
        public var fullCompared = 0
        public var fullCompareMismatches = 0
        public var gaps = 0
        public var digestMismatches = 0
        public var applyFailures = 0
        public var problemExamples: [String] = []
        public var protocolErrors = 0
        public var protocolErrorExamples: [String] = []
        /// Why the final check could not be made (the daemon went away, …).
        public var verificationErrors: [String] = []
    }

    public var tool = "flowsync-load"
    public var scenario: String?
    public var configuration: LoadConfiguration
    public var startedAt = ""
    public var measuredSeconds = 0.0
    public var connections = Connections()
    /// Per endpoint, with several (``LoadConfiguration/endpoints``); empty with one.
    public var endpoints: [EndpointLoad] = []
    public var mutations = Mutations()
    public var deliveries = Deliveries()
    public var bytes = Bytes()
    public var latency = Latency()
    public var daemon = Daemon()
    public var loadTool = ProcessFigures()
    public var resumeStorm: ResumeStorm?
    public var checks = Checks()
    /// One sample per second from the first subscriber's connect to the writers' stop
    /// (``TimelineSample``); empty in reports written before it was recorded.
    public var timeline: [TimelineSample] = []
    /// Why the run failed (empty: passed).
    public var failures: [String] = []
    public var passed: Bool { failures.isEmpty }

    public init(configuration: LoadConfiguration) { self.configuration = configuration }

    /// Fills ``failures`` from the figures: divergences, lost acks, protocol errors,
    /// Rejects (the generator never makes an invalid mutation, so a Reject is a bug) and
    /// failed connections.
    public mutating func judge() {
        failures = checks.verificationErrors
        if checks.divergences > 0 { failures.append("\(checks.divergences) divergent subscriber(s)") }
        if checks.fullCompareMismatches > 0 {
            failures.append("\(checks.fullCompareMismatches) replica(s) differ from a fresh snapshot")
        }
        if mutations.lostAcks > 0 { failures.append("\(mutations.lostAcks) mutation(s) never answered") }
        if checks.protocolErrors > 0 { failures.append("\(checks.protocolErrors) protocol error(s)") }
        if mutations.rejected > 0 || !mutations.rejectExamples.isEmpty { failures.append("mutations rejected") }
        if connections.failed > 0 { failures.append("\(connections.failed) connection(s) failed") }
        if let storm = resumeStorm, storm.notRecovered > 0 {
            failures.append("\(storm.notRecovered) subscriber(s) did not recover after the resume storm")
        }
    }

    enum CodingKeys: String, CodingKey {
        case tool, scenario, configuration, startedAt, measuredSeconds, connections, endpoints, mutations, deliveries,
            bytes, latency, daemon, loadTool, resumeStorm, checks, timeline, failures, passed
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(tool, forKey: .tool)
        try c.encodeIfPresent(scenario, forKey: .scenario)
        try c.encode(configuration, forKey: .configuration)
        try c.encode(startedAt, forKey: .startedAt)
        try c.encode(measuredSeconds, forKey: .measuredSeconds)
        try c.encode(connections, forKey: .connections)
        if !endpoints.isEmpty { try c.encode(endpoints, forKey: .endpoints) }
        try c.encode(mutations, forKey: .mutations)
        try c.encode(deliveries, forKey: .deliveries)
        try c.encode(bytes, forKey: .bytes)
        try c.encode(latency, forKey: .latency)
        try c.encode(daemon, forKey: .daemon)
        try c.encode(loadTool, forKey: .loadTool)
        try c.encodeIfPresent(resumeStorm, forKey: .resumeStorm)
        try c.encode(checks, forKey: .checks)
        try c.encode(timeline, forKey: .timeline)
        try c.encode(failures, forKey: .failures)
        try c.encode(passed, forKey: .passed)
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        configuration = try c.decode(LoadConfiguration.self, forKey: .configuration)
        tool = try c.decode(String.self, forKey: .tool)
        scenario = try c.decodeIfPresent(String.self, forKey: .scenario)
        startedAt = try c.decode(String.self, forKey: .startedAt)
        measuredSeconds = try c.decode(Double.self, forKey: .measuredSeconds)
        connections = try c.decode(Connections.self, forKey: .connections)
        endpoints = try c.decodeIfPresent([EndpointLoad].self, forKey: .endpoints) ?? []
        mutations = try c.decode(Mutations.self, forKey: .mutations)
        deliveries = try c.decode(Deliveries.self, forKey: .deliveries)
        bytes = try c.decode(Bytes.self, forKey: .bytes)
        latency = try c.decode(Latency.self, forKey: .latency)
        daemon = try c.decode(Daemon.self, forKey: .daemon)
        loadTool = try c.decode(ProcessFigures.self, forKey: .loadTool)
        resumeStorm = try c.decodeIfPresent(ResumeStorm.self, forKey: .resumeStorm)
        checks = try c.decode(Checks.self, forKey: .checks)
        timeline = try c.decodeIfPresent([TimelineSample].self, forKey: .timeline) ?? []
        failures = try c.decode([String].self, forKey: .failures)
    }

    /// The report as pretty, key-sorted JSON.
    public func json() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        guard let data = try? encoder.encode(self) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    /// The summary table printed at the end of a run.
    public func table() -> String {
        var lines: [String] = []
        func row(_ name: String, _ value: String) {
            lines.append("  " + name.padding(toLength: 38, withPad: " ", startingAt: 0) + value)
        }
        let c = configuration
        lines.append(
            "flowsync-load\(scenario.map { " — scenario \($0)" } ?? ""): \(c.lists) list(s) × \(c.subscribersPerList) subscriber(s), \(c.writers) writer(s), rate \(c.rate == 0 ? "closed loop" : Self.number(c.rate) + "/s"), \(c.maxInFlightPerWriter) in flight, base \(c.writeBase.rawValue), \(c.opsPerMutation) op(s)/mutation, mix \(c.mix), \(c.payloadBytes)-byte payloads"
        )
        let target =
            c.spawn
            ? "spawned daemon (storage \(c.daemonStorage ?? "default"), fsync \(c.daemonFsync ?? "default"))"
            : endpoints.count > 1 ? "\(endpoints.count) endpoints" : "daemon at \(c.host):\(c.port)"
        lines.append(
            "measured \(Self.fixed(measuredSeconds, 1)) s after \(Self.fixed(c.warmup, 1)) s warm-up, seed \(c.seed), \(target)"
        )
        lines.append("")
        row(
            "connections",
            "\(connections.subscribers) subscribers, \(connections.writers) writers, \(connections.failed) failed, \(connections.closedByDaemon) closed by the daemon, \(connections.reconnects) reconnects"
        )
        for e in endpoints {
            row(
                "  on \(e.endpoint)",
                "\(e.subscribers) subscribers, \(e.writers) writers (\(e.readyAtWindowEnd) connected at the window's end)"
            )
        }
        row(
            "mutations",
            "sent \(mutations.sent) (\(Self.number(mutations.sentPerSecond))/s), acked \(mutations.acked) (\(Self.number(mutations.ackedPerSecond))/s), rejected \(mutations.rejected)\(mutations.rejectedByCode.isEmpty ? "" : " " + mutations.rejectedByCode.sorted { $0.key < $1.key }.map { "\($0.key)×\($0.value)" }.joined(separator: " ")), lost acks \(mutations.lostAcks)"
        )
        row(
            "committed (daemon)",
            "\(Self.number(mutations.committedPerSecond)) mutations/s in \(deliveries.batches) batches (\(Self.number(deliveries.batchesPerSecond))/s)"
        )
        row(
            "deliveries (frames × subscribers)",
            "\(deliveries.frames) (\(Self.number(deliveries.framesPerSecond))/s), catch-up diffs \(deliveries.catchUpDiffs), snapshots \(deliveries.snapshots)"
        )
        row("row changes delivered", "\(deliveries.rowChanges) (\(Self.number(deliveries.rowChangesPerSecond))/s)")
        row(
            "bytes received",
            "\(Self.number(Double(bytes.wire))) on the wire, \(Self.number(Double(bytes.raw))) raw, ratio \(Self.fixed(bytes.ratio, 2)), \(Self.number(bytes.wirePerSecond)) B/s"
        )
        lines.append("")
        lines.append(
            "  latency (µs)                           count        p50        p90        p99      p99.9        max")
        var latencies = [("write → delivery (every subscriber)", latency.writeToDelivery)]
        if let cross = latency.crossEndpointDelivery, let same = latency.sameEndpointDelivery {
            latencies += [("  write on A → delivery on B", cross), ("  write and delivery on one endpoint", same)]
        }
        latencies += [("write → ack", latency.writeToAck), ("send → ack (service time)", latency.sendToAck)]
        for (name, s) in latencies {
            lines.append(
                "  " + name.padding(toLength: 38, withPad: " ", startingAt: 0)
                    + [
                        Self.pad(String(s.count), 6), Self.pad(Self.fixed(s.p50, 0), 10),
                        Self.pad(Self.fixed(s.p90, 0), 10), Self.pad(Self.fixed(s.p99, 0), 10),
                        Self.pad(Self.fixed(s.p999, 0), 10), Self.pad(Self.fixed(s.max, 0), 10),
                    ].joined(separator: " "))
        }
        lines.append("")
        if let p = daemon.process {
            row(
                "daemon",
                "CPU \(Self.fixed(p.cpuPercent, 0))% of a core, RSS \(p.rssKiB) KiB (peak \(p.peakRSSKiB) KiB)")
        }
        if let before = daemon.rssBeforeSubscribersKiB, let after = daemon.rssAfterSubscribersKiB {
            row(
                "daemon RSS for subscribers",
                "\(before) → \(after) KiB\(daemon.bytesPerConnection.map { ", \(Self.number($0)) bytes per connection" } ?? "")"
            )
        }
        let counters = ["subscribers.paused", "catchup.diffs", "catchup.snapshots"].compactMap { k in
            daemon.counters[k].map { "\(k) \($0)" }
        }
        if !counters.isEmpty { row("daemon counters (window)", counters.joined(separator: ", ")) }
        row("load tool", "CPU \(Self.fixed(loadTool.cpuPercent, 0))% of a core, RSS \(loadTool.rssKiB) KiB")
        if let storm = resumeStorm {
            row(
                "resume storm",
                "\(storm.dropped) dropped; resumed by Diff \(storm.resumedWithDiff), by Snapshot \(storm.resumedWithSnapshot), not recovered \(storm.notRecovered); recovery p50 \(Self.fixed(storm.recoveryMillisecondsP50, 1)) ms, max \(Self.fixed(storm.recoveryMillisecondsMax, 1)) ms"
            )
        }
        row(
            "checks",
            "\(checks.subscribersChecked) subscribers on \(checks.lists) list(s) (\(checks.fullReplicas) full replicas); divergences \(checks.divergences); full compare \(checks.fullCompared) replicas, \(checks.fullCompareMismatches) mismatches; gaps \(checks.gaps), digest mismatches \(checks.digestMismatches), protocol errors \(checks.protocolErrors)"
        )
        for example in checks.divergenceExamples + checks.problemExamples + checks.protocolErrorExamples
            + mutations.rejectExamples + connections.failureExamples
        {
            lines.append("    · \(example)")
        }
        lines.append("")
        lines.append(passed ? "PASS" : "FAIL: " + failures.joined(separator: "; "))
        return lines.joined(separator: "\n")
    }

    /// 1234567 → "1.23 M", 12345 → "12.3 k", 123 → "123".
    public static func number(_ x: Double) -> String {
        let a = abs(x)
        if a >= 1e9 { return fixed(x / 1e9, 2) + " G" }
        if a >= 1e6 { return fixed(x / 1e6, 2) + " M" }
        if a >= 1e4 { return fixed(x / 1e3, 1) + " k" }
        return a >= 100 || x == x.rounded() ? String(Int(x.rounded())) : fixed(x, 1)
    }

    static func fixed(_ x: Double, _ digits: Int) -> String { String(format: "%.\(digits)f", x) }
    static func pad(_ s: String, _ width: Int) -> String { String(repeating: " ", count: max(0, width - s.count)) + s }
}
