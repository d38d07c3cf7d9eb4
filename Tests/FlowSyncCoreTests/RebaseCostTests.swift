import FlowSyncCore
import FlowSyncCoreTestSupport
import Testing

/// Structural checks (no timing) that a rebased mutation on a large list does not copy
/// the list: the sequencer walks the live director back to the writer's base and
/// forward again, so storage the walk does not edit keeps its identity.
@Suite(.timeLimit(.minutes(2))) struct RebaseCostTests {
    @Test func rebaseOnALargeListCopiesNothingItDoesNotEdit() throws {
        let rows = (0..<100_000).map { Row(id: "r\($0)") }
        var s = Sequencer(
            director: try Director(
                sections: [Section(id: "big", rows: rows)], limits: DirectorLimits(maxRows: 1_000_000)),
            position: ListVersion(epoch: 1, version: 0))
        let base = s.position
        // Five batches the writer will not have seen, all near the top of the list.
        for k in 0..<5 {
            s.submit(
                MutationRequest(
                    clientID: "other", seq: UInt64(k + 1), base: s.position,
                    operations: [.insertRows([Row(id: "o\(k)")], in: .id("big"), at: k)]), tag: 0)
            #expect(s.seal().commit != nil)
        }
        let before = s.director.sections[0].rows.storageIdentities
        // A writer at the old base moves the row after r10 to the end: anchored in its
        // base state, resolved in the current one.
        s.submit(
            MutationRequest(
                clientID: "w", seq: 1, base: base,
                operations: [.moveRow(.index(11, in: .id("big")), toSection: .id("big"), at: 99_999)]), tag: 0)
        let sealed = s.seal()
        #expect(sealed.commit != nil)
        s.director.checkInvariants()
        let ids = s.director.sections[0].rows
        #expect(ids[ids.count - 1].id == "r11")
        #expect(ids.firstIndex(ofID: "r12") == 16)  // 5 inserted above, r11 gone
        // Only the first chunk (the walk and the move's source) and the last (its
        // destination) may have changed; every chunk in between is the same storage.
        let after = s.director.sections[0].rows.storageIdentities
        #expect(before.count == after.count)
        let middle = 2..<(min(before.count, after.count) - 2)
        #expect(Array(before[middle]) == Array(after[middle]), "the rebase copied storage it did not edit")
    }
}
