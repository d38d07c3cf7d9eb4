// UIKit glue. Compiled on Linux by `make apple-check` against the UIKit stand-in
// (AppleCheck/), and run there against its simulated collection view. Every decision it
// takes is ListPresenter's (platform-neutral, tested on Linux).
#if canImport(UIKit) && !os(watchOS)
import FlowSyncClient
import FlowSyncCore
import Foundation
import UIKit

/// FlowKit's `CollectionDirector` on a live list: the collection view's data source,
/// delegate (with flow-layout sizing) and prefetch data source, showing every row as an
/// item with the adapter registered for its kind, and animating every change of the
/// list stage by stage. The counterpart of ``TableDirector``; see it for the rules
/// (what the view shows, fallback, writes by identity, drags, headers).
///
/// ```swift
/// director = CollectionDirector(collection: collectionView, list: client.director("photos"))
/// director.register(CollectionCellAdapter<Photo, PhotoCell> { adapter in
///     adapter.events.dequeue = { ctx in ctx.cell?.show(ctx.model) }
///     adapter.sizing = .fixed(CGSize(width: 100, height: 100))
/// })
/// ```
///
/// **Swipe actions** exist in list layouts only: give the list configuration the
/// director's providers, and the adapters' swipe events answer them:
///
/// ```swift
/// var configuration = UICollectionLayoutListConfiguration(appearance: .insetGrouped)
/// configuration.trailingSwipeActionsConfigurationProvider = director.trailingSwipeActionsProvider
/// collectionView.collectionViewLayout = UICollectionViewCompositionalLayout.list(using: configuration)
/// ```
@MainActor
public final class CollectionDirector: NSObject {
    /// The collection view this director is the data source and delegate of.
    public let collectionView: UICollectionView
    /// The live list it shows.
    public let list: ListDirector
    /// Builds the cell of an item no adapter can show. Default: an empty cell of
    /// ``fallbackReuseIdentifier``, sized ``fallbackSize`` in a flow layout.
    public var fallback: ((CollectionFallbackContext) -> UICollectionViewCell)?
    /// The size of an item shown with ``fallback`` in a flow layout (default: zero).
    public var fallbackSize: CGSize = .zero
    /// Called when a write a touch made is refused on the spot.
    public var onWriteFailure: ((FlowSyncError) -> Void)?
    /// The reuse identifier of the default fallback cell and of the empty supplementary
    /// view (owed to a layout that asks for one where a section has none).
    public static let fallbackReuseIdentifier = "FlowSync.fallback"

    lazy var presenter = ListPresenter<DirectorCollectionTarget, any CollectionCellRouting>(
        list: list, target: DirectorCollectionTarget(director: self))
    /// The header and footer adapters, with their decoders.
    var supplementaryAdapters:
        [SupplementaryUpdate.Element: SupplementaryRegistration<any CollectionSupplementaryRouting>] = [:]
    /// What each cell on screen shows, from dequeue to end of display.
    var cellItems: [ObjectIdentifier: PresentedRow<any CollectionCellRouting>] = [:]

    /// A director for `collection` showing `list`, following it on the main queue.
    public init(collection: UICollectionView, list: ListDirector, maximumAnimatedChanges: Int = 2_000) {
        collectionView = collection
        self.list = list
        super.init()
        presenter.applier.maximumAnimatedChanges = maximumAnimatedChanges
        collection.register(UICollectionViewCell.self, forCellWithReuseIdentifier: Self.fallbackReuseIdentifier)
        for kind in [UICollectionView.elementKindSectionHeader, UICollectionView.elementKindSectionFooter] {
            collection.register(
                UICollectionReusableView.self, forSupplementaryViewOfKind: kind,
                withReuseIdentifier: Self.fallbackReuseIdentifier)
        }
        collection.dataSource = self
        collection.delegate = self
        collection.prefetchDataSource = self
        presenter.follow(on: .main)
    }

    // MARK: Registering adapters

