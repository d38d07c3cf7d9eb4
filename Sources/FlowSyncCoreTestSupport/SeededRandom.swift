import FlowSyncCore

/// The tests' and benchmarks' seeded generator: FlowSync's one `SplitMix64` (in
/// `FlowSyncCore`), under the name the tests know. Every randomized test prints its
/// seed so a failure replays exactly.
public typealias SeededRandom = SplitMix64
