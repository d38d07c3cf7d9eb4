import FlowSyncClient
import FlowSyncCore

/// Names one edit the view made itself, recorded by
/// ``ListUpdateApplier/beginViewEdit(_:)``.
public struct ViewEditToken: Hashable, Sendable {
    let id: UInt64
}

/// One edit the view shows that the list has not delivered back yet.
struct ViewEdit {
    let token: ViewEditToken
    /// The edit by identity (rows and sections by ID, positions by neighbours), so it
    /// can be re-applied on whatever the list delivers next (``Director/anchor(_:)``).
    let anchored: [AnchoredOperation]
    /// The write that carries it to the server, once submitted: the change the list
    /// delivers with cause `.local(seq)` (or `.rollback(seq, …)`) is its echo.
    var seq: UInt64?
}

// MARK: - Edits the view made itself
//
// A drag to reorder is the one change UIKit makes on screen *before* the data source
// hears of it: the cell is already where the finger left it when `moveRowAt:to:` is
// called. The data source must then show the same thing at once, without a batch (a
// second animation) and without `reloadData` (which would drop the drop animation).
// FlowSync's list hears of the edit only when the write is submitted, and changes
// queued for the main thread before that (a remote batch that arrived meanwhile) do
// not contain it. The rules:
//
// 1. `beginViewEdit` applies the edit to `snapshot` at once, touching no view, and
//    keeps it by identity.
// 2. Every change that arrives while an edit is kept is *rebased*: the edit is
//    re-applied by identity on the change's snapshot (the same transform the SDK and
//    the server use), and the view is animated from what it shows to that, with a diff.
//    A remote change therefore animates as itself, and the dragged row stays put.
// 3. The change whose cause is the edit's own write (`.local(seq)`) is its echo: from
//    then on the list contains the edit, so it is dropped, and the diff from what the
//    view shows to the echo's snapshot is empty — no second animation. A rollback of
//    the write also ends it (the rollback's snapshot lacks it, so the row animates
//    back).
// 4. An edit that no longer applies (another writer deleted the row) is dropped; the
//    server will refuse the write and the rollback shows it.
// 5. A write refused before it was sent (`abandonViewEdit`) animates the view back.
//
// While an edit is kept, a change costs an O(n) diff instead of O(k): only during and
// right after a drag.

extension ListUpdateApplier {
    /// Records an edit the view already shows, made by the user through the view (a
    /// drag to reorder): ``snapshot`` takes it at once and the target is not touched.
    ///
    /// Submit the write next (build it on the snapshot from *before* this call, e.g.
    /// with `ListDirector.perform(on:)`), then name it with
    /// ``viewEdit(_:isCarriedBy:)``; if submitting throws, call ``abandonViewEdit(_:)``.
    ///
    /// - Throws: ``MutationError`` when `operations` do not apply to ``snapshot``;
    ///   nothing changed then.
    /// - Complexity: O(k) for k operations.
    public func beginViewEdit(_ operations: [Operation]) throws(MutationError) -> ViewEditToken {
        var director = snapshot.director
        let anchored = try director.anchor(operations)
        _ = try director.apply(operations)
        if viewEdits.isEmpty { delivered = snapshot }
        nextViewEdit += 1
        let token = ViewEditToken(id: nextViewEdit)
        viewEdits.append(ViewEdit(token: token, anchored: anchored, seq: nil))
        snapshot = snapshot.replacing(director: director)
        return token
    }

    /// Names the write that carries a view edit: its `.local(seq)` change is the echo
    /// that ends the edit (rule 3 above).
    public func viewEdit(_ token: ViewEditToken, isCarriedBy seq: UInt64) {
        guard let index = viewEdits.firstIndex(where: { $0.token == token }) else { return }
        viewEdits[index].seq = seq
    }

    /// Drops a view edit whose write was never sent (refused on the spot) and animates
    /// the view back to the list without it.
    @discardableResult
    public func abandonViewEdit(_ token: ViewEditToken) -> Outcome {
        guard let index = viewEdits.firstIndex(where: { $0.token == token }), let delivered else { return .unchanged }
        viewEdits.remove(at: index)
        return show(delivered, cause: .remote)
    }

    /// Whether an edit the view made itself is still waiting for its echo.
    public var hasViewEdits: Bool { !viewEdits.isEmpty }

    /// Rules 2–4: `change` rebased under the kept view edits, animated from what the
    /// view shows.
    func applyRebasingViewEdits(_ change: ListChange) -> Outcome {
        let echo: UInt64?
        switch change.cause {
        case .local(let seq), .rollback(let seq, _): echo = seq
        default: echo = nil
        }
        if let echo { viewEdits.removeAll { $0.seq == echo } }
        return show(change.snapshot, cause: change.cause)
    }

    /// Animates the view from ``snapshot`` to `list` with the kept view edits
    /// re-applied on it by identity (dropping those that no longer apply).
    private func show(_ list: ListSnapshot, cause: ListChange.Cause) -> Outcome {
        var target = list.director
        var kept: [ViewEdit] = []
        for edit in viewEdits where (try? target.applyResolving(edit.anchored)) != nil {
            kept.append(edit)  // applyResolving is all or nothing: a refused edit left `target` as it was
        }
        viewEdits = kept
        delivered = kept.isEmpty ? nil : list
        let next = list.replacing(director: target)
        let changeset =
            Self.sameState(snapshot.director, target)
            ? Changeset() : Changeset.diff(from: snapshot.director, to: target)
        return animate(ListChange(cause: cause, previous: snapshot, changeset: changeset, snapshot: next))
    }
}
