// UIKit glue. Compiled on Linux by `make apple-check` against the UIKit stand-in
// (AppleCheck/), and run there against its simulated table view. The routing, the
// decode cache and the event resolution are ListPresenter's (platform-neutral).
#if canImport(UIKit) && !os(watchOS)
import FlowSyncClient
import FlowSyncCore
import Foundation
import UIKit

/// Shows the rows of one kind — `Model.flowKind` — in cells of one class, and hands
/// their events to typed closures: FlowKit's `TableCellAdapter<Model, Cell>`.
///
/// ```swift
/// let contacts = TableCellAdapter<Contact, ContactCell> { adapter in
///     adapter.events.dequeue = { ctx in ctx.cell?.show(ctx.model) }
///     adapter.events.tap = { ctx in open(ctx.model); return .deselectAnimated }
///     adapter.events.trailingSwipeActions = { ctx in UISwipeActionsConfiguration(actions: [ctx.deleteAction()]) }
///     adapter.sizing = .automatic(estimated: 60)
/// }
/// director.register(contacts)
/// ```
///
/// Every event gets a ``TableRowContext`` built from what the table shows at that
/// moment; the model is decoded once per row version. A row whose payload does not
/// decode as `Model` gets no events: the director shows its fallback instead.
@MainActor
public final class TableCellAdapter<Model: FlowModel, Cell: UITableViewCell> {
    /// The context every event receives.
    public typealias Context = TableRowContext<Model, Cell>

    /// The adapter's events; each is optional, and UIKit's default applies to those not
    /// set.
    public struct Events {
        /// Configures a dequeued cell for its row (FlowKit's `dequeue`). Also called to
        /// reconfigure a visible cell whose row changed.
        public var dequeue: ((Context) -> Void)?
        /// The cell is about to appear.
        public var willDisplay: ((Context) -> Void)?
        /// The cell left the screen (its row may be gone from the list by then; the
        /// context holds the model the cell showed).
        public var endDisplay: ((Context) -> Void)?
        /// Whether the row highlights when touched (default: yes).
        public var shouldHighlight: ((Context) -> Bool)?
        /// The row is about to be selected: answer the index path to select, or `nil`
        /// to refuse (default: its own).
        public var willSelect: ((Context) -> IndexPath?)?
        /// The row was selected; the answer says whether it stays selected.
        public var tap: ((Context) -> TableSelectionState)?
        /// The row was deselected.
        public var didDeselect: ((Context) -> Void)?
        /// The detail accessory button was tapped.
        public var tapOnAccessory: ((Context) -> Void)?
        /// The actions a swipe from the leading edge shows (default: none).
        public var leadingSwipeActions: ((Context) -> UISwipeActionsConfiguration?)?
        /// The actions a swipe from the trailing edge shows (default: UIKit's Delete when
        /// the adapter ``TableCellAdapter/canDelete``).
        public var trailingSwipeActions: ((Context) -> UISwipeActionsConfiguration?)?
        /// Whether the row can be edited (default: ``TableCellAdapter/canDelete``).
        public var canEdit: ((Context) -> Bool)?
        /// The row's editing style (default: `.delete` when ``TableCellAdapter/canDelete``).
        public var editStyle: ((Context) -> UITableViewCell.EditingStyle)?
        /// The user committed an edit (default for `.delete`: the row is removed through
        /// the list, by ID).
        public var commitEdit: ((Context, UITableViewCell.EditingStyle) -> Void)?
        /// Whether the row can be dragged (default: ``TableCellAdapter/canReorder``).
        public var canMoveRow: ((Context) -> Bool)?
        /// Where a drag may drop: given the proposed index path, answer the one to use.
        public var moveAdjustDestination: ((Context, IndexPath) -> IndexPath)?
        /// A drag ended and was written through the list (or refused).
        public var moveRow: ((TableMoveContext<Model>) -> Void)?
        /// Rows coming into view soon: their models and index paths.
        public var prefetch: (([Model], [IndexPath]) -> Void)?
        /// Rows no longer coming into view.
        public var cancelPrefetch: (([Model], [IndexPath]) -> Void)?
        /// The row's height, when it depends on the model (overrides ``TableCellAdapter/sizing``).
        public var rowHeight: ((Context) -> CGFloat)?
        /// The row's estimated height, when it depends on the model (overrides the
        /// estimate of ``TableCellAdapter/sizing``).
        public var rowHeightEstimated: ((Context) -> CGFloat)?

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
    /// How tall the rows are (default: the table's own settings).
    public var sizing: RowSizing = .default
    /// Whether rows can be deleted by a swipe or in editing mode, through the list.
    public var canDelete = false
    /// Whether rows can be dragged to reorder in editing mode, through the list.
    public var canReorder = false

