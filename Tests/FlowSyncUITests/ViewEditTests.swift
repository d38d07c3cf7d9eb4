import FlowSyncClient
import FlowSyncCore
import FlowSyncTestSupport
import FlowSyncUI
import Testing

/// The applier's view edits (a drag the view already shows), rule by rule
/// (`ListUpdateApplier+ViewEdits.swift`): shown at once without touching the view; a
/// change queued before the write is rebased under it; the write's own change (its
/// echo) animates nothing; a rollback and a refusal animate it back; an edit that no
/// longer applies is dropped.
@Suite(.timeLimit(.minutes(1))) struct ViewEditTests {
    static let list0 = try! Director(sections: [
        Section(id: "s", rows: ["a", "b", "c", "d"].map { Row(id: $0, kind: "k", text: #"{"v":1}"#) }),
        Section(id: "t", rows: [Row(id: "e", kind: "k", text: #"{"v":1}"#)]),
    ])

    /// A view showing `list0`, its applier, and the move `a` from 0 to 2 made by the
    /// user (the view moved it, the applier recorded it).
    func dragged() throws -> (SimulatedListView, ListUpdateApplier<SimulatedListView>, ViewEditToken, [Operation]) {
        let view = SimulatedListView(displaying: Self.list0)
        let applier = ListUpdateApplier(target: view, snapshot: ListSnapshot(name: "l", director: Self.list0))
        view.dataSource = { applier.snapshot.director }
        let move: [Operation] = [.moveRow(.id("a"), toSection: .id("s"), at: 2)]
        view.userMoved(from: RowPath(section: 0, row: 0), to: RowPath(section: 0, row: 2))
        let token = try applier.beginViewEdit(move)
        return (view, applier, token, move)
    }

    static func change(_ cause: ListChange.Cause, from old: Director, _ operations: [Operation]) throws -> ListChange {
        var new = old
        let changeset = try new.apply(operations)
        return ListChange(
            cause: cause, previous: ListSnapshot(name: "l", director: old), changeset: changeset,
            snapshot: ListSnapshot(name: "l", director: new))
    }

    @Test func aViewEditIsShownAtOnceWithoutTouchingTheView() throws {
        let (view, applier, _, _) = try dragged()
        #expect(view.batches == 0 && view.reloads == 0)
        #expect(applier.snapshot.director == view.displayed)
        #expect(applier.snapshot.director.sections[0].rows.map(\.id) == ["b", "c", "a", "d"])
        #expect(applier.hasViewEdits)
    }

    @Test func aRemoteChangeQueuedBeforeTheWriteIsRebasedUnderTheEditAndTheEchoAnimatesNothing() throws {
        let (view, applier, token, move) = try dragged()
        // Queued before the write: another writer inserted x at the top and updated c.
        let remote = try Self.change(
            .remote, from: Self.list0,
            [
                .insertRows([Row(id: "x", kind: "k", text: "{}")], in: .id("s"), at: 0),
                .replaceRow(.id("c"), with: Row(id: "c", kind: "k", text: #"{"v":2}"#)),
            ])
        applier.viewEdit(token, isCarriedBy: 7)
        let outcome = applier.apply(remote)
        #expect(view.problems.isEmpty, "\(view.problems)")
        #expect(view.reloads == 0)
        guard case .animated = outcome else {
            Issue.record("not animated: \(outcome)")
            return
        }
        // The dragged row stays where it was dropped, relative to its neighbours.
        #expect(view.displayed.sections[0].rows.map(\.id) == ["x", "b", "c", "a", "d"])
        #expect(applier.snapshot.director == view.displayed)
        // The echo: the list, now with the move, as the SDK's replica rebased it.
        var withMove = remote.snapshot.director
        var anchoredIn = Self.list0
        _ = try withMove.applyResolving(try anchoredIn.anchor(move))
        let echo = ListChange(
            cause: .local(seq: 7), previous: remote.snapshot,
            changeset: Changeset.diff(from: remote.snapshot.director, to: withMove),
            snapshot: ListSnapshot(name: "l", director: withMove))
        let batchesBefore = view.batches
        #expect(applier.apply(echo) == .unchanged)
        #expect(view.batches == batchesBefore, "the echo animated the move a second time")
        #expect(!applier.hasViewEdits)
        #expect(view.displayed == withMove)
        // From there, changes take the O(k) path again: continuity holds.
        let next = try Self.change(.remote, from: withMove, [.removeRows([.id("d")])])
        #expect(applier.apply(next) == .animated(batches: 1))
        #expect(view.displayed == next.snapshot.director && view.problems.isEmpty)
    }

    @Test func aRollbackOfTheWriteAnimatesTheRowBack() throws {
        let (view, applier, token, _) = try dragged()
        applier.viewEdit(token, isCarriedBy: 3)
        // The server refused the write before the echo arrived (a rollback ends the edit).
        let rollback = ListChange(
            cause: .rollback(seq: 3, error: .closed), previous: ListSnapshot(name: "l", director: Self.list0),
            changeset: Changeset(), snapshot: ListSnapshot(name: "l", director: Self.list0))
        guard case .animated = applier.apply(rollback) else {
            Issue.record("the row did not animate back")
            return
        }
        #expect(view.problems.isEmpty, "\(view.problems)")
        #expect(view.displayed == Self.list0 && !applier.hasViewEdits)
    }

    @Test func aWriteRefusedOnTheSpotAnimatesBack() throws {
        let (view, applier, token, _) = try dragged()
        guard case .animated = applier.abandonViewEdit(token) else {
            Issue.record("not animated back")
            return
        }
        #expect(view.problems.isEmpty && view.displayed == Self.list0 && !applier.hasViewEdits)
        #expect(applier.abandonViewEdit(token) == .unchanged)
    }

    @Test func anEditThatNoLongerAppliesIsDropped() throws {
        let (view, applier, token, _) = try dragged()
        applier.viewEdit(token, isCarriedBy: 9)
        // Another writer deleted the dragged row: the move cannot be re-applied.
        let remote = try Self.change(.remote, from: Self.list0, [.removeRows([.id("a")])])
        guard case .animated = applier.apply(remote) else {
            Issue.record("not animated")
            return
        }
        #expect(!applier.hasViewEdits)
        #expect(view.problems.isEmpty && view.displayed == remote.snapshot.director)
    }

    @Test func aReloadForgetsViewEdits() throws {
        let (view, applier, _, _) = try dragged()
        applier.reload(to: ListSnapshot(name: "l", director: Self.list0))
        #expect(!applier.hasViewEdits && view.displayed == Self.list0)
    }

    @Test func aMoveAcrossSectionsAndTwoEditsInFlight() throws {
        let (view, applier, first, _) = try dragged()
        applier.viewEdit(first, isCarriedBy: 1)
        // A second drag before the first echo: e from t to the top of s.
        view.userMoved(from: RowPath(section: 1, row: 0), to: RowPath(section: 0, row: 0))
        let second = try applier.beginViewEdit([.moveRow(.id("e"), toSection: .id("s"), at: 0)])
        applier.viewEdit(second, isCarriedBy: 2)
        #expect(applier.snapshot.director == view.displayed)
        let remote = try Self.change(
            .remote, from: Self.list0, [.insertRows([Row(id: "y", kind: "k", text: "{}")], in: .id("t"), at: 0)])
        _ = applier.apply(remote)
        #expect(view.problems.isEmpty, "\(view.problems)")
        #expect(view.displayed.sections.map { $0.rows.map(\.id) } == [["e", "b", "c", "a", "d"], ["y"]])
        // The first echo ends the first edit only.
        var afterFirst = remote.snapshot.director
        _ = try afterFirst.apply([.moveRow(.id("a"), toSection: .id("s"), at: 2)])
        _ = applier.apply(
            ListChange(
                cause: .local(seq: 1), previous: remote.snapshot,
                changeset: Changeset.diff(from: remote.snapshot.director, to: afterFirst),
                snapshot: ListSnapshot(name: "l", director: afterFirst)))
        #expect(applier.hasViewEdits)
        #expect(view.displayed.sections.map { $0.rows.map(\.id) } == [["e", "b", "c", "a", "d"], ["y"]])
        var afterSecond = afterFirst
        _ = try afterSecond.apply([.moveRow(.id("e"), toSection: .id("s"), at: 0)])
        let batches = view.batches
        _ = applier.apply(
            ListChange(
                cause: .local(seq: 2), previous: ListSnapshot(name: "l", director: afterFirst),
                changeset: Changeset.diff(from: afterFirst, to: afterSecond),
                snapshot: ListSnapshot(name: "l", director: afterSecond)))
        #expect(!applier.hasViewEdits && view.batches == batches && view.displayed == afterSecond)
        #expect(view.problems.isEmpty)
    }
}
