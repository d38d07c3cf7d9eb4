// UIKit glue. Compiled on Linux by `make apple-check` against the UIKit stand-in
// (AppleCheck/), and run there against its simulated collection view.
#if canImport(UIKit) && !os(watchOS)
import FlowSyncClient
import FlowSyncCore
import Foundation
import UIKit

/// Shows the rows of one kind — `Model.flowKind` — as items in cells of one class, and
/// hands their events to typed closures: FlowKit's `CollectionCellAdapter<Model, Cell>`.
///
/// ```swift
/// director.register(CollectionCellAdapter<Photo, PhotoCell> { adapter in
///     adapter.events.dequeue = { ctx in ctx.cell?.show(ctx.model) }
///     adapter.events.didSelect = { ctx in open(ctx.model) }
///     adapter.sizing = .fixed(CGSize(width: 100, height: 100))
/// })
/// ```
@MainActor
public final class CollectionCellAdapter<Model: FlowModel, Cell: UICollectionViewCell> {
    /// The context every event receives.
    public typealias Context = CollectionItemContext<Model, Cell>

    /// The adapter's events; each is optional, and UIKit's default applies to those not
    /// set.
    public struct Events {
        /// Configures a dequeued cell for its item (also after its row changed).
        public var dequeue: ((Context) -> Void)?
        /// The cell is about to appear.
        public var willDisplay: ((Context) -> Void)?
        /// The cell left the screen (the context holds the model it showed).
        public var endDisplay: ((Context) -> Void)?
        /// Whether the item highlights when touched (default: yes).
        public var shouldHighlight: ((Context) -> Bool)?
        /// Whether the item may be selected (default: yes).
        public var shouldSelect: ((Context) -> Bool)?
        /// The item was selected.
        public var didSelect: ((Context) -> Void)?
        /// The item was deselected.
        public var didDeselect: ((Context) -> Void)?
        /// The actions a swipe from the leading edge shows, in a list layout whose
        /// configuration uses ``CollectionDirector/leadingSwipeActionsProvider``.
        public var leadingSwipeActions: ((Context) -> UISwipeActionsConfiguration?)?
        /// The actions a swipe from the trailing edge shows, likewise.
        public var trailingSwipeActions: ((Context) -> UISwipeActionsConfiguration?)?
        /// Whether the item can be dragged (default: ``CollectionCellAdapter/canReorder``).
        public var canMoveItem: ((Context) -> Bool)?
        /// Where a drag may drop: given the proposed index path, answer the one to use.
        public var moveAdjustDestination: ((Context, IndexPath) -> IndexPath)?
        /// A drag ended and was written through the list (or refused).
        public var moveItem: ((CollectionMoveContext<Model>) -> Void)?
        /// Items coming into view soon: their models and index paths.
        public var prefetch: (([Model], [IndexPath]) -> Void)?
        /// Items no longer coming into view.
        public var cancelPrefetch: (([Model], [IndexPath]) -> Void)?
        /// The item's size, when it depends on the model (overrides ``CollectionCellAdapter/sizing``).
        public var itemSize: ((Context) -> CGSize)?

        public init() {}
    }

    /// The cells' reuse identifier (default: the cell class's name).
    public let reuseIdentifier: String
    /// The events.
    public var events = Events()
    /// The events, by FlowKit's name for them: `adapter.on.dequeue = { ctx in … }`.
    public var on: Events {
        get { events }
        set { events = newValue }
    }
    /// How large the items are in a flow layout (default: the layout's `itemSize`).
    public var sizing: ItemSizing = .default
    /// Whether items can be dragged to reorder, through the list.
    public var canReorder = false

    /// An adapter for `Model` rows in `Cell`s, configured by `configure`.
    public init(reuseIdentifier: String? = nil, _ configure: ((CollectionCellAdapter) -> Void)? = nil) {
        self.reuseIdentifier = reuseIdentifier ?? String(describing: Cell.self)
        configure?(self)
    }

    /// How the presenter decodes this adapter's rows (see ``TableCellAdapter``).
    nonisolated static func decoder() -> (Row) throws -> Any {
        let decoder = JSONDecoder()
        return { row in try decoder.decode(Model.self, from: Data(row.payload)) }
    }
}

/// FlowKit's name for a collection cell adapter.
public typealias CollectionAdapter<Model: FlowModel, Cell: UICollectionViewCell> = CollectionCellAdapter<Model, Cell>

// MARK: - Routing (erased, for the director)

/// One event a collection director routes, with what the adapter answers.
@MainActor
enum CollectionItemEvent {
    case configure(UICollectionViewCell)
    case willDisplay(UICollectionViewCell)
    case didEndDisplaying(UICollectionViewCell)
    case didSelect
    case didDeselect
}

