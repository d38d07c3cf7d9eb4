// Never compiled on this project's Linux CI (no UIKit here); reviewed against Apple's
// UICollectionView documentation. Keep it thin: all logic is in ListUpdateApplier.
#if canImport(UIKit) && !os(watchOS)
import FlowSyncCore
import UIKit

/// A `UICollectionView` as a ``ListUpdateTarget``: ``RowPath`` → `IndexPath(item:section:)`.
///
/// Headers and footers (supplementary views) are refreshed with `reloadSections`, in a
/// batch without item changes. (Use ``ListDiffableAdapter`` instead with a diffable
/// data source.)
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
    public func moveSection(_ section: Int, toSection newSection: Int) { collectionView.moveSection(section, toSection: newSection) }
    public func deleteRows(at paths: [RowPath]) { collectionView.deleteItems(at: paths.map(Self.indexPath)) }
    public func insertRows(at paths: [RowPath]) { collectionView.insertItems(at: paths.map(Self.indexPath)) }
    public func moveRow(at path: RowPath, to newPath: RowPath) {
        collectionView.moveItem(at: Self.indexPath(path), to: Self.indexPath(newPath))
    }
    public func reloadRows(at paths: [RowPath]) { collectionView.reloadItems(at: paths.map(Self.indexPath)) }
    public func reloadSupplementary(_ element: SupplementaryUpdate.Element, inSections sections: [Int]) {
        collectionView.reloadSections(IndexSet(sections))
    }

    static func indexPath(_ path: RowPath) -> IndexPath { IndexPath(item: path.row, section: path.section) }
}
#endif
