// UIKit glue. Compiled on Linux by `make apple-check` against the UIKit stand-in
// (AppleCheck/), and run there against its simulated collection view. All logic is in
// ListUpdateApplier, which is platform-neutral.
#if canImport(UIKit) && !os(watchOS)
import FlowSyncCore
import UIKit

/// A `UICollectionView` as a ``ListUpdateTarget``, for an app that keeps its own data
/// source (a ``CollectionDirector`` needs none of this): ``RowPath`` →
/// `IndexPath(item:section:)`.
///
/// Headers and footers (supplementary views) are refreshed with `reloadSections`, once
/// per section, in a batch without item changes. (Use ``ListDiffableAdapter`` instead
/// with a diffable data source, or a ``CollectionDirector``, which refreshes them in
/// place.)
@MainActor
public struct CollectionViewUpdateTarget: @preconcurrency ListUpdateTarget {
    /// The collection view.
    public let collectionView: UICollectionView

    public init(_ collectionView: UICollectionView) {
        self.collectionView = collectionView
    }

    public var isOnScreen: Bool { collectionView.window != nil }
    public func reloadData() { collectionView.reloadData() }
    public func performBatchUpdates(_ updates: @escaping () -> Void) {
        collectionView.performBatchUpdates(updates, completion: nil)
    }
    public func deleteSections(_ sections: [Int]) { collectionView.deleteSections(IndexSet(sections)) }
    public func insertSections(_ sections: [Int]) { collectionView.insertSections(IndexSet(sections)) }
    public func moveSection(_ section: Int, toSection newSection: Int) {
        collectionView.moveSection(section, toSection: newSection)
    }
    public func deleteRows(at paths: [RowPath]) { collectionView.deleteItems(at: paths.map(Self.indexPath)) }
    public func insertRows(at paths: [RowPath]) { collectionView.insertItems(at: paths.map(Self.indexPath)) }
    public func moveRow(at path: RowPath, to newPath: RowPath) {
        collectionView.moveItem(at: Self.indexPath(path), to: Self.indexPath(newPath))
    }
    public func reloadRows(at paths: [RowPath]) { collectionView.reloadItems(at: paths.map(Self.indexPath)) }
    public func refreshSupplementaries(_ refreshes: [SupplementaryRefresh]) {
        collectionView.reloadSections(IndexSet(refreshes.map(\.section)))
    }

    static func indexPath(_ path: RowPath) -> IndexPath { IndexPath(item: path.row, section: path.section) }
}
#endif
