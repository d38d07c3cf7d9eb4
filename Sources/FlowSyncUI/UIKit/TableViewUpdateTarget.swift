// UIKit glue. Compiled on Linux by `make apple-check` against the UIKit stand-in
// (AppleCheck/), and run there against its simulated table view. All logic is in
// ListUpdateApplier, which is platform-neutral.
#if canImport(UIKit) && !os(watchOS)
import FlowSyncCore
import UIKit

/// A `UITableView` as a ``ListUpdateTarget``, for an app that keeps its own data source
/// (a ``TableDirector`` needs none of this): ``RowPath`` → `IndexPath(row:section:)`.
///
/// ```swift
/// lazy var applier = ListUpdateApplier(target: TableViewUpdateTarget(tableView))
/// ```
///
/// Headers and footers are refreshed with `reloadSections` (the table's only batch API
/// for a header it did not build itself), once per section, in a batch without row
/// changes; that reloads the section's visible cells too. A ``TableDirector`` refreshes
/// them in place instead.
@MainActor
public struct TableViewUpdateTarget: @preconcurrency ListUpdateTarget {
    /// The table.
    public let tableView: UITableView
    /// The animation for each kind of change.
    public var animations: TableReloadAnimations

    public init(_ tableView: UITableView, animations: TableReloadAnimations = .default()) {
        self.tableView = tableView
        self.animations = animations
    }

    public var isOnScreen: Bool { tableView.window != nil }
    public func reloadData() { tableView.reloadData() }
    public func performBatchUpdates(_ updates: @escaping () -> Void) {
        tableView.performBatchUpdates(updates, completion: nil)
    }
    public func deleteSections(_ sections: [Int]) {
        tableView.deleteSections(IndexSet(sections), with: animations.sectionDeletionAnimation)
    }
    public func insertSections(_ sections: [Int]) {
        tableView.insertSections(IndexSet(sections), with: animations.sectionInsertionAnimation)
    }
    public func moveSection(_ section: Int, toSection newSection: Int) {
        tableView.moveSection(section, toSection: newSection)
    }
    public func deleteRows(at paths: [RowPath]) {
        tableView.deleteRows(at: paths.map(IndexPath.init), with: animations.rowDeletionAnimation)
    }
    public func insertRows(at paths: [RowPath]) {
        tableView.insertRows(at: paths.map(IndexPath.init), with: animations.rowInsertionAnimation)
    }
    public func moveRow(at path: RowPath, to newPath: RowPath) {
        tableView.moveRow(at: IndexPath(path), to: IndexPath(newPath))
    }
    public func reloadRows(at paths: [RowPath]) {
        tableView.reloadRows(at: paths.map(IndexPath.init), with: animations.rowReloadAnimation)
    }
    public func refreshSupplementaries(_ refreshes: [SupplementaryRefresh]) {
        tableView.reloadSections(IndexSet(refreshes.map(\.section)), with: animations.sectionReloadAnimation)
    }
}

extension IndexPath {
    /// The index path of a table row or collection item at `path`.
    public init(_ path: RowPath) {
        self.init(row: path.row, section: path.section)
    }
}

extension RowPath {
    /// The row path of a table or collection index path (`row` and `item` are the same
    /// index in UIKit).
    public init(_ indexPath: IndexPath) {
        self.init(section: indexPath.section, row: indexPath.row)
    }
}
#endif