    /// Shows rows of `Model.flowKind` with `adapter`, registering its cell class. When
    /// the adapter sizes its items automatically and the layout is a flow layout, the
    /// layout's `estimatedItemSize` is set to `automaticSize` (self-sizing needs it).
    public func register<Model: FlowModel, Cell: UICollectionViewCell>(_ adapter: CollectionCellAdapter<Model, Cell>) {
        collectionView.register(Cell.self, forCellWithReuseIdentifier: adapter.reuseIdentifier)
        presenter.register(adapter, forKind: Model.flowKind, decode: CollectionCellAdapter<Model, Cell>.decoder())
        if adapter.sizing.isAutomatic, let flow = collectionView.collectionViewLayout as? UICollectionViewFlowLayout {
            flow.estimatedItemSize = UICollectionViewFlowLayout.automaticSize
        }
        if presenter.numberOfSections > 0 { collectionView.reloadData() }
    }

    /// Shows every section's header with `adapter`.
    public func register<Value: Decodable, View: UICollectionReusableView>(
        header adapter: CollectionSupplementaryAdapter<Value, View>
    ) {
        register(adapter, for: .header)
    }

    /// Shows every section's footer with `adapter`.
    public func register<Value: Decodable, View: UICollectionReusableView>(
        footer adapter: CollectionSupplementaryAdapter<Value, View>
    ) {
        register(adapter, for: .footer)
    }

    private func register<Value: Decodable, View: UICollectionReusableView>(
        _ adapter: CollectionSupplementaryAdapter<Value, View>,
        for element: SupplementaryUpdate.Element
    ) {
        collectionView.register(
            View.self, forSupplementaryViewOfKind: Self.kind(of: element), withReuseIdentifier: adapter.reuseIdentifier)
        supplementaryAdapters[element] = SupplementaryRegistration<any CollectionSupplementaryRouting>(
            adapter: adapter,
            decode: adapter.valueDecoder)
        presenter.supplementaryValues.removeAll()
        if presenter.numberOfSections > 0 { collectionView.reloadData() }
    }

    // MARK: Reading what the view shows

    /// The list as the collection view shows it.
    public var snapshot: ListSnapshot { presenter.snapshot }

    /// The model the collection view shows at `indexPath` as `M`, if it is one.
    public func model<M: FlowModel>(at indexPath: IndexPath, as type: M.Type = M.self) -> M? {
        presenter.item(at: Self.rowPath(indexPath))?.model(as: M.self)
    }

    /// Where the collection view shows the row with that ID.
    public func indexPath(ofModel id: String) -> IndexPath? {
        presenter.snapshot.indexPath(ofModel: id).map(Self.indexPath)
    }

    /// Called when a decoded model cannot be read from a row (once per row version).
    public var onDecodingFailure: ((ModelDecodingFailure) -> Void)? {
        get { presenter.onDecodingFailure }
        set { presenter.onDecodingFailure = newValue }
    }

    /// For `UICollectionLayoutListConfiguration.leadingSwipeActionsConfigurationProvider`:
    /// the leading swipe actions of the adapter of the item under the swipe.
    public var leadingSwipeActionsProvider: UICollectionLayoutListConfiguration.SwipeActionsConfigurationProvider {
        { [weak self] indexPath in self?.swipeActions(leading: true, at: indexPath) }
    }

    /// For `UICollectionLayoutListConfiguration.trailingSwipeActionsConfigurationProvider`.
    public var trailingSwipeActionsProvider: UICollectionLayoutListConfiguration.SwipeActionsConfigurationProvider {
        { [weak self] indexPath in self?.swipeActions(leading: false, at: indexPath) }
    }

    // MARK: Internals shared by the extensions

    static func rowPath(_ indexPath: IndexPath) -> RowPath { RowPath(section: indexPath.section, row: indexPath.item) }
    static func indexPath(_ path: RowPath) -> IndexPath { IndexPath(item: path.row, section: path.section) }

    static func kind(of element: SupplementaryUpdate.Element) -> String {
        element == .header ? UICollectionView.elementKindSectionHeader : UICollectionView.elementKindSectionFooter
    }

