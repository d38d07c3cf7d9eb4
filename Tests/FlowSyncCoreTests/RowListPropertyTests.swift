import FlowSyncCore
import FlowSyncCoreTestSupport
import Testing

/// The row store against a plain `[Row]` oracle: seeded random edits at random
/// positions (single rows, runs, moves, replacements, copies), lookups by ID and
/// `checkInvariants()` after every step. A failure prints its seed and case.
@Suite(.timeLimit(.minutes(2))) struct RowListPropertyTests {
    static let seeds: [UInt64] = [101, 102, 103, 104, 105]
    static let casesPerSeed = 250

    @Test(arguments: seeds)
    func randomEditsMatchAnArray(seed: UInt64) {
        var random = SeededRandom(seed: seed)
        var serial = 0
        func fresh() -> Row {
            serial += 1
            return Row(id: "n\(serial)", text: "\(serial)")
        }
        var failures = 0
        for caseIndex in 0..<Self.casesPerSeed where failures == 0 {
            let initial = (0..<random.int(0...(random.chance(0.2) ? 800 : 200))).map { _ in fresh() }
            var oracle = initial
            var list = RowList(initial)
            if random.chance(0.8) { list.turnOnIDIndex() }
            var log: [String] = []
            for _ in 0..<30 where failures == 0 {
                switch random.int(0..<9) {
                case 0, 1:
                    let at = random.int(0...oracle.count)
                    let row = fresh()
                    log.append("insert \(row.id) at \(at)")
                    oracle.insert(row, at: at)
                    list.insert(row, at: at)
                case 2:
                    guard !oracle.isEmpty else { continue }
                    let at = random.int(0..<oracle.count)
                    log.append("remove at \(at)")
                    #expect(list.remove(at: at) == oracle.remove(at: at), "seed \(seed) case \(caseIndex): \(log)")
                case 3:
                    guard !oracle.isEmpty else { continue }
                    let from = random.int(0..<oracle.count)
                    let row = oracle.remove(at: from)
                    let to = random.int(0...oracle.count)
                    log.append("move \(from) → \(to)")
                    oracle.insert(row, at: to)
                    list.insert(list.remove(at: from), at: to)
                case 4:
                    // A run at one position: short runs go row by row, long ones by chunks.
                    let run = (0..<random.int(1...(random.chance(0.5) ? 300 : 20))).map { _ in fresh() }
                    let at = random.int(0...oracle.count)
                    log.append("run of \(run.count) at \(at)")
                    oracle.insert(contentsOf: run, at: at)
                    list.insert(contentsOf: run, at: at)
                case 5:
                    guard !oracle.isEmpty else { continue }
                    let lo = random.int(0..<oracle.count)
                    let hi = random.int(lo...min(oracle.count, lo + 150))
                    log.append("remove \(lo)..<\(hi)")
                    oracle.removeSubrange(lo..<hi)
                    list.removeSubrange(lo..<hi)
                case 6:
                    guard !oracle.isEmpty else { continue }
                    let at = random.int(0..<oracle.count)
                    // Same ID (an update) or a new one (a replacement).
                    let row = random.chance(0.5) ? Row(id: oracle[at].id, text: "u\(serial)") : fresh()
                    log.append("replace \(at) with \(row.id)")
                    oracle[at] = row
                    list[at] = row
                case 7:
                    // A copy edited on its own must not disturb the original.
                    var copy = list
                    let row = fresh()
                    copy.insert(row, at: random.int(0...copy.count))
                    if !copy.isEmpty { copy.remove(at: random.int(0..<copy.count)) }
                    copy.checkInvariants()
                    log.append("edited a copy")
                default:
                    log.append("append")
                    let row = fresh()
                    oracle.append(row)
                    list.append(row)
                }
                list.checkInvariants()
                if list.count != oracle.count || !list.elementsEqual(oracle) {
                    Issue.record("seed \(seed) case \(caseIndex): contents differ after \(log)")
                    failures += 1
                    break
                }
                // Lookups by ID: a few present rows and one absent.
                for _ in 0..<3 where !oracle.isEmpty {
                    let at = random.int(0..<oracle.count)
                    if list.firstIndex(ofID: oracle[at].id) != at || list[at] != oracle[at] {
                        Issue.record("seed \(seed) case \(caseIndex): lookup of \(oracle[at].id) at \(at) after \(log)")
                        failures += 1
                    }
                }
                if list.firstIndex(ofID: "absent") != nil || list.contains(id: "absent") {
                    Issue.record("seed \(seed) case \(caseIndex): found an absent ID after \(log)")
                    failures += 1
                }
            }
            #expect(list == RowList(oracle), "seed \(seed) case \(caseIndex)")
            #expect(list.hashValue == RowList(oracle).hashValue, "seed \(seed) case \(caseIndex)")
            #expect(list.map(\.id) == oracle.map(\.id) && list.array == oracle, "seed \(seed) case \(caseIndex)")
        }
    }

    @Test func literalsAndConversions() {
        let rows: RowList = [Row(id: "a"), Row(id: "b")]
        #expect(Array(rows) == [Row(id: "a"), Row(id: "b")])
        #expect(rows.firstIndex(ofID: "b") == 1)  // no index: a scan
        #expect(Section(id: "s", rows: [Row(id: "a")]).rows == [Row(id: "a")])
        var empty = RowList()
        empty.turnOnIDIndex()
        empty.insert(contentsOf: (0..<500).map { Row(id: "r\($0)") }, at: 0)
        empty.checkInvariants()
        #expect(empty.firstIndex(ofID: "r499") == 499)
        empty.removeAll()
        empty.checkInvariants()
        #expect(empty.isEmpty && empty.hasIDIndex)
    }
}

