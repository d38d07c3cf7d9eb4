import Foundation

// /documentation/UIKit/UICollectionViewDiffableDataSource-9tqpa (iOS 13.0+; UIKit's Swift overlay)
/// The object you use to manage data and provide cells for a collection view.
///
/// Model: `apply(_:animatingDifferences:completion:)` computes the change from the snapshot
/// shown (SimulatedDiffableChanges.swift) and performs it as one batch on the collection
/// view, which validates it like any batch and asks the cell provider for the inserted,
/// reloaded and reconfigured items that are visible; a collection view that has not loaded
/// yet just reloads.
@available(iOS 13.0, *)
@MainActor @preconcurrency
open class UICollectionViewDiffableDataSource<SectionIdentifierType, ItemIdentifierType>: NSObject,
    UICollectionViewDataSource
where
    SectionIdentifierType: Hashable, SectionIdentifierType: Sendable, ItemIdentifierType: Hashable,
    ItemIdentifierType: Sendable
{
    // /documentation/UIKit/UICollectionViewDiffableDataSource-9tqpa/CellProvider
    /// A closure that configures and returns a cell for a collection view from its diffable data source.
    public typealias CellProvider = (
        _ collectionView: UICollectionView, _ indexPath: IndexPath, _ itemIdentifier: ItemIdentifierType
    ) -> UICollectionViewCell?

    // /documentation/UIKit/UICollectionViewDiffableDataSource-9tqpa/SupplementaryViewProvider
    /// A closure that configures and returns a collection view's supplementary view from a diffable data source.
    public typealias SupplementaryViewProvider = (
        _ collectionView: UICollectionView, _ elementKind: String, _ indexPath: IndexPath
    ) -> UICollectionReusableView?

    private weak var collectionView: UICollectionView?
    private let cellProvider: CellProvider
    private var current = NSDiffableDataSourceSnapshot<SectionIdentifierType, ItemIdentifierType>()

    // /documentation/UIKit/UICollectionViewDiffableDataSource-9tqpa/init(collectionView:cellProvider:) (iOS 13.0+)
    /// Creates a diffable data source with the specified cell provider, and connects it to
    /// the specified collection view (it becomes the collection view's data source).
    @MainActor @preconcurrency
    public init(
        collectionView: UICollectionView,
        cellProvider:
            @escaping UICollectionViewDiffableDataSource<SectionIdentifierType, ItemIdentifierType>.CellProvider
    ) {
        self.collectionView = collectionView
        self.cellProvider = cellProvider
        super.init()
        collectionView.dataSource = self
    }

    // /documentation/UIKit/UICollectionViewDiffableDataSource-9tqpa/supplementaryViewProvider-swift.property
    /// The closure that configures and returns the collection view's supplementary views.
    open var supplementaryViewProvider:
        UICollectionViewDiffableDataSource<SectionIdentifierType, ItemIdentifierType>.SupplementaryViewProvider?

    // /documentation/UIKit/UICollectionViewDiffableDataSource-9tqpa/apply(_:animatingDifferences:completion:) (iOS 13.0+)
    /// Updates the UI to reflect the state of the data in the snapshot, optionally animating
    /// the UI changes and executing a completion handler.
    @MainActor @preconcurrency
    open func apply(
        _ snapshot: NSDiffableDataSourceSnapshot<SectionIdentifierType, ItemIdentifierType>,
        animatingDifferences: Bool = true, completion: (() -> Void)? = nil
    ) {
        guard let collectionView else {
            current = snapshot
            completion?()
            return
        }
        for misuse in snapshot.misuses { collectionView.recordFailure(misuse) }
        guard collectionView.presentation.isLoaded, !collectionView.presentation.needsReload else {
            current = snapshot
            collectionView.reloadData()
            completion?()
            return
        }
        let operations = diffableChanges(from: current, to: snapshot)
        collectionView.performBatchUpdates(
            {
                self.current = snapshot
                for operation in operations { collectionView.presentation.record(operation) }
            }, completion: { _ in completion?() })
    }

    // /documentation/UIKit/UICollectionViewDiffableDataSource-9tqpa/apply(_:animatingDifferences:) (iOS 15.0+)
    /// Updates the UI to reflect the state of the data in the snapshot, optionally animating the UI changes.
    @available(iOS 15.0, *)
    @MainActor @preconcurrency
    open func apply(
        _ snapshot: NSDiffableDataSourceSnapshot<SectionIdentifierType, ItemIdentifierType>,
        animatingDifferences: Bool = true
    ) async {
        apply(snapshot, animatingDifferences: animatingDifferences, completion: nil)
    }

    // /documentation/UIKit/UICollectionViewDiffableDataSource-9tqpa/applySnapshotUsingReloadData(_:completion:) (iOS 15.0+)
    /// Resets the UI to reflect the state of the data in the snapshot without computing a diff.
    @available(iOS 15.0, *)
    open func applySnapshotUsingReloadData(
        _ snapshot: NSDiffableDataSourceSnapshot<SectionIdentifierType, ItemIdentifierType>,
        completion: (() -> Void)? = nil
    ) {
        for misuse in snapshot.misuses { collectionView?.recordFailure(misuse) }
        current = snapshot
        collectionView?.reloadData()
        completion?()
    }

    // /documentation/UIKit/UICollectionViewDiffableDataSource-9tqpa/snapshot() (iOS 13.0+)
    /// Returns a representation of the current state of the data in the collection view.
    open func snapshot() -> NSDiffableDataSourceSnapshot<SectionIdentifierType, ItemIdentifierType> {
        var copy = current
        copy.storedReloadedItems = []
        copy.storedReconfiguredItems = []
        copy.storedReloadedSections = []
        copy.misuses = []
        return copy
    }

    // /documentation/UIKit/UICollectionViewDiffableDataSource-9tqpa/itemIdentifier(for:) (iOS 13.0+)
    /// Returns an identifier for the item at the specified index path in the collection view.
    open func itemIdentifier(for indexPath: IndexPath) -> ItemIdentifierType? {
        guard indexPath.count == 2, indexPath.section >= 0, indexPath.section < current.storedSections.count else {
            return nil
        }
        let items = current.storedSections[indexPath.section].items
        return indexPath.item >= 0 && indexPath.item < items.count ? items[indexPath.item] : nil
    }

    // /documentation/UIKit/UICollectionViewDiffableDataSource-9tqpa/indexPath(for:) (iOS 13.0+)
    /// Returns an index path for the item with the specified identifier in the collection view.
    open func indexPath(for itemIdentifier: ItemIdentifierType) -> IndexPath? {
        guard let section = current.sectionOfItem[itemIdentifier], let s = current.sectionIndex(section),
            let item = current.storedSections[s].items.firstIndex(of: itemIdentifier)
        else { return nil }
        return IndexPath(item: item, section: s)
    }

    // /documentation/UIKit/UICollectionViewDiffableDataSource-9tqpa/sectionIdentifier(for:) (iOS 15.0+)
    @available(iOS 15.0, *)
    open func sectionIdentifier(for index: Int) -> SectionIdentifierType? {
        index >= 0 && index < current.storedSections.count ? current.storedSections[index].identifier : nil
    }

    // /documentation/UIKit/UICollectionViewDiffableDataSource-9tqpa/index(for:) (iOS 15.0+)
    @available(iOS 15.0, *)
    open func index(for sectionIdentifier: SectionIdentifierType) -> Int? {
        current.sectionIndex(sectionIdentifier)
    }

    // MARK: UICollectionViewDataSource

    open func numberOfSections(in collectionView: UICollectionView) -> Int {
        current.storedSections.count
    }

    open func collectionView(_ collectionView: UICollectionView, numberOfItemsInSection section: Int) -> Int {
        section >= 0 && section < current.storedSections.count ? current.storedSections[section].items.count : 0
    }

    open func collectionView(
        _ collectionView: UICollectionView, cellForItemAt indexPath: IndexPath
    ) -> UICollectionViewCell {
        guard let item = itemIdentifier(for: indexPath), let cell = cellProvider(collectionView, indexPath, item) else {
            collectionView.recordFailure(
                "UICollectionView dataSource returned a nil cell for item at index path: <NSIndexPath> {length = 2, path = \(indexPath.section) - \(indexPath.item)}"
            )
            let placeholder = UICollectionViewCell(frame: .zero)
            placeholder.assignedReuseIdentifier = "UICollectionViewDiffableDataSourceNilCell"
            return placeholder
        }
        return cell
    }

    open func collectionView(
        _ collectionView: UICollectionView, viewForSupplementaryElementOfKind kind: String, at indexPath: IndexPath
    ) -> UICollectionReusableView {
        if let view = supplementaryViewProvider?(collectionView, kind, indexPath) { return view }
        collectionView.recordFailure(
            "the collection view's data source returned nil from -collectionView:viewForSupplementaryElementOfKind:atIndexPath: for kind \(kind) at index path <NSIndexPath> {length = 2, path = \(indexPath.section) - \(indexPath.item)}; supplementaryViewProvider must return a view"
        )
        return UICollectionReusableView(frame: .zero)
    }

    /// Without reordering handlers UIKit's diffable data source does not move items.
    open func collectionView(_ collectionView: UICollectionView, canMoveItemAt indexPath: IndexPath) -> Bool {
        false
    }

    /// The view moved an item: the data source's snapshot follows.
    open func collectionView(
        _ collectionView: UICollectionView, moveItemAt sourceIndexPath: IndexPath, to destinationIndexPath: IndexPath
    ) {
        current.moveItem(from: sourceIndexPath, to: destinationIndexPath)
    }
}
