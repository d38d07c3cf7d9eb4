import FlowSyncCoreTestSupport
import Testing

@testable import FlowSyncCore

/// The sharded map against a `Dictionary` oracle, with copies held across edits (the
/// case it exists for): seeded random inserts, updates and removals; every held copy
/// must keep its contents, and an edit of a copy must share every shard it did not touch.
@Suite(.timeLimit(.minutes(2))) struct ShardedDictionaryTests {
    @Test(arguments: [201, 202, 203, 204] as [UInt64])
    func randomEditsWithHeldCopiesMatchADictionary(seed: UInt64) {
        var random = SeededRandom(seed: seed)
        var failures = 0
        for caseIndex in 0..<60 where failures == 0 {
            var map: ShardedDictionary<String, Int> = [:]
            var oracle: [String: Int] = [:]
            var held: [(ShardedDictionary<String, Int>, [String: Int])] = []
            let keySpace = random.chance(0.3) ? 3_000 : 300
            for step in 0..<400 where failures == 0 {
                let key = "k\(random.int(0..<keySpace))"
                switch random.int(0..<10) {
                case 0..<6:
                    let value = random.int(0..<1_000)
                    map[key] = value
                    oracle[key] = value
                case 6..<9:
                    map[key] = nil
                    oracle[key] = nil
                default:
                    held.append((map, oracle))
                    if held.count > 4 { held.removeFirst() }
                }
                if map.count != oracle.count || map[key] != oracle[key] {
                    failures += 1
                    Issue.record(
                        "seed \(seed) case \(caseIndex) step \(step): count \(map.count) vs \(oracle.count), \(key) → \(String(describing: map[key])) vs \(String(describing: oracle[key]))"
                    )
                }
            }
            for (copy, expected) in held where failures == 0 {
                if !Self.matches(copy, expected) {
                    failures += 1
                    Issue.record("seed \(seed) case \(caseIndex): a held copy changed when the original was edited")
                }
            }
            if failures == 0, !Self.matches(map, oracle) {
                failures += 1
                Issue.record("seed \(seed) case \(caseIndex): contents differ from the oracle")
            }
        }
    }

    @Test func anEditOfACopySharesTheShardsItDidNotTouch() {
        var map: ShardedDictionary<String, Int> = [:]
        for i in 0..<100_000 { map["r\(i)"] = i }
        let shards = map.storageIdentities.count
        #expect(shards >= 256, "100,000 entries in \(shards) shards: the shard count did not grow")
        let held = map
        map["r5"] = -5
        map["new"] = 1
        let shared = Set(held.storageIdentities).intersection(map.storageIdentities).count
        // Two edits touch at most two shards; every other one is still shared.
        #expect(shared >= shards - 2)
        #expect(held["r5"] == 5 && held["new"] == nil && held.count == 100_000)
        #expect(map["r5"] == -5 && map["new"] == 1 && map.count == 100_001)
    }

    @Test func equalityIgnoresShardLayout() {
        var grown: ShardedDictionary<String, Int> = [:]
        for i in 0..<5_000 { grown["k\(i)"] = i }
        for i in 100..<5_000 { grown["k\(i)"] = nil }
        var small: ShardedDictionary<String, Int> = [:]
        for i in (0..<100).reversed() { small["k\(i)"] = i }
        #expect(grown.storageIdentities.count > small.storageIdentities.count)
        #expect(grown == small)
        small["k7"] = 8
        #expect(grown != small)
    }

    /// A director held across an edit (a client's last delivered snapshot): the edit
    /// copies one shard of each ID map, not the maps.
    @Test func aDirectorEditedWhileACopyIsHeldSharesItsIDMaps() throws {
        let rows = (0..<50_000).map { Row(id: "r\($0)") }
        var director = try Director(
            sections: [Section(id: "s", rows: rows)], limits: DirectorLimits(maxRows: 1_000_000))
        let held = director
        _ = try director.add(row: Row(id: "new"), inSection: .id("s"), at: 10)
        let rowMap = Set(held.rowSectionIDs.storageIdentities).intersection(director.rowSectionIDs.storageIdentities)
            .count
        #expect(rowMap >= held.rowSectionIDs.storageIdentities.count - 1)
        let index = try #require(held.sections[0].rows.idIndex?.storageIdentities)
        let indexShared = Set(index).intersection(director.sections[0].rows.idIndex?.storageIdentities ?? []).count
        #expect(indexShared >= index.count - 1)
        #expect(held.containsRow(id: "new") == false && director.rowPath(id: "new") == RowPath(section: 0, row: 10))
        held.checkInvariants()
        director.checkInvariants()
    }

    private static func matches(_ map: ShardedDictionary<String, Int>, _ oracle: [String: Int]) -> Bool {
        guard map.count == oracle.count else { return false }
        var same = true
        // swift-format-ignore: ReplaceForEachWithForLoop
        map.forEach { key, value in if oracle[key] != value { same = false } }  // no Sequence: its own forEach
        return same
    }
}