/// Large requests through a director: the changeset of a run or of many removals,
/// moves and replacements on sections far larger than a chunk must round-trip, and the
/// director's invariants (including every section's row store) must hold.
@Suite(.timeLimit(.minutes(2))) struct LargeRequestRoundTripTests {
    @Test(arguments: [201, 202, 203] as [UInt64])
    func largeGroupsRoundTrip(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        var serial = 0
        func fresh() -> Row {
            serial += 1
            return Row(id: "n\(serial)", text: "\(serial)")
        }
        for caseIndex in 0..<25 {
            let sections = (0..<random.int(1...3)).map { s in
                Section(id: "s\(s)", rows: (0..<random.int(0...1_500)).map { _ in fresh() })
            }
            let old = try Director(sections: sections)
            var new = old
            var group: [Operation] = []
            var scratch = old
            for _ in 0..<random.int(1...6) {
                let s = random.int(0..<scratch.sections.count)
                let count = scratch.sections[s].rows.count
                let op: Operation
                switch random.int(0..<5) {
                case 0:
                    op = .insertRows(
                        (0..<random.int(1...400)).map { _ in fresh() }, in: .index(s), at: random.int(0...count))
                case 1 where count > 0:
                    var ids = Set<String>()
                    for _ in 0..<random.int(1...min(count, 300)) {
                        ids.insert(scratch.sections[s].rows[random.int(0..<count)].id)
                    }
                    op = .removeRows(ids.sorted().map { .id($0) })
                case 2 where count > 0:
                    let t = random.int(0..<scratch.sections.count)
                    let capacity = scratch.sections[t].rows.count - (t == s ? 1 : 0)
                    op = .moveRow(
                        .index(random.int(0..<count), in: .index(s)), toSection: .index(t), at: random.int(0...capacity)
                    )
                case 3 where count > 0:
                    let r = random.int(0..<count)
                    op = .replaceRow(
                        .id(scratch.sections[s].rows[r].id),
                        with: Row(id: scratch.sections[s].rows[r].id, text: "u\(serial)"))
                case 4 where count > 1:
                    op = .swapRows(.index(0, in: .index(s)), .index(count - 1, in: .index(s)))
                default:
                    op = .insertRows([fresh()], in: .index(s), at: count)
                }
                try scratch.apply([op])
                group.append(op)
            }
            let outcome = new.applyBatch([group])
            try outcome.results[0].get()
            #expect(!outcome.usedDiff)
            new.checkInvariants()
            #expect(new == scratch, "seed \(seed) case \(caseIndex)")
            if let problem = UIKitBatchSimulator.check(outcome.changeset, from: old, to: new) {
                Issue.record("seed \(seed) case \(caseIndex): \(problem)\nops: \(group)")
            }
            #expect(try outcome.changeset.applied(to: old) == new, "seed \(seed) case \(caseIndex)")
            var reverted = new
            reverted.revert(outcome.reversal)
            reverted.checkInvariants()
            #expect(reverted == old, "seed \(seed) case \(caseIndex)")
        }
    }
}