    /// An adapter for `Model` rows in `Cell`s, configured by `configure`.
    public init(reuseIdentifier: String? = nil, _ configure: ((TableCellAdapter) -> Void)? = nil) {
        self.reuseIdentifier = reuseIdentifier ?? String(describing: Cell.self)
        configure?(self)
    }
}

/// FlowKit's name for a table cell adapter.
public typealias TableAdapter<Model: FlowModel, Cell: UITableViewCell> = TableCellAdapter<Model, Cell>

// MARK: - Routing (erased, for the director)

/// A cell adapter with its types erased: what ``TableDirector`` routes rows to.
@MainActor
protocol TableCellRouting: AnyObject {
    var reuseIdentifier: String { get }
    var cellClass: UITableViewCell.Type { get }
    var sizing: RowSizing { get }
    var canDelete: Bool { get }
    var canReorder: Bool { get }
    var kind: String { get }
    func configure(
        _ cell: UITableViewCell, _ item: PresentedRow<any TableCellRouting>, at indexPath: IndexPath,
        director: TableDirector)
    func willDisplay(
        _ cell: UITableViewCell, _ item: PresentedRow<any TableCellRouting>, at indexPath: IndexPath,
        director: TableDirector)
    func didEndDisplaying(
        _ cell: UITableViewCell, _ item: PresentedRow<any TableCellRouting>, at indexPath: IndexPath,
        director: TableDirector)
    func shouldHighlight(
        _ item: PresentedRow<any TableCellRouting>, at indexPath: IndexPath, director: TableDirector
    ) -> Bool
    func willSelect(
        _ item: PresentedRow<any TableCellRouting>, at indexPath: IndexPath, director: TableDirector
    ) -> IndexPath?
    func didSelect(
        _ item: PresentedRow<any TableCellRouting>, at indexPath: IndexPath, director: TableDirector
    ) -> TableSelectionState
    func didDeselect(_ item: PresentedRow<any TableCellRouting>, at indexPath: IndexPath, director: TableDirector)
    func accessoryTapped(_ item: PresentedRow<any TableCellRouting>, at indexPath: IndexPath, director: TableDirector)
    func swipeActions(
        leading: Bool, _ item: PresentedRow<any TableCellRouting>, at indexPath: IndexPath,
        director: TableDirector
    ) -> UISwipeActionsConfiguration??
    func canEdit(_ item: PresentedRow<any TableCellRouting>, at indexPath: IndexPath, director: TableDirector) -> Bool
    func editingStyle(
        _ item: PresentedRow<any TableCellRouting>, at indexPath: IndexPath, director: TableDirector
    ) -> UITableViewCell.EditingStyle
    func commitEdit(
        _ style: UITableViewCell.EditingStyle, _ item: PresentedRow<any TableCellRouting>, at indexPath: IndexPath,
        director: TableDirector
    ) -> Bool
    func canMove(_ item: PresentedRow<any TableCellRouting>, at indexPath: IndexPath, director: TableDirector) -> Bool
    func moveTarget(
        _ item: PresentedRow<any TableCellRouting>, at indexPath: IndexPath, proposed: IndexPath,
        director: TableDirector
    ) -> IndexPath
    func didMove(
        _ item: PresentedRow<any TableCellRouting>, from: IndexPath, to: IndexPath,
        result: Result<WriteTicket, FlowSyncError>)
    func prefetch(_ items: [PresentedRow<any TableCellRouting>], cancel: Bool)
    func height(
        _ item: PresentedRow<any TableCellRouting>, at indexPath: IndexPath, director: TableDirector
    ) -> CGFloat?
    func estimatedHeight(
        _ item: PresentedRow<any TableCellRouting>, at indexPath: IndexPath, director: TableDirector
    ) -> CGFloat?
}

extension TableCellAdapter: TableCellRouting {
    var cellClass: UITableViewCell.Type { Cell.self }
    var kind: String { Model.flowKind }

