// Never compiled on this project's Linux CI (no UIKit here); reviewed against Apple's
// UITableView documentation. Keep it thin: all logic is in ListUpdateApplier.
#if canImport(UIKit) && !os(watchOS)
import FlowSyncCore
import UIKit

/// A `UITableView` as a ``ListUpdateTarget``: ``RowPath`` → `IndexPath(row:section:)`.
///
/// ```swift
/// lazy var applier = ListUpdateApplier(target: TableViewUpdateTarget(tableView))
/// ```
///
/// Headers and footers are refreshed with `reloadSections` (the table's only batch API
/// for them), in a batch without row changes.
@MainActor
public struct TableViewUpdateTarget: @preconcurrency ListUpdateTarget {
    /// The table.
    public let tableView: UITableView
    /// The animation for inserted, deleted and reloaded rows and sections.
    public var animation: UITableView.RowAnimation

    public init(_ tableView: UITableView, animation: UITableView.RowAnimation = .automatic) {
        self.tableView = tableView
        self.animation = animation
    }

    public var isOnScreen: Bool { tableView.window != nil }
    public func reloadData() { tableView.reloadData() }
    public func performBatchUpdates(_ updates: @escaping () -> Void) {
        tableView.performBatchUpdates(updates, completion: nil)
    }
    public func deleteSections(_ sections: [Int]) { tableView.deleteSections(IndexSet(sections), with: animation) }
    public func insertSections(_ sections: [Int]) { tableView.insertSections(IndexSet(sections), with: animation) }
    public func moveSection(_ section: Int, toSection newSection: Int) { tableView.moveSection(section, toSection: newSection) }
    public func deleteRows(at paths: [RowPath]) { tableView.deleteRows(at: paths.map(Self.indexPath), with: animation) }
    public func insertRows(at paths: [RowPath]) { tableView.insertRows(at: paths.map(Self.indexPath), with: animation) }
    public func moveRow(at path: RowPath, to newPath: RowPath) {
        tableView.moveRow(at: Self.indexPath(path), to: Self.indexPath(newPath))
    }
    public func reloadRows(at paths: [RowPath]) { tableView.reloadRows(at: paths.map(Self.indexPath), with: animation) }
    public func reloadSupplementary(_ element: SupplementaryUpdate.Element, inSections sections: [Int]) {
        tableView.reloadSections(IndexSet(sections), with: .none)
    }

    static func indexPath(_ path: RowPath) -> IndexPath { IndexPath(row: path.row, section: path.section) }
}
#endif
