import FlowSyncClient
import FlowSyncCore
import FlowSyncUI
import Testing

/// The shape of the UIKit conformances (a main-actor struct around a main-actor view,
/// conforming with `@preconcurrency`), compiled and run here, where UIKit is not: the
/// same isolation, closures and call pattern as `TableViewUpdateTarget`.
@MainActor final class MainActorListView {
    var calls: [String] = []
    var inWindow = true
    func performBatchUpdates(_ updates: (() -> Void)?, completion: ((Bool) -> Void)? = nil) {
        calls.append("begin")
        updates?()
        calls.append("end")
        completion?(true)
    }
}

@MainActor struct MainActorUpdateTarget: @preconcurrency ListUpdateTarget {
    let view: MainActorListView
    var isOnScreen: Bool { view.inWindow }
    func reloadData() { view.calls.append("reloadData") }
    func performBatchUpdates(_ updates: @escaping () -> Void) { view.performBatchUpdates(updates, completion: nil) }
    func deleteSections(_ sections: [Int]) { view.calls.append("deleteSections \(sections)") }
    func insertSections(_ sections: [Int]) { view.calls.append("insertSections \(sections)") }
    func moveSection(_ section: Int, toSection newSection: Int) {
        view.calls.append("moveSection \(section) \(newSection)")
    }
    func deleteRows(at paths: [RowPath]) { view.calls.append("deleteRows \(paths)") }
    func insertRows(at paths: [RowPath]) { view.calls.append("insertRows \(paths)") }
    func moveRow(at path: RowPath, to newPath: RowPath) { view.calls.append("moveRow \(path) \(newPath)") }
    func reloadRows(at paths: [RowPath]) { view.calls.append("reloadRows \(paths)") }
    func refreshSupplementaries(_ refreshes: [SupplementaryRefresh]) {
        view.calls.append("refresh \(refreshes)")
    }
}

@Suite(.timeLimit(.minutes(2))) @MainActor struct MainActorTargetTests {
    @Test func aMainActorTargetDrivesTheApplierOnTheMainActor() throws {
        let old = try Director(sections: [Section(id: "s", rows: [Row(id: "a"), Row(id: "b")])])
        let new = try Director(sections: [
            Section(id: "s", header: Array("h".utf8), rows: [Row(id: "b"), Row(id: "c")])
        ])
        let view = MainActorListView()
        let applier = ListUpdateApplier(
            target: MainActorUpdateTarget(view: view), snapshot: ListSnapshot(name: "l", director: old))
        let change = ListChange(
            cause: .remote, previous: ListSnapshot(name: "l", director: old),
            changeset: Changeset.diff(from: old, to: new), snapshot: ListSnapshot(name: "l", director: new))
        guard case .animated(let batches) = applier.apply(change) else {
            Issue.record("not animated")
            return
        }
        #expect(view.calls.filter { $0 == "begin" }.count == batches)
        #expect(view.calls.contains("refresh [section 0 header±]"))  // the header appears
        #expect(applier.snapshot.director == new)
        view.inWindow = false
        #expect(
            applier.apply(
                ListChange(
                    cause: .remote, previous: ListSnapshot(name: "l", director: new),
                    changeset: Changeset.diff(from: new, to: old), snapshot: ListSnapshot(name: "l", director: old)))
                == .reloaded(.offScreen))
        #expect(view.calls.last == "reloadData")
    }
}