    static func element(ofKind kind: String) -> SupplementaryUpdate.Element? {
        switch kind {
        case UICollectionView.elementKindSectionHeader: return .header
        case UICollectionView.elementKindSectionFooter: return .footer
        default: return nil
        }
    }

    private func swipeActions(leading: Bool, at indexPath: IndexPath) -> UISwipeActionsConfiguration? {
        guard let item = presenter.item(at: Self.rowPath(indexPath)), let adapter = item.adapter else { return nil }
        return adapter.swipeActions(leading: leading, item, at: indexPath, director: self)
    }

    /// The decoded header or footer of `section` with its adapter, when both exist.
    func supplementary(
        _ element: SupplementaryUpdate.Element, inSection section: Int
    )
        -> PresentedSupplementary<any CollectionSupplementaryRouting>?
    {
        presenter.supplementary(element, inSection: section, registrations: supplementaryAdapters)
    }

    /// Refreshes changed headers and footers inside the applier's batch, each section
    /// once (``SupplementaryRefresh/steps(_:)``): one that appears or goes reloads its
    /// section (its layout changes); one that only changed is reconfigured in its visible
    /// view, in place. Without an adapter nothing is shown, so nothing is refreshed. The
    /// layout is invalidated so sizes are asked again.
    func refreshSupplementaries(_ refreshes: [SupplementaryRefresh]) {
        // An element without an adapter shows no view: nothing to refresh for it.
        let shownRefreshes = refreshes.map { refresh -> SupplementaryRefresh in
            var refresh = refresh
            if supplementaryAdapters[.header] == nil {
                (refresh.header, refresh.headerPresenceChanged) = (false, false)
            }
            if supplementaryAdapters[.footer] == nil {
                (refresh.footer, refresh.footerPresenceChanged) = (false, false)
            }
            return refresh
        }
        var reload = IndexSet()
        for step in SupplementaryRefresh.steps(shownRefreshes) {
            switch step {
            case .reloadSection(let section):
                reload.insert(section)
            case .refreshInPlace(let section, let element):
                guard
                    let view = collectionView.supplementaryView(
                        forElementKind: Self.kind(of: element),
                        at: IndexPath(item: 0, section: section))
                else { continue }
                guard let shown = supplementary(element, inSection: section),
                    shown.registration.adapter.configure(
                        view, value: shown.value, section: section, sectionID: shown.sectionID,
                        element: element, director: self)
                else {
                    reload.insert(section)
                    continue
                }
            }
        }
        collectionView.collectionViewLayout.invalidateLayout()
        if !reload.isEmpty { collectionView.reloadSections(reload) }
    }

    func report(_ error: FlowSyncError) {
        onWriteFailure?(error)
    }
}

/// The collection view as the presenter's update target.
@MainActor
struct DirectorCollectionTarget: @preconcurrency ListUpdateTarget {
    unowned let director: CollectionDirector

    private var view: UICollectionView { director.collectionView }

    var isOnScreen: Bool { view.window != nil }
    func reloadData() { view.reloadData() }
    func performBatchUpdates(_ updates: @escaping () -> Void) { view.performBatchUpdates(updates, completion: nil) }
    func deleteSections(_ sections: [Int]) { view.deleteSections(IndexSet(sections)) }
    func insertSections(_ sections: [Int]) { view.insertSections(IndexSet(sections)) }
    func moveSection(_ section: Int, toSection newSection: Int) { view.moveSection(section, toSection: newSection) }
    func deleteRows(at paths: [RowPath]) { view.deleteItems(at: paths.map(CollectionDirector.indexPath)) }
    func insertRows(at paths: [RowPath]) { view.insertItems(at: paths.map(CollectionDirector.indexPath)) }
    func moveRow(at path: RowPath, to newPath: RowPath) {
        view.moveItem(at: CollectionDirector.indexPath(path), to: CollectionDirector.indexPath(newPath))
    }
    func reloadRows(at paths: [RowPath]) { view.reloadItems(at: paths.map(CollectionDirector.indexPath)) }
    func refreshSupplementaries(_ refreshes: [SupplementaryRefresh]) { director.refreshSupplementaries(refreshes) }
}
#endif
