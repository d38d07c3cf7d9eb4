/// The standard runs, named so a team can repeat them (`--scenario NAME`); the figures
/// in docs/BENCHMARKS.md are these with the options shown there.
public enum Scenario: String, CaseIterable, Sendable, Codable {
    /// One list, many subscribers, one writer: fan-out throughput and latency.
    case fanout
    /// One list, many concurrent writers, some subscribers: commit throughput, ack latency.
    case writers
    /// A small run of everything (every op kind, several lists, section ops): the smoke test.
    case mixed
    /// Many subscribers dropped and reconnected with resume while writes go on.
    case resumeStorm = "resume-storm"
    /// Subscribers that stop reading for a while: the daemon's back-pressure pauses and
    /// catches them up.
    case slowConsumers = "slow-consumers"
    /// Many lists with a few subscribers each.
    case manyLists = "many-lists"
    /// Many idle subscribed connections and a trickle of writes: memory per connection.
    case connections

    /// What the scenario measures, for `--help` and the report.
    public var summary: String {
        switch self {
        case .fanout:
            return
                "1 list, 1,000 subscribers, 1 writer (closed loop, 16 in flight, 10 updates each); row changes delivered/s"
        case .writers: return "1 list, 50 writers, 50 subscribers; committed mutations/s and write→ack latency"
        case .mixed: return "4 lists × 20 subscribers, 8 writers, every op kind incl. section ops"
        case .resumeStorm: return "1 list, 1,000 subscribers; all dropped and resumed mid-run while writes go on"
        case .slowConsumers:
            return
                "1 list, 100 subscribers of which 10 (64 KiB receive buffers) stop reading 4 s out of every 6 s; 1,500 mutations/s of 5 × 1 KB rows"
        case .manyLists: return "1,000 lists × 10 subscribers, 100 writers"
        case .connections: return "5,000 idle subscribed connections on 50 lists, 1 writer at 10 mutations/s"
        }
    }

    /// The configuration this scenario starts from.
    public var configuration: LoadConfiguration {
        var c = LoadConfiguration()
        switch self {
        case .fanout:
            c.lists = 1
            c.subscribersPerList = 1_000
            c.fullReplicasPerList = 20
            c.writers = 1
            c.rate = 0
            // 16 pipelined mutations: the daemon folds those of one loop turn into one
            // batch, as a busy producer's would be (docs/BENCHMARKS.md shows the sweep).
            c.maxInFlightPerWriter = 16
            c.opsPerMutation = 10
            c.initialRows = 1_000
            c.mix = .updatesOnly
        case .writers:
            c.lists = 1
            c.subscribersPerList = 50
            c.writers = 50
            c.rate = 0
            c.maxInFlightPerWriter = 1
            c.opsPerMutation = 1
            c.initialRows = 1_000
            c.mix = .default
        case .mixed:
            c.lists = 4
            c.subscribersPerList = 20
            c.writers = 8
            c.rate = 400
            c.opsPerMutation = 3
            c.initialRows = 200
            c.sectionsPerList = 5
            c.mix = .everything
            c.duration = 5
            c.warmup = 1
        case .resumeStorm:
            c.lists = 1
            c.subscribersPerList = 1_000
            c.fullReplicasPerList = 100
            c.writers = 4
            c.rate = 200
            c.opsPerMutation = 2
            c.resumeStormSubscribers = 1_000
            c.duration = 10
        case .slowConsumers:
            // About 2 MB/s of frames per subscriber and a 64 KiB receive buffer on the
            // slow ones: a 4 s pause outgrows the daemon's socket send buffer (up to
            // 4 MB) and then its 4 MiB high watermark, so the daemon pauses the
            // subscription and later catches it up.
            c.lists = 1
            c.subscribersPerList = 100
            c.fullReplicasPerList = 20
            c.writers = 4
            c.rate = 1_500
            c.opsPerMutation = 5
            c.payloadBytes = 1_000
            c.slowConsumers = 10
            c.slowPauseMilliseconds = 4_000
            c.slowPeriodMilliseconds = 6_000
            c.duration = 12
        case .manyLists:
            c.lists = 1_000
            c.subscribersPerList = 10
            c.writers = 100
            c.rate = 5_000
            c.opsPerMutation = 2
            c.initialRows = 100
            c.sectionsPerList = 2
        case .connections:
            c.lists = 50
            c.subscribersPerList = 100
            c.fullReplicasPerList = 2
            c.writers = 1
            c.rate = 10
            c.initialRows = 20
            c.sectionsPerList = 2
            c.duration = 5
            c.fullCompareLists = 1
        }
        return c
    }
}
