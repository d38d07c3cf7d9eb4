@_spi(Simulation) import UIKit

/// A table cell that counts its reuses and shows the row's text.
@MainActor
final class TextCell: UITableViewCell {
    var reuseCount = 0
    var text: String?

    required override init(style: UITableViewCell.CellStyle, reuseIdentifier: String?) {
        super.init(style: style, reuseIdentifier: reuseIdentifier)
    }

    required init?(coder: NSCoder) { fatalError("not used") }

    override func prepareForReuse() {
        super.prepareForReuse()
        reuseCount += 1
        text = nil
    }
}

/// An array-of-arrays table data source and delegate that logs every call it gets.
@MainActor
final class ArrayTable: NSObject, UITableViewDataSource, UITableViewDelegate, UITableViewDataSourcePrefetching {
    var sections: [[String]]
    var headerTitles: [Int: String] = [:]
    var log: [String] = []
    var identifier = "Text"
    /// When set, answers the delegate's heightForRowAt.
    var fixedRowHeight: CGFloat?
    var willSelect: ((IndexPath) -> IndexPath?)?
    var shouldHighlight: (IndexPath) -> Bool = { _ in true }
    var canEdit: (IndexPath) -> Bool = { _ in true }
    var canMove: (IndexPath) -> Bool = { _ in true }
    var retarget: ((IndexPath, IndexPath) -> IndexPath)?
    var trailingActions: ((IndexPath) -> UISwipeActionsConfiguration?)?
    var leadingActions: ((IndexPath) -> UISwipeActionsConfiguration?)?
    /// What commit(.delete) does: by default deletes the row from the data and the table.
    var onCommitDelete: ((UITableView, IndexPath) -> Void)?
    var headerViews: ((UITableView, Int) -> UIView?)?

    init(_ sections: [[String]]) {
        self.sections = sections
    }

    func numberOfSections(in tableView: UITableView) -> Int {
        log.append("numberOfSections")
        return sections.count
    }

    func tableView(_ tableView: UITableView, numberOfRowsInSection section: Int) -> Int {
        log.append("numberOfRows(\(section))")
        return sections[section].count
    }

    func tableView(_ tableView: UITableView, cellForRowAt indexPath: IndexPath) -> UITableViewCell {
        log.append("cellForRow(\(indexPath.section)-\(indexPath.row))")
        let cell = tableView.dequeueReusableCell(withIdentifier: identifier, for: indexPath)
        (cell as? TextCell)?.text = sections[indexPath.section][indexPath.row]
        return cell
    }

    func tableView(_ tableView: UITableView, titleForHeaderInSection section: Int) -> String? {
        headerTitles[section]
    }

    func tableView(_ tableView: UITableView, viewForHeaderInSection section: Int) -> UIView? {
        headerViews?(tableView, section)
    }

    func tableView(_ tableView: UITableView, heightForRowAt indexPath: IndexPath) -> CGFloat {
        fixedRowHeight ?? tableView.rowHeight
    }

    func tableView(_ tableView: UITableView, willDisplay cell: UITableViewCell, forRowAt indexPath: IndexPath) {
        log.append("willDisplay(\(indexPath.section)-\(indexPath.row))")
    }

    func tableView(_ tableView: UITableView, didEndDisplaying cell: UITableViewCell, forRowAt indexPath: IndexPath) {
        log.append("didEndDisplaying(\(indexPath.section)-\(indexPath.row))")
    }

    func tableView(_ tableView: UITableView, willDisplayHeaderView view: UIView, forSection section: Int) {
        log.append("willDisplayHeader(\(section))")
    }

    func tableView(_ tableView: UITableView, didEndDisplayingHeaderView view: UIView, forSection section: Int) {
        log.append("didEndDisplayingHeader(\(section))")
    }

    func tableView(_ tableView: UITableView, shouldHighlightRowAt indexPath: IndexPath) -> Bool {
        log.append("shouldHighlight(\(indexPath.section)-\(indexPath.row))")
        return shouldHighlight(indexPath)
    }

    func tableView(_ tableView: UITableView, willSelectRowAt indexPath: IndexPath) -> IndexPath? {
        log.append("willSelect(\(indexPath.section)-\(indexPath.row))")
        return willSelect.map { $0(indexPath) } ?? indexPath
    }

    func tableView(_ tableView: UITableView, didSelectRowAt indexPath: IndexPath) {
        log.append("didSelect(\(indexPath.section)-\(indexPath.row))")
    }

    func tableView(_ tableView: UITableView, willDeselectRowAt indexPath: IndexPath) -> IndexPath? {
        log.append("willDeselect(\(indexPath.section)-\(indexPath.row))")
        return indexPath
    }

    func tableView(_ tableView: UITableView, didDeselectRowAt indexPath: IndexPath) {
        log.append("didDeselect(\(indexPath.section)-\(indexPath.row))")
    }

    func tableView(_ tableView: UITableView, canEditRowAt indexPath: IndexPath) -> Bool {
        log.append("canEdit(\(indexPath.section)-\(indexPath.row))")
        return canEdit(indexPath)
    }

