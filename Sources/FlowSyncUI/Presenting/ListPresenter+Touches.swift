import FlowSyncClient
import FlowSyncCore

/// What came of a row the user dragged (``ListPresenter/viewDidMoveRow(from:to:)``).
public enum ViewMoveOutcome {
    /// Nothing to write: the row was dropped where it was, or the view showed no row
    /// there.
    case unchanged
    /// The view shows the move, and this write carries it to the server.
    case written(WriteTicket)
    /// The list refused the move on the spot (the row or the section was deleted
    /// meanwhile, say). The view still shows the move: call
    /// ``ListPresenter/undoViewMove(_:)`` with the token — after UIKit's reorder
    /// callback has returned, not inside it — to animate it back.
    case refused(FlowSyncError, ViewEditToken)
}

// MARK: - Writes from touches
//
// Every write a touch makes names rows by identity, so it means the row the user saw:
// a delete by row ID (a handle taken when the touch began), a move anchored in the
// snapshot the view showed. The list's replica may be ahead of the view (changes are
// queued for the main thread); an index from the view applied to the replica could
// hit another row.

extension ListPresenter {
    /// Deletes the row `handle` names, wherever it is now.
    ///
    /// - Returns: The write, or `nil` when the row is gone already (another writer
    ///   deleted it; nothing to do).
    /// - Throws: ``FlowSyncError`` when the list refuses the edit.
    @discardableResult
    public func remove(_ handle: RowHandle) throws(FlowSyncError) -> WriteTicket? {
        guard let list, list.snapshot.indexPath(ofModel: handle.rowID) != nil else { return nil }
        return try list.remove(modelID: handle.rowID)
    }

    /// Writes a move the view already shows: the user dragged the row at `from` (an
    /// index path of what the view showed before the drag) to `to` (an index path of the
    /// list after it, UIKit's `moveRowAt:to:`).
    ///
    /// The move is shown at once (``ListUpdateApplier/beginViewEdit(_:)``, no batch, no
    /// reload), then written as one move of the row, by ID, into the section, by ID, at
    /// `to.row`, built on the snapshot the view showed. Changes that arrive before the
    /// write's own are rebased under it, so the row stays where it was dropped.
    public func viewDidMoveRow(from: RowPath, to: RowPath) -> ViewMoveOutcome {
        let shown = applier.snapshot
        guard from != to, let row = row(at: from), let destination = section(at: to.section) else { return .unchanged }
        // `to.row` counts the destination section without the row (remove, then insert),
        // as UIKit's destination index path and the protocol's moveRow do.
        let limit = destination.rows.count - (from.section == to.section ? 1 : 0)
        guard to.row >= 0, to.row <= limit else { return .unchanged }
        let operations: [Operation] = [.moveRow(.id(row.id), toSection: .id(destination.id), at: to.row)]
        let token: ViewEditToken
        do {
            token = try applier.beginViewEdit(operations)
        } catch {
            return .unchanged  // cannot happen for a row and a destination the view shows
        }
        guard let list else { return .refused(.closed, token) }
        do {
            let ticket = try list.submit(operations, on: shown)
            applier.viewEdit(token, isCarriedBy: ticket.seq)
            return .written(ticket)
        } catch {
            return .refused(error, token)
        }
    }

    /// Animates a refused move back (``ViewMoveOutcome/refused(_:_:)``).
    @discardableResult
    public func undoViewMove(_ token: ViewEditToken) -> ListUpdateApplier<Target>.Outcome {
        applier.abandonViewEdit(token)
    }
}
