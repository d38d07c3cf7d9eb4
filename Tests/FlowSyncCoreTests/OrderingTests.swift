import FlowSyncCore
import FlowSyncCoreTestSupport
import Testing

/// The ordering layer's named intention cases: two writers at the same base, one
/// committed first, the other rebased over it.
@Suite(.timeLimit(.minutes(2))) struct OrderingIntentionTests {
    /// Commits `first`, then `second` (both against `base`), in separate turns.
    func race(
        _ base: Director, _ first: [Operation], _ second: [Operation]
    ) -> (Sequencer, Result<ListVersion, SequencerRejection>, [Changeset]) {
        var s = Sequencer(director: base, position: ListVersion(epoch: 1, version: 5))
        let v = s.position
        var changesets: [Changeset] = []
        s.submit(MutationRequest(clientID: "A", seq: 1, base: v, operations: first), tag: 0)
        let a = s.seal()
        precondition((try? a.outcomes[0].result.get()) != nil, "first must commit: \(a.outcomes[0].result)")
        changesets.append(a.commit!.changeset)
        s.submit(MutationRequest(clientID: "B", seq: 1, base: v, operations: second), tag: 0)
        let b = s.seal()
        if let c = b.commit { changesets.append(c.changeset) }
        return (s, b.outcomes[0].result, changesets)
    }

    func list(_ rows: String...) throws -> Director {
        try Director(sections: [Section(id: "S", rows: rows.map { Row(id: $0) }), Section(id: "T")])
    }

    func ids(_ s: Sequencer, _ section: Int = 0) -> [String] { s.director.sections[section].rows.map(\.id) }

    @Test func twoInsertsAtTheSameIndexBothSurviveInCommitOrder() throws {
        let base = try list("a", "b")
        let (s, result, _) = race(
            base, [.insertRows([Row(id: "x")], in: .id("S"), at: 1)], [.insertRows([Row(id: "y")], in: .id("S"), at: 1)]
        )
        #expect((try? result.get()) != nil)
        // Both after "a" (their predecessor): the later one lands right after "a".
        #expect(ids(s) == ["a", "y", "x", "b"])
        // At the very start, both are prepended: the later one first.
        let (front, _, _) = race(
            base, [.insertRows([Row(id: "x")], in: .id("S"), at: 0)], [.insertRows([Row(id: "y")], in: .id("S"), at: 0)]
        )
        #expect(ids(front) == ["y", "x", "a", "b"])
        // Deterministic: the same race gives the same result.
        let (again, _, _) = race(
            base, [.insertRows([Row(id: "x")], in: .id("S"), at: 1)], [.insertRows([Row(id: "y")], in: .id("S"), at: 1)]
        )
        #expect(ids(again) == ids(s))
    }

    @Test func concurrentDeletesOfOneRowRemoveItOnce() throws {
        let (s, result, _) = race(
            try list("a", "b", "c"), [.removeRows([.index(1, in: .id("S"))])],
            [.removeRows([.index(1, in: .id("S")), .index(2, in: .id("S"))])])
        #expect((try? result.get()) != nil, "the second delete is acked, not refused")
        #expect(ids(s) == ["a"], "b removed once, c removed by the second writer")
    }

    @Test func moveAfterDeleteIsAConflictAndDeleteAfterMoveFollowsTheRow() throws {
        let (s1, r1, _) = race(
            try list("a", "b", "c"), [.removeRows([.id("b")])],
            [.moveRow(.index(1, in: .id("S")), toSection: .id("S"), at: 2)])
        guard case .failure(.invalid(let e)) = r1 else {
            Issue.record("\(r1)")
            return
        }
        #expect(e.reason == .conflict && e.message.contains("\"b\""))
        #expect(ids(s1) == ["a", "c"])
        let (s2, r2, _) = race(
            try list("a", "b", "c"), [.moveRow(.id("b"), toSection: .id("T"), at: 0)],
            [.removeRows([.index(1, in: .id("S"))])])
        #expect((try? r2.get()) != nil)
        #expect(ids(s2) == ["a", "c"] && ids(s2, 1).isEmpty, "the delete found b in its new section")
    }

    @Test func insertIntoAConcurrentlyDeletedSectionIsRejectedWithItsCause() throws {
        let (s, result, _) = race(
            try list("a"), [.removeSections([.id("T")])], [.insertRows([Row(id: "x")], in: .index(1), at: 0)])
        guard case .failure(.invalid(let e)) = result else {
            Issue.record("\(result)")
            return
        }
        #expect(e.reason == .conflict)
        #expect(e.message.contains("section \"T\" was deleted"))
        #expect(s.director.rowCount == 1)
    }

    @Test func concurrentSectionMoves() throws {
        let base = try Director(sections: ["A", "B", "C", "D"].map { Section(id: $0) })
        let (s, result, _) = race(base, [.moveSection(.index(0), to: 3)], [.moveSection(.index(3), to: 0)])
        #expect((try? result.get()) != nil)
        // A went to the end; D (found by identity) still goes to the front.
        #expect(s.director.sections.map(\.id) == ["D", "B", "C", "A"])
    }

    @Test func swapAgainstAnInsert() throws {
        let (s, result, _) = race(
            try list("a", "b", "c"), [.insertRows([Row(id: "x")], in: .id("S"), at: 0)],
            [.swapRows(.index(0, in: .id("S")), .index(2, in: .id("S")))])
        #expect((try? result.get()) != nil)
        #expect(ids(s) == ["x", "c", "b", "a"], "the swap still exchanges a and c, wherever they are now")
    }

    @Test func moveDestinationFollowsItsNeighbours() throws {
        // B moves "a" to the end while A deletes the last row: "a" still ends up last.
        let (s, result, _) = race(
            try list("a", "b", "c"), [.removeRows([.id("c")])], [.moveRow(.id("a"), toSection: .id("S"), at: 2)])
        #expect((try? result.get()) != nil)
        #expect(ids(s) == ["b", "a"])
    }

    @Test func updateOfADeletedRowIsAConflict() throws {
        let (_, result, _) = race(
            try list("a", "b"), [.removeRows([.id("a")])],
            [.replaceRow(.index(0, in: .id("S")), with: Row(id: "a", text: "new"))])
        guard case .failure(.invalid(let e)) = result else {
            Issue.record("\(result)")
            return
        }
        #expect(e.reason == .conflict)
    }

    @Test func retriesAreNotAppliedTwice() throws {
        var s = Sequencer(director: try list("a"), position: ListVersion(epoch: 1, version: 0))
        let m = MutationRequest(
            clientID: "w", seq: 9, base: s.position, operations: [.insertRows([Row(id: "x")], in: .id("S"), at: 0)])
        s.submit(m, tag: 0)
        s.submit(m, tag: 1)  // resent within the same turn
        let first = s.seal()
        #expect(first.commit?.mutations.count == 1)
        #expect(
            first.outcomes.map { try? $0.result.get() } == [
                ListVersion(epoch: 1, version: 1), ListVersion(epoch: 1, version: 1),
            ])
        s.submit(m, tag: 2)  // resent after a reconnect
        let second = s.seal()
        #expect(second.commit == nil, "nothing applied twice")
        #expect((try? second.outcomes[0].result.get()) == ListVersion(epoch: 1, version: 1), "the original ack again")
        #expect(s.director.rowCount == 2)
    }

    @Test func retryOlderThanTheWindowIsRefused() throws {
        var s = Sequencer(
            director: try list(), position: ListVersion(epoch: 1, version: 0),
            dedupeLimits: .init(perClient: 4, clients: 10))
        for seq in 1...10 {
            s.submit(
                MutationRequest(
                    clientID: "w", seq: UInt64(seq), base: ListVersion(epoch: 0, version: 0),
                    operations: [.insertRows([Row(id: "r\(seq)")], in: .id("S"), at: 0)]), tag: 0)
            _ = s.seal()
        }
        s.submit(
            MutationRequest(
                clientID: "w", seq: 1, base: ListVersion(epoch: 0, version: 0),
                operations: [.insertRows([Row(id: "r1")], in: .id("S"), at: 0)]), tag: 0)
        guard case .failure(.retryOutsideWindow) = s.seal().outcomes[0].result else {
            Issue.record("expected retryOutsideWindow")
            return
        }
        #expect(s.director.rowCount == 10)
    }
}

