// UIKit glue. Compiled on Linux by `make apple-check` against the UIKit stand-in
// (AppleCheck/), and run there against its simulated table view.
#if canImport(UIKit) && !os(watchOS)
import FlowSyncClient
import FlowSyncCore
import UIKit

/// What a ``TableCellAdapter``'s events receive: the model under the touch, resolved
/// from what the table shows at that moment, its cell when there is one, and ways to
/// act on the row by its identity.
///
/// Keep a context (or its ``handle``) for an action that runs later — a swipe action's
/// handler, an alert's button: ``remove()`` and ``currentIndexPath`` find the row by
/// ID when they run, so a remote change in between never makes them act on another
/// row.
@MainActor
public struct TableRowContext<Model, Cell: UITableViewCell> {
    /// The row's model, decoded once per row version.
    public let model: Model
    /// The cell, for the events that have one (dequeue, display, and the others when the
    /// row is visible).
    public let cell: Cell?
    /// Where the table shows the row at the moment of the event.
    public let indexPath: IndexPath
    /// The row as stored (ID, kind, payload).
    public let row: Row
    /// The row's identity, for actions that run later.
    public let handle: RowHandle
    /// The director that routed the event.
    public unowned let director: TableDirector

    /// The table.
    public var table: UITableView { director.tableView }
    /// The live list the table shows.
    public var list: ListDirector { director.list }
    /// Where the row is now, in what the table shows; `nil` once it is gone.
    public var currentIndexPath: IndexPath? { director.presenter.path(of: handle).map(IndexPath.init) }

    /// Deletes this row, by its ID, wherever it is now.
    ///
    /// - Returns: The write, or `nil` when the row is already gone.
    @discardableResult
    public func remove() throws(FlowSyncError) -> WriteTicket? {
        try director.presenter.remove(handle)
    }

    /// A destructive swipe action titled `title` that deletes this row (by ID, when
    /// the action is tapped) and reports success to UIKit.
    public func deleteAction(title: String = "Delete") -> UIContextualAction {
        let handle = self.handle
        let director = self.director
        return UIContextualAction(style: .destructive, title: title) { _, _, completion in
            let removed = (try? director.presenter.remove(handle)) != nil
            completion(removed)
        }
    }
}

/// What ``TableCellAdapter/Events/moveRow`` receives: the row the user dragged, where
/// from and where to, and the write that carries the move.
@MainActor
public struct TableMoveContext<Model> {
    /// The dragged row's model.
    public let model: Model
    /// Its identity.
    public let handle: RowHandle
    /// Where it was.
    public let from: IndexPath
    /// Where it was dropped.
    public let to: IndexPath
    /// The write, or the error that refused it on the spot (the row then animates back).
    public let result: Result<WriteTicket, FlowSyncError>
}

/// What a tap leaves behind, FlowKit's `TableSelectionState`: the answer of
/// ``TableCellAdapter/Events/tap``.
public enum TableSelectionState: Sendable {
    /// The row stays selected.
    case none
    /// The row is deselected at once.
    case deselect
    /// The row is deselected with an animation.
    case deselectAnimated
}

/// What ``TableDirector/fallback`` receives for a row it cannot show with an adapter:
/// its kind has none, or its payload does not decode as the adapter's model.
@MainActor
public struct TableFallbackContext {
    /// The row.
    public let row: Row
    /// Where the table shows it.
    public let indexPath: IndexPath
    /// Why there is no model: `nil` when no adapter is registered for the row's kind.
    public let failure: ModelDecodingFailure?
    /// The table, to dequeue a cell from.
    public let table: UITableView
}
#endif