/// A cell adapter with its types erased: what ``CollectionDirector`` routes items to.
@MainActor
protocol CollectionCellRouting: AnyObject {
    var reuseIdentifier: String { get }
    var sizing: ItemSizing { get }
    func handle(
        _ event: CollectionItemEvent, _ item: PresentedRow<any CollectionCellRouting>, at indexPath: IndexPath,
        director: CollectionDirector)
    func shouldHighlight(
        _ item: PresentedRow<any CollectionCellRouting>, at indexPath: IndexPath, director: CollectionDirector
    ) -> Bool
    func shouldSelect(
        _ item: PresentedRow<any CollectionCellRouting>, at indexPath: IndexPath, director: CollectionDirector
    ) -> Bool
    func swipeActions(
        leading: Bool, _ item: PresentedRow<any CollectionCellRouting>, at indexPath: IndexPath,
        director: CollectionDirector
    ) -> UISwipeActionsConfiguration?
    func canMove(
        _ item: PresentedRow<any CollectionCellRouting>, at indexPath: IndexPath, director: CollectionDirector
    ) -> Bool
    func moveTarget(
        _ item: PresentedRow<any CollectionCellRouting>, at indexPath: IndexPath, proposed: IndexPath,
        director: CollectionDirector
    ) -> IndexPath
    func didMove(
        _ item: PresentedRow<any CollectionCellRouting>, from: IndexPath, to: IndexPath,
        result: Result<WriteTicket, FlowSyncError>)
    func prefetch(_ items: [PresentedRow<any CollectionCellRouting>], cancel: Bool)
    func size(
        _ item: PresentedRow<any CollectionCellRouting>, at indexPath: IndexPath, director: CollectionDirector
    ) -> CGSize?
}

extension CollectionCellAdapter: CollectionCellRouting {
    private func context(
        _ item: PresentedRow<any CollectionCellRouting>, _ cell: UICollectionViewCell?, _ indexPath: IndexPath,
        _ director: CollectionDirector
    ) -> Context? {
        guard let model = item.model(as: Model.self) else { return nil }
        return Context(
            model: model, cell: cell as? Cell, indexPath: indexPath, row: item.row, handle: item.handle,
            director: director)
    }

    func handle(
        _ event: CollectionItemEvent, _ item: PresentedRow<any CollectionCellRouting>, at indexPath: IndexPath,
        director: CollectionDirector
    ) {
        switch event {
        case .configure(let cell):
            if let handler = events.dequeue, let ctx = context(item, cell, indexPath, director) { handler(ctx) }
        case .willDisplay(let cell):
            if let handler = events.willDisplay, let ctx = context(item, cell, indexPath, director) { handler(ctx) }
        case .didEndDisplaying(let cell):
            if let handler = events.endDisplay, let ctx = context(item, cell, indexPath, director) { handler(ctx) }
        case .didSelect:
            if let handler = events.didSelect,
                let ctx = context(item, director.collectionView.cellForItem(at: indexPath), indexPath, director)
            {
                handler(ctx)
            }
        case .didDeselect:
            if let handler = events.didDeselect,
                let ctx = context(item, director.collectionView.cellForItem(at: indexPath), indexPath, director)
            {
                handler(ctx)
            }
        }
    }

    func shouldHighlight(
        _ item: PresentedRow<any CollectionCellRouting>, at indexPath: IndexPath, director: CollectionDirector
    ) -> Bool {
        guard let handler = events.shouldHighlight, let ctx = context(item, nil, indexPath, director) else {
            return true
        }
        return handler(ctx)
    }

    func shouldSelect(
        _ item: PresentedRow<any CollectionCellRouting>, at indexPath: IndexPath, director: CollectionDirector
    ) -> Bool {
        guard let handler = events.shouldSelect, let ctx = context(item, nil, indexPath, director) else { return true }
        return handler(ctx)
    }

    func swipeActions(
        leading: Bool, _ item: PresentedRow<any CollectionCellRouting>, at indexPath: IndexPath,
        director: CollectionDirector
    ) -> UISwipeActionsConfiguration? {
        guard let handler = leading ? events.leadingSwipeActions : events.trailingSwipeActions,
            let ctx = context(item, director.collectionView.cellForItem(at: indexPath), indexPath, director)
        else { return nil }
        return handler(ctx)
    }

    func canMove(
        _ item: PresentedRow<any CollectionCellRouting>, at indexPath: IndexPath, director: CollectionDirector
    ) -> Bool {
        guard let ctx = context(item, nil, indexPath, director) else { return false }
        return events.canMoveItem?(ctx) ?? canReorder
    }

    func moveTarget(
        _ item: PresentedRow<any CollectionCellRouting>, at indexPath: IndexPath, proposed: IndexPath,
        director: CollectionDirector
    ) -> IndexPath {
        guard let handler = events.moveAdjustDestination, let ctx = context(item, nil, indexPath, director) else {
            return proposed
        }
        return handler(ctx, proposed)
    }

    func didMove(
        _ item: PresentedRow<any CollectionCellRouting>, from: IndexPath, to: IndexPath,
        result: Result<WriteTicket, FlowSyncError>
    ) {
        guard let handler = events.moveItem, let model = item.model(as: Model.self) else { return }
        handler(CollectionMoveContext(model: model, handle: item.handle, from: from, to: to, result: result))
    }

    func prefetch(_ items: [PresentedRow<any CollectionCellRouting>], cancel: Bool) {
        guard let handler = cancel ? events.cancelPrefetch : events.prefetch else { return }
        let (models, paths) = PresentedRow.models(of: items, as: Model.self)
        if !models.isEmpty { handler(models, paths.map(CollectionDirector.indexPath)) }
    }

    func size(
        _ item: PresentedRow<any CollectionCellRouting>, at indexPath: IndexPath, director: CollectionDirector
    ) -> CGSize? {
        guard let handler = events.itemSize, let ctx = context(item, nil, indexPath, director) else { return nil }
        return handler(ctx)
    }
}
#endif
