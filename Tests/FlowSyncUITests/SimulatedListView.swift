import FlowSyncCore
import FlowSyncTestSupport
import FlowSyncUI

/// A table view as UIKit runs one, for the applier: it remembers what it showed, and
/// each `performBatchUpdates` is checked by ``UIKitBatchSimulator/performBatch`` against
/// what the data source reports right after the updates block. Every "Invalid update"
/// is recorded in ``problems``.
final class SimulatedListView: ListUpdateTarget {
    /// What the view showed after its last batch or reload.
    private(set) var displayed: Director
    /// What the data source holds now (the applier's snapshot, typically).
    var dataSource: () -> Director = { Director() }
    var isOnScreen = true
    private(set) var problems: [String] = []
    private(set) var batches = 0
    private(set) var reloads = 0
    /// The batch being recorded, while an updates block runs.
    private var recording: Recording?

    private struct Recording {
        var sectionDeletes: [Int] = []
        var sectionInserts: [Int] = []
        var sectionMoves: [SectionMove] = []
        var rowDeletes: [RowPath] = []
        var rowInserts: [RowPath] = []
        var rowMoves: [RowMove] = []
        var rowReloads: [RowPath] = []
        var supplementary: [(SupplementaryUpdate.Element, Int)] = []
        var refreshedSections: [Int] = []
    }

    init(displaying director: Director) {
        displayed = director
    }

    func reloadData() {
        reloads += 1
        displayed = dataSource()
    }

    func performBatchUpdates(_ updates: @escaping () -> Void) {
        guard recording == nil else {
            problems.append("nested performBatchUpdates")
            return
        }
        batches += 1
        recording = Recording()
        updates()
        let calls = recording!
        recording = nil
        let source = dataSource()
        if Set(calls.refreshedSections).count != calls.refreshedSections.count {
            return fail("a section refreshed twice in one batch: \(calls.refreshedSections)")
        }
        // The stage UIKit would run, with the cells and headers it would ask the data
        // source for.
        var stage = ChangesetStage()
        stage.sectionDeletes = calls.sectionDeletes
        stage.sectionMoves = calls.sectionMoves
        stage.rowDeletes = calls.rowDeletes
        stage.rowMoves = calls.rowMoves
        for index in calls.sectionInserts {
            guard index < source.sections.count else {
                return fail("insertSections(\(index)) beyond the data source's \(source.sections.count) sections")
            }
            stage.sectionInserts.append(SectionInsert(index: index, section: source.sections[index]))
        }
        for path in calls.rowInserts {
            guard exists(path, in: source) else { return fail("insertRows(at: \(path)) not in the data source") }
            stage.rowInserts.append(RowAtPath(path: path, row: source[path]))
        }
        for path in calls.rowReloads {
            guard exists(path, in: displayed) else { return fail("reloadRows(at: \(path)) not shown") }
            let id = displayed[path].id
            guard let now = source.rowPath(id: id) else { return fail("reloaded row \(id) is not in the data source") }
            stage.rowUpdates.append(RowAtPath(path: path, row: source[now]))
        }
        for (element, index) in calls.supplementary {
            guard index < source.sections.count else {
                return fail("reload of \(element) \(index) beyond the data source")
            }
            let section = source.sections[index]
            stage.supplementaryUpdates.append(
                SupplementaryUpdate(
                    section: index, element: element,
                    value: element == .header ? section.header : section.footer))
        }
        if let problem = UIKitBatchSimulator.performBatch(stage, displayed: &displayed, dataSource: source) {
            fail(problem)
        }
    }

    /// The user dragged a row, as UIKit's reorder does: the view moves the cell itself,
    /// with no batch, before telling its data source (`to` is an index path after the
    /// move).
    func userMoved(from: RowPath, to: RowPath) {
        do {
            _ = try displayed.apply([
                .moveRow(.index(from.row, in: .index(from.section)), toSection: .index(to.section), at: to.row)
            ])
        } catch {
            problems.append("the user cannot drag \(from) to \(to): \(error)")
        }
    }

    private func fail(_ problem: String) {
        problems.append("batch \(batches): \(problem)")
        displayed = dataSource()  // as if the app survived; later batches are checked from there
    }

    private func exists(_ path: RowPath, in director: Director) -> Bool {
        path.section >= 0 && path.section < director.sections.count && path.row >= 0
            && path.row < director.sections[path.section].rows.count
    }

    private func record(_ body: (inout Recording) -> Void) {
        guard recording != nil else {
            problems.append("an update outside performBatchUpdates")
            return
        }
        body(&recording!)
    }

    func deleteSections(_ sections: [Int]) { record { $0.sectionDeletes += sections } }
    func insertSections(_ sections: [Int]) { record { $0.sectionInserts += sections } }
    func moveSection(_ section: Int, toSection newSection: Int) {
        record { $0.sectionMoves.append(SectionMove(from: section, to: newSection)) }
    }
    func deleteRows(at paths: [RowPath]) { record { $0.rowDeletes += paths } }
    func insertRows(at paths: [RowPath]) { record { $0.rowInserts += paths } }
    func moveRow(at path: RowPath, to newPath: RowPath) {
        record { $0.rowMoves.append(RowMove(from: path, to: newPath)) }
    }
    func reloadRows(at paths: [RowPath]) { record { $0.rowReloads += paths } }
    func refreshSupplementaries(_ refreshes: [SupplementaryRefresh]) {
        record { recording in
            for refresh in refreshes {
                recording.refreshedSections.append(refresh.section)
                if refresh.header { recording.supplementary.append((.header, refresh.section)) }
                if refresh.footer { recording.supplementary.append((.footer, refresh.section)) }
            }
        }
    }
}
