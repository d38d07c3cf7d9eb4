import FlowSyncClient
import FlowSyncCore
import FlowSyncTestSupport
import FlowSyncUI
import Testing

/// The applier's decisions, one at a time: off screen, gaps, large changes, headers in
/// a batch of their own, and the per-stage data a change carries.
@Suite(.timeLimit(.minutes(2))) struct ApplierTests {
    let old = try! Director(sections: [
        Section(id: "s", header: Array("h1".utf8), rows: [Row(id: "a"), Row(id: "b"), Row(id: "c")]),
        Section(id: "t", rows: [Row(id: "d")]),
    ])
    let new = try! Director(sections: [
        Section(id: "t", rows: [Row(id: "d"), Row(id: "a")]),
        Section(id: "s", header: Array("h2".utf8), rows: [Row(id: "c"), Row(id: "x")]),
    ])

    func setUp(_ displayed: Director) -> (SimulatedListView, ListUpdateApplier<SimulatedListView>) {
        let view = SimulatedListView(displaying: displayed)
        let applier = ListUpdateApplier(target: view, snapshot: ListSnapshot(name: "l", director: displayed))
        view.dataSource = { applier.snapshot.director }
        return (view, applier)
    }

    @Test func stageDataReplaysOnThePreviousSnapshotAndEndsAtTheChange() throws {
        let change = ApplierPropertyTests.listChange(old, Changeset.diff(from: old, to: new), new)
        let stages = try #require(change.snapshotsAfterEachStage())
        #expect(stages.count == change.changeset.stages.count)
        #expect(stages.count > 2)
        var replay = old
        for (stage, data) in zip(change.changeset.stages, stages) {
            try stage.apply(to: &replay)
            #expect(data.director == replay)
        }
        #expect(stages.last?.director == new)
    }

    @Test func aOneStageChangeIsItsOwnSnapshot() throws {
        var edited = old
        let changeset = try edited.apply([.insertRows([Row(id: "z")], in: .index(1), at: 0)])
        #expect(changeset.stages.count == 1)
        let change = ApplierPropertyTests.listChange(old, changeset, edited)
        let stages = try #require(change.snapshotsAfterEachStage())
        #expect(stages.count == 1 && stages[0].director == edited)
        #expect(ApplierPropertyTests.listChange(old, Changeset(), old).snapshotsAfterEachStage()?.isEmpty == true)
    }

    @Test func stagesThatDoNotApplyGiveNoDataAndAReload() {
        // A changeset of another list: its paths do not exist in `old`.
        let other = try! Director(sections: [Section(id: "q", rows: (0..<9).map { Row(id: "q\($0)") })])
        let target = try! Director(sections: [Section(id: "q", rows: [Row(id: "q0")])])
        var diff = Changeset.diff(from: other, to: target)
        diff.stages.append(diff.stages[0])  // two stages, the second cannot apply
        let change = ApplierPropertyTests.listChange(old, diff, target)
        #expect(change.snapshotsAfterEachStage() == nil)
        let (view, applier) = setUp(old)
        #expect(applier.apply(change) == .reloaded(.stagesDoNotApply))
        #expect(view.problems.isEmpty && view.displayed == target)
    }

    @Test func headersGoInABatchOfTheirOwn() throws {
        let change = ApplierPropertyTests.listChange(old, Changeset.diff(from: old, to: new), new)
        let (view, applier) = setUp(old)
        let outcome = applier.apply(change)
        #expect(view.problems.isEmpty, "\(view.problems)")
        #expect(view.displayed == new)
        #expect(outcome == .animated(batches: change.changeset.stages.count))
        #expect(change.changeset.stages.last?.supplementaryUpdates.isEmpty == false)
    }

    @Test func offScreenViewsReload() {
        let change = ApplierPropertyTests.listChange(old, Changeset.diff(from: old, to: new), new)
        let (view, applier) = setUp(old)
        view.isOnScreen = false
        #expect(applier.apply(change) == .reloaded(.offScreen))
        #expect(view.batches == 0 && view.reloads == 1 && view.displayed == new)
        #expect(applier.snapshot.director == new)
    }

    @Test func aChangeThatDoesNotStartWhereTheViewIsReloads() {
        let change = ApplierPropertyTests.listChange(old, Changeset.diff(from: old, to: new), new)
        let (view, applier) = setUp(Director())
        #expect(applier.apply(change) == .reloaded(.notContinuous))
        #expect(view.batches == 0 && view.displayed == new)
        // From there, the next change animates.
        let back = ApplierPropertyTests.listChange(new, Changeset.diff(from: new, to: old), old)
        if case .animated = applier.apply(back) {} else { Issue.record("expected an animation") }
        #expect(view.problems.isEmpty && view.displayed == old)
    }

    @Test func largeChangesReload() {
        let small = try! Director(sections: [Section(id: "s")])
        let big = try! Director(sections: [Section(id: "s", rows: (0..<50).map { Row(id: "r\($0)") })])
        let change = ApplierPropertyTests.listChange(small, Changeset.diff(from: small, to: big), big)
        let view = SimulatedListView(displaying: small)
        let applier = ListUpdateApplier(
            target: view, snapshot: ListSnapshot(name: "l", director: small), maximumAnimatedChanges: 10)
        view.dataSource = { applier.snapshot.director }
        #expect(change.changeset.changeCount > 10)
        #expect(applier.apply(change) == .reloaded(.tooManyChanges))
        #expect(view.displayed == big)
    }

    @Test func anEmptyChangeTakesTheNewSnapshotWithoutTouchingTheView() {
        let (view, applier) = setUp(old)
        let change = ListChange(
            cause: .remote, previous: ListSnapshot(name: "l", director: old), changeset: Changeset(),
            snapshot: ListSnapshot(name: "l", director: old, pendingWrites: 2))
        #expect(applier.apply(change) == .unchanged)
        #expect(view.batches == 0 && view.reloads == 0 && applier.snapshot.pendingWrites == 2)
    }
}