    /// How the presenter decodes this adapter's rows: a closure of its own (not
    /// main-actor isolated, as the presenter is not), with a decoder of its own.
    nonisolated static func decoder() -> (Row) throws -> Any {
        let decoder = JSONDecoder()
        return { row in try decoder.decode(Model.self, from: Data(row.payload)) }
    }

    /// The context of `item`, or `nil` when its model did not decode (it shows the
    /// fallback and gets no events).
    private func context(
        _ item: PresentedRow<any TableCellRouting>, _ cell: UITableViewCell?, _ indexPath: IndexPath,
        _ director: TableDirector
    ) -> Context? {
        guard let model = item.model(as: Model.self) else { return nil }
        return Context(
            model: model, cell: cell as? Cell, indexPath: indexPath, row: item.row, handle: item.handle,
            director: director)
    }

    func configure(
        _ cell: UITableViewCell, _ item: PresentedRow<any TableCellRouting>, at indexPath: IndexPath,
        director: TableDirector
    ) {
        guard let ctx = context(item, cell, indexPath, director) else { return }
        events.dequeue?(ctx)
    }

    func willDisplay(
        _ cell: UITableViewCell, _ item: PresentedRow<any TableCellRouting>, at indexPath: IndexPath,
        director: TableDirector
    ) {
        guard let handler = events.willDisplay, let ctx = context(item, cell, indexPath, director) else { return }
        handler(ctx)
    }

    func didEndDisplaying(
        _ cell: UITableViewCell, _ item: PresentedRow<any TableCellRouting>, at indexPath: IndexPath,
        director: TableDirector
    ) {
        guard let handler = events.endDisplay, let ctx = context(item, cell, indexPath, director) else { return }
        handler(ctx)
    }

    func shouldHighlight(
        _ item: PresentedRow<any TableCellRouting>, at indexPath: IndexPath, director: TableDirector
    ) -> Bool {
        guard let handler = events.shouldHighlight,
            let ctx = context(item, director.visibleCell(at: indexPath), indexPath, director)
        else {
            return true
        }
        return handler(ctx)
    }

    func willSelect(
        _ item: PresentedRow<any TableCellRouting>, at indexPath: IndexPath, director: TableDirector
    ) -> IndexPath? {
        guard let handler = events.willSelect,
            let ctx = context(item, director.visibleCell(at: indexPath), indexPath, director)
        else {
            return indexPath
        }
        return handler(ctx)
    }

    func didSelect(
        _ item: PresentedRow<any TableCellRouting>, at indexPath: IndexPath, director: TableDirector
    ) -> TableSelectionState {
        guard let handler = events.tap,
            let ctx = context(item, director.visibleCell(at: indexPath), indexPath, director)
        else {
            return .none
        }
        return handler(ctx)
    }

    func didDeselect(_ item: PresentedRow<any TableCellRouting>, at indexPath: IndexPath, director: TableDirector) {
        guard let handler = events.didDeselect,
            let ctx = context(item, director.visibleCell(at: indexPath), indexPath, director)
        else { return }
        handler(ctx)
    }

