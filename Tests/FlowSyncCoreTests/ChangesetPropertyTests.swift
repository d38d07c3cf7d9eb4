import FlowSyncCore
import FlowSyncCoreTestSupport
import Testing

/// The core's oracles, over seeded random directors and mutation groups:
/// `apply(changeset(ops), old) == new`, `apply(diff(old, new), old) == new`, every stage
/// passes the UIKit validator, and a refused group leaves the director untouched.
@Suite(.timeLimit(.minutes(2))) struct ChangesetPropertyTests {
    static let seeds: [UInt64] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
    static let casesPerSeed = 1_000

    @Test(arguments: seeds)
    func randomGroupsRoundTrip(seed: UInt64) {
        var generator = DirectorGenerator(seed: seed)
        var failures = 0
        var tracked = 0, refused = 0, moves = 0
        for caseIndex in 0..<Self.casesPerSeed where failures < 3 {
            let old = generator.director()
            let group = generator.group(for: old, validOnly: caseIndex % 5 != 0)
            var new = old
            let context = "seed \(seed) case \(caseIndex)\nold:\n\(UIKitBatchSimulator.dump(old))\nops: \(group)"
            do {
                let outcome = new.applyBatch([group])
                try outcome.results[0].get()
                let changeset = outcome.changeset
                if !outcome.usedDiff { tracked += 1 }
                moves += changeset.stages.reduce(0) { $0 + $1.rowMoves.count + $1.sectionMoves.count }
                new.checkInvariants()
                if let problem = UIKitBatchSimulator.check(changeset, from: old, to: new) {
                    Issue.record("incremental changeset: \(problem)\n\(context)")
                    failures += 1
                }
                let diff = Changeset.diff(from: old, to: new)
                if let problem = UIKitBatchSimulator.check(diff, from: old, to: new) {
                    Issue.record("diff: \(problem)\n\(context)")
                    failures += 1
                }
            } catch {
                refused += 1
                if new != old || new.digest != old.digest {
                    Issue.record("refused group (\(error)) changed the director\n\(context)")
                    failures += 1
                }
                new.checkInvariants()
            }
        }
        // The generator must keep exercising every path, or the oracle proves little.
        #expect(tracked > Self.casesPerSeed / 3, "only \(tracked) groups took the incremental path")
        #expect(refused > Self.casesPerSeed / 50, "only \(refused) groups were refused")
        #expect(moves > Self.casesPerSeed / 5, "only \(moves) moves")
    }

    /// Several groups sealed into one batch, some refused, as the server does per loop turn.
    @Test(arguments: [11, 12, 13] as [UInt64])
    func randomBatchesOfGroupsRoundTrip(seed: UInt64) {
        var generator = DirectorGenerator(seed: seed)
        var failures = 0
        for caseIndex in 0..<500 where failures < 3 {
            let old = generator.director()
            var scratch = old
            var groups: [[Operation]] = []
            var expected: [Bool] = []
            for _ in 0..<generator.random.int(1...5) {
                let group = generator.group(for: scratch, maxOps: 4, validOnly: false)
                groups.append(group)
                expected.append((try? scratch.apply(group)) != nil)
            }
            var new = old
            let outcome = new.applyBatch(groups)
            let context = "seed \(seed) case \(caseIndex)\nold:\n\(UIKitBatchSimulator.dump(old))\ngroups: \(groups)"
            #expect(outcome.results.map { (try? $0.get()) != nil } == expected, "\(context)")
            #expect(new == scratch, "\(context)")
            new.checkInvariants()
            var reverted = new
            reverted.revert(outcome.reversal)
            #expect(reverted == old && reverted.digest == old.digest, "revert must restore the old state\n\(context)")
            if let problem = UIKitBatchSimulator.check(outcome.changeset, from: old, to: new) {
                Issue.record("batch changeset: \(problem)\n\(context)")
                failures += 1
            }
        }
    }

    /// Diffs between unrelated random states (whole-list replacement, catch-up).
    @Test func diffBetweenUnrelatedStates() {
        var generator = DirectorGenerator(seed: 99)
        for caseIndex in 0..<1_000 {
            let (a, b) = generator.unrelatedPair()
            if let problem = UIKitBatchSimulator.check(Changeset.diff(from: a, to: b), from: a, to: b) {
                Issue.record("case \(caseIndex): \(problem)")
                return
            }
        }
    }
}
