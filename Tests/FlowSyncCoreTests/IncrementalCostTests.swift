import FlowSyncCore
import FlowSyncCoreTestSupport
import Testing

/// Structural checks that small batches on big lists take the incremental path (the
/// timing figures live in docs/BENCHMARKS.md, not here).
@Suite(.timeLimit(.minutes(2))) struct IncrementalCostTests {
    @Test func smallBatchOnALargeSectionIsTrackedNotDiffed() throws {
        let rows = (0..<200_000).map { Row(id: "r\($0)") }
        let old = try Director(
            sections: [Section(id: "big", rows: rows), Section(id: "other")], limits: DirectorLimits(maxRows: 1_000_000)
        )
        var d = old
        let outcome = d.applyBatch([
            [
                .insertRows([Row(id: "new")], in: .id("big"), at: 100_000),
                .removeRows([.index(5, in: .id("big"))]),
                .moveRow(.index(150_000, in: .id("big")), toSection: .id("big"), at: 10),
                .replaceRow(.id("r199999"), with: Row(id: "r199999", text: "x")),
                .moveRow(.id("r7"), toSection: .id("other"), at: 0),
            ]
        ])
        #expect(!outcome.usedDiff)
        #expect(outcome.changeset.changeCount == 5)
        #expect(UIKitBatchSimulator.check(outcome.changeset, from: old, to: d) == nil)
    }

    @Test func wholeReplacementIsDiffed() throws {
        var d = try Director(sections: [Section(id: "s", rows: [Row(id: "a")])])
        #expect(d.applyBatch([[.setRows([Row(id: "b")], in: .id("s"))]]).usedDiff)
    }
}

@Suite(.timeLimit(.minutes(2))) struct SequencerFastPathTests {
    /// The sequencer's fast path must not copy the director: a copy of a 200,000-row
    /// director's storage would show as changed identities of its row chunks.
    @Test func fastPathEditsInPlace() throws {
        let rows = (0..<200_000).map { Row(id: "r\($0)") }
        var s = Sequencer(
            director: try Director(
                sections: [Section(id: "big", rows: rows)], limits: DirectorLimits(maxRows: 1_000_000)),
            position: ListVersion(epoch: 1, version: 0))
        // The first edit copies once: the test's own `rows` array shares the buffer.
        s.submit(
            MutationRequest(
                clientID: "w", seq: 1, base: s.position,
                operations: [.replaceRow(.index(5, in: .id("big")), with: Row(id: "r5", text: "x"))]), tag: 0)
        _ = s.seal()
        let before = s.director.sections[0].rows.storageIdentities
        s.submit(
            MutationRequest(
                clientID: "w", seq: 2, base: s.position,
                operations: [.replaceRow(.index(6, in: .id("big")), with: Row(id: "r6", text: "y"))]), tag: 0)
        let sealed = s.seal()
        #expect(sealed.commit != nil)
        let after = s.director.sections[0].rows.storageIdentities
        #expect(before == after, "the rows buffer was copied: the fast path paid O(n)")
    }
}