    func tableView(_ tableView: UITableView, canMoveRowAt indexPath: IndexPath) -> Bool {
        log.append("canMove(\(indexPath.section)-\(indexPath.row))")
        return canMove(indexPath)
    }

    func tableView(
        _ tableView: UITableView, commit editingStyle: UITableViewCell.EditingStyle, forRowAt indexPath: IndexPath
    ) {
        log.append("commit(\(editingStyle == .delete ? "delete" : "other"), \(indexPath.section)-\(indexPath.row))")
        guard editingStyle == .delete else { return }
        if let onCommitDelete {
            onCommitDelete(tableView, indexPath)
        } else {
            sections[indexPath.section].remove(at: indexPath.row)
            tableView.deleteRows(at: [indexPath], with: .automatic)
        }
    }

    func tableView(_ tableView: UITableView, moveRowAt sourceIndexPath: IndexPath, to destinationIndexPath: IndexPath) {
        log.append(
            "moveRow(\(sourceIndexPath.section)-\(sourceIndexPath.row) -> \(destinationIndexPath.section)-\(destinationIndexPath.row), uncommitted: \(tableView.hasUncommittedUpdates))"
        )
        let item = sections[sourceIndexPath.section].remove(at: sourceIndexPath.row)
        sections[destinationIndexPath.section].insert(item, at: destinationIndexPath.row)
    }

    func tableView(
        _ tableView: UITableView, targetIndexPathForMoveFromRowAt sourceIndexPath: IndexPath,
        toProposedIndexPath proposedDestinationIndexPath: IndexPath
    ) -> IndexPath {
        log.append(
            "targetIndexPath(\(sourceIndexPath.section)-\(sourceIndexPath.row) -> \(proposedDestinationIndexPath.section)-\(proposedDestinationIndexPath.row))"
        )
        return retarget.map { $0(sourceIndexPath, proposedDestinationIndexPath) } ?? proposedDestinationIndexPath
    }

    func tableView(
        _ tableView: UITableView, trailingSwipeActionsConfigurationForRowAt indexPath: IndexPath
    ) -> UISwipeActionsConfiguration? {
        log.append("trailingSwipe(\(indexPath.section)-\(indexPath.row))")
        return trailingActions?(indexPath)
    }

    func tableView(
        _ tableView: UITableView, leadingSwipeActionsConfigurationForRowAt indexPath: IndexPath
    ) -> UISwipeActionsConfiguration? {
        log.append("leadingSwipe(\(indexPath.section)-\(indexPath.row))")
        return leadingActions?(indexPath)
    }

    func tableView(_ tableView: UITableView, willBeginEditingRowAt indexPath: IndexPath) {
        log.append("willBeginEditing(\(indexPath.section)-\(indexPath.row))")
    }

    func tableView(_ tableView: UITableView, didEndEditingRowAt indexPath: IndexPath?) {
        log.append("didEndEditing(\(indexPath.map { "\($0.section)-\($0.row)" } ?? "nil"))")
    }

    func tableView(_ tableView: UITableView, prefetchRowsAt indexPaths: [IndexPath]) {
        log.append("prefetch(\(indexPaths.map { "\($0.section)-\($0.row)" }.joined(separator: ",")))")
    }

    func tableView(_ tableView: UITableView, cancelPrefetchingForRowsAt indexPaths: [IndexPath]) {
        log.append("cancelPrefetch(\(indexPaths.map { "\($0.section)-\($0.row)" }.joined(separator: ",")))")
    }

    /// Log entries starting with a prefix.
    func calls(_ prefix: String) -> [String] { log.filter { $0.hasPrefix(prefix) } }
}

/// A 320 × 440 table (10 rows of 44 points) with no section header/footer space,
/// `TextCell` registered, wired to `source`, laid out once.
@MainActor
func makeTable(_ source: ArrayTable, height: CGFloat = 440, layout: Bool = true) -> UITableView {
    let table = UITableView(frame: CGRect(x: 0, y: 0, width: 320, height: height), style: .plain)
    table.register(TextCell.self, forCellReuseIdentifier: "Text")
    table.rowHeight = 44
    table.sectionHeaderHeight = 0
    table.sectionFooterHeight = 0
    table.dataSource = source
    table.delegate = source
    if layout { table.layoutIfNeeded() }
    return table
}

/// Every shown cell displays the data source's row at its index path, and the shown
/// counts equal the data source's.
@MainActor
func shownMatchesData(_ table: UITableView, _ source: ArrayTable) -> Bool {
    guard table.simulatedRowCounts == source.sections.map(\.count) else { return false }
    for path in table.simulatedVisibleIndexPaths {
        guard let cell = table.simulatedCell(at: path) as? TextCell,
            cell.text == source.sections[path.section][path.row]
        else { return false }
    }
    return true
}

func rows(_ count: Int, _ prefix: String = "r") -> [String] {
    (0..<count).map { "\(prefix)\($0)" }
}

/// A small deterministic generator (SplitMix64), so a failing seed can be replayed.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