/// Random concurrent pairs: the rebased result is always a valid state reached by
/// validator-clean changesets, and the same race always gives the same result.
@Suite(.timeLimit(.minutes(2))) struct RebasePropertyTests {
    @Test(arguments: [21, 22, 23, 24] as [UInt64])
    func randomConcurrentPairs(seed: UInt64) {
        var generator = DirectorGenerator(seed: seed)
        var outcomes = (accepted: 0, refused: 0)
        for caseIndex in 0..<1_000 {
            let base = generator.director()
            let a = generator.group(for: base)
            let b = generator.group(for: base)
            func run() -> (Director, Bool, [Changeset], [Director]) {
                var s = Sequencer(director: base, position: ListVersion(epoch: 3, version: 1))
                var states = [s.director]
                var changesets: [Changeset] = []
                s.submit(MutationRequest(clientID: "A", seq: 1, base: s.position, operations: a), tag: 0)
                let v = s.position
                if let c = s.seal().commit {
                    changesets.append(c.changeset)
                    states.append(s.director)
                }
                s.submit(MutationRequest(clientID: "B", seq: 1, base: v, operations: b), tag: 0)
                let sealed = s.seal()
                if let c = sealed.commit {
                    changesets.append(c.changeset)
                    states.append(s.director)
                }
                return (s.director, (try? sealed.outcomes[0].result.get()) != nil, changesets, states)
            }
            let (final, accepted, changesets, states) = run()
            final.checkInvariants()
            for (k, changeset) in changesets.enumerated() {
                if let problem = UIKitBatchSimulator.check(changeset, from: states[k], to: states[k + 1]) {
                    Issue.record("seed \(seed) case \(caseIndex): \(problem)\nA: \(a)\nB: \(b)")
                    return
                }
            }
            let (again, _, _, _) = run()
            #expect(again == final, "seed \(seed) case \(caseIndex): not deterministic")
            if accepted { outcomes.accepted += 1 } else { outcomes.refused += 1 }
        }
        #expect(outcomes.accepted > 300, "most rebased groups should still apply: \(outcomes)")
    }
}
