// UIKit glue. Compiled on Linux by `make apple-check` against the UIKit stand-in
// (AppleCheck/). The content it applies is DiffableListContent,
// which is platform-neutral and tested on Linux.
#if canImport(UIKit) && !os(watchOS)
import FlowSyncClient
import FlowSyncCore
import UIKit

/// Feeds a `UICollectionViewDiffableDataSource<String, String>` from ``ListChange``s:
/// section IDs are the section identifiers and row IDs (unique in a list) the item
/// identifiers. Rows and headers that changed under the same ID are reconfigured and
/// reloaded; the data source animates the rest itself, so no stages are needed.
///
/// ```swift
/// let adapter = ListDiffableAdapter(dataSource: dataSource)
/// observation = director.observe(on: .main) { change in
///     MainActor.assumeIsolated { adapter.apply(change) }
/// }
/// // In the cell provider: adapter.row(id: itemID)
/// ```
@MainActor
public final class ListDiffableAdapter {
    /// The data source being fed.
    public let dataSource: UICollectionViewDiffableDataSource<String, String>
    /// The list the data source shows (for the cell and supplementary providers).
    public private(set) var snapshot: ListSnapshot

    public init(
        dataSource: UICollectionViewDiffableDataSource<String, String>, snapshot: ListSnapshot = ListSnapshot(name: "")
    ) {
        self.dataSource = dataSource
        self.snapshot = snapshot
    }

    /// The row with that item identifier in ``snapshot``.
    public func row(id: String) -> Row? { snapshot.indexPath(ofModel: id).map { snapshot.director[$0] } }

    /// Shows `change`.
    public func apply(_ change: ListChange, animatingDifferences: Bool = true) {
        let content = DiffableListContent(change: change)
        var diffable = NSDiffableDataSourceSnapshot<String, String>()
        for section in content.sections {
            diffable.appendSections([section.id])
            diffable.appendItems(section.itemIDs, toSection: section.id)
        }
        if !content.reconfiguredItems.isEmpty { diffable.reconfigureItems(content.reconfiguredItems) }
        if !content.reloadedSections.isEmpty { diffable.reloadSections(content.reloadedSections) }
        // The providers read `snapshot` while the data source applies, so it changes first.
        snapshot = change.snapshot
        dataSource.apply(diffable, animatingDifferences: animatingDifferences)
    }
}
#endif