    func accessoryTapped(_ item: PresentedRow<any TableCellRouting>, at indexPath: IndexPath, director: TableDirector) {
        guard let handler = events.tapOnAccessory,
            let ctx = context(item, director.visibleCell(at: indexPath), indexPath, director)
        else {
            return
        }
        handler(ctx)
    }

    /// `.some(configuration)` when the adapter answers (which may be `nil`: no
    /// actions), `.none` when it leaves the swipe to UIKit's default.
    func swipeActions(
        leading: Bool, _ item: PresentedRow<any TableCellRouting>, at indexPath: IndexPath,
        director: TableDirector
    ) -> UISwipeActionsConfiguration?? {
        guard let handler = leading ? events.leadingSwipeActions : events.trailingSwipeActions,
            let ctx = context(item, director.visibleCell(at: indexPath), indexPath, director)
        else { return .none }
        return .some(handler(ctx))
    }

    func canEdit(_ item: PresentedRow<any TableCellRouting>, at indexPath: IndexPath, director: TableDirector) -> Bool {
        guard let ctx = context(item, nil, indexPath, director) else { return false }
        return events.canEdit?(ctx)
            ?? (canDelete || events.commitEdit != nil || events.trailingSwipeActions != nil
                || events.leadingSwipeActions != nil)
    }

    func editingStyle(
        _ item: PresentedRow<any TableCellRouting>, at indexPath: IndexPath,
        director: TableDirector
    ) -> UITableViewCell.EditingStyle {
        guard let ctx = context(item, nil, indexPath, director) else { return .none }
        return events.editStyle?(ctx) ?? (canDelete ? .delete : .none)
    }

    /// - Returns: Whether the adapter handled it (else the director deletes for `.delete`).
    func commitEdit(
        _ style: UITableViewCell.EditingStyle, _ item: PresentedRow<any TableCellRouting>, at indexPath: IndexPath,
        director: TableDirector
    ) -> Bool {
        guard let handler = events.commitEdit,
            let ctx = context(item, director.visibleCell(at: indexPath), indexPath, director)
        else {
            return false
        }
        handler(ctx, style)
        return true
    }

    func canMove(_ item: PresentedRow<any TableCellRouting>, at indexPath: IndexPath, director: TableDirector) -> Bool {
        guard let ctx = context(item, nil, indexPath, director) else { return false }
        return events.canMoveRow?(ctx) ?? canReorder
    }

    func moveTarget(
        _ item: PresentedRow<any TableCellRouting>, at indexPath: IndexPath, proposed: IndexPath,
        director: TableDirector
    ) -> IndexPath {
        guard let handler = events.moveAdjustDestination, let ctx = context(item, nil, indexPath, director) else {
            return proposed
        }
        return handler(ctx, proposed)
    }

    func didMove(
        _ item: PresentedRow<any TableCellRouting>, from: IndexPath, to: IndexPath,
        result: Result<WriteTicket, FlowSyncError>
    ) {
        guard let handler = events.moveRow, let model = item.model(as: Model.self) else { return }
        handler(TableMoveContext(model: model, handle: item.handle, from: from, to: to, result: result))
    }

    func prefetch(_ items: [PresentedRow<any TableCellRouting>], cancel: Bool) {
        guard let handler = cancel ? events.cancelPrefetch : events.prefetch else { return }
        let (models, paths) = PresentedRow.models(of: items, as: Model.self)
        if !models.isEmpty { handler(models, paths.map(IndexPath.init)) }
    }

    func height(
        _ item: PresentedRow<any TableCellRouting>, at indexPath: IndexPath, director: TableDirector
    ) -> CGFloat? {
        guard let handler = events.rowHeight, let ctx = context(item, nil, indexPath, director) else { return nil }
        return handler(ctx)
    }

    func estimatedHeight(
        _ item: PresentedRow<any TableCellRouting>, at indexPath: IndexPath, director: TableDirector
    ) -> CGFloat? {
        guard let handler = events.rowHeightEstimated, let ctx = context(item, nil, indexPath, director) else {
            return nil
        }
        return handler(ctx)
    }
}
#endif
