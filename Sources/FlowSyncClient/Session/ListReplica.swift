import FlowSyncCore
import FlowSyncProtocol

/// The client's state for one list: what the server confirmed, the writes it has not
/// confirmed yet, and the view the app sees (confirmed + pending).
///
/// Pure: no I/O, no clock. ``ClientSession`` drives it.
///
/// A class, not a struct, for one reason: copying a replica out of the session's
/// dictionary to edit it would give its directors a second owner, and the next edit
/// would copy the whole list (copy-on-write) — an O(n) cost on every O(1) edit. Only
/// the session holds replicas, under the client's lock.
final class ListReplica: @unchecked Sendable {
    /// Where the subscription stands.
    enum Phase: Sendable, Equatable {
        /// Subscribe sent (or to be sent once connected); its answer is awaited.
        case subscribing
        /// Receiving batches.
        case live
        /// A fresh snapshot was asked for after the replica drifted; batches are ignored
        /// until it arrives.
        case resyncing(ListChange.ResyncReason)
        /// The server refused the subscription; nothing more happens.
        case failed(FlowSyncError)
    }

    /// Replicas accept whatever the server sends: the server enforces the limits.
    static let limits = DirectorLimits(
        maxIDBytes: .max, maxKindBytes: .max, maxPayloadBytes: .max,
        maxSections: .max, maxRows: .max, maxOpsPerMutation: .max)

    let name: String
    var phase: Phase = .subscribing
    /// The server's state at ``position``.
    var confirmed = Director(limits: limits)
    /// `nil` until the first snapshot.
    var position: ListVersion?
    /// Whether ``confirmed`` was loaded from disk and the server has not answered the
    /// resume yet (then the list may be behind the server).
    var isRestored = false
    /// What the app sees: ``confirmed`` with the visible pending writes applied.
    var view = Director(limits: limits)
    /// Writes not contained in ``confirmed``, oldest first.
    var pending: [PendingWrite] = []
    /// What the last delivered change said of the list beyond its rows: the pending count
    /// and whether it was the stored copy. A change with no rows to show is still
    /// delivered when these move (a write committed as shown, a resume with nothing
    /// new), so a "saving…" or "offline copy" badge never lags.
    var deliveredPending = 0
    var deliveredRestored = false
    /// The seq of the Mutate in flight (sent, not yet answered nor seen in a Diff).
    var inFlight: UInt64?
    /// Writes already completed because a Diff showed them committed, whose Ack is
    /// still to come on this connection (it must not complete them twice).
    var committedUnacked: Set<UInt64> = []

    init(name: String) { self.name = name }

    /// Whether the view is exactly ``confirmed`` (nothing pending on top).
    var viewIsConfirmed: Bool { pending.isEmpty }

    // MARK: Local edits

    /// Shows `operations` at once and queues them as write `seq`.
    ///
    /// - Returns: The changeset of the visible change.
    /// - Throws: ``MutationError`` when they do not apply to the view; nothing changed.
    /// - Parameter limits: The server's per-write limits (from its Welcome): a write
    ///   over them is refused here with a clear error, rather than sent and answered
    ///   by the server closing the connection (an oversized payload is a frame fault).
    /// - Parameter base: The view the app built `operations` on. When the view has
    ///   changed since (a batch or a rollback landed between the app's read and this
    ///   call), index-based operations would hit the wrong rows: they are anchored in
    ///   `base`, where they mean what the app meant, and re-expressed in the current
    ///   view — the rebase the server does for a stale base version. Conflicts (an
    ///   edit of a row that is gone since) throw like any invalid edit.
    func edit(
        _ operations: [Operation], seq: UInt64, limits: DirectorLimits? = nil, basedOn base: Director? = nil
    ) throws(MutationError) -> Changeset {
        var operations = operations
        let anchored: [AnchoredOperation]
        if let base, base.digest != view.digest {
            var then = base
            anchored = try then.anchor(operations)
            operations = try Self.resolve(anchored, in: view)
        } else {
            // Anchor first, where the app wrote them (the replay is undone), then apply.
            anchored = try view.anchor(operations)
        }
        let changeset: Changeset
        if let limits {
            // Only this edit is held to them; what the server sent is its own business.
            let saved = view.limits
            view.limits = limits
            defer { view.limits = saved }
            changeset = try view.apply(operations)
        } else {
            changeset = try view.apply(operations)
        }
        pending.append(PendingWrite(seq: seq, anchored: anchored))
        return changeset
    }

    /// The index-based operations `anchored` comes to in `state`, which is unchanged.
    /// A function of its own so the scratch copy is gone before the caller edits the
    /// view in place (a copy still alive would make that edit copy the list).
    /// - Complexity: a copy of the storage the operations touch; only on the rare
    ///   stale-view path.
    private static func resolve(
        _ anchored: [AnchoredOperation], in state: Director
    ) throws(MutationError) -> [Operation] {
        var scratch = state
        return try scratch.applyResolving(anchored)
    }

    // MARK: Rebuilding the view

    /// Re-applies the pending writes on the confirmed state, each by identity.
    ///
    /// - Returns: The view before the rebuild.
    /// - Complexity: O(k) for the pending operations, plus one copy of the touched
    ///   storage of the confirmed state.
    func rebuildView() -> Director {
        let old = view
        var next = confirmed
        for write in pending {
            // A write that conflicts with the confirmed state is left out of the view;
            // the server's answer (or sendNext's own check) settles its fate.
            _ = try? next.applyResolving(write.anchored)
        }
        view = next
        return old
    }

    /// The staged changeset between two views; empty when they are equal.
    ///
    /// - Complexity: O(1) when equal (the digests say so), else the O(n) diff.
    static func change(from old: Director, to new: Director) -> Changeset {
        if old.digest == new.digest && old.rowCount == new.rowCount && old.sections.count == new.sections.count {
            return Changeset()
        }
        return Changeset.diff(from: old, to: new)
    }

    /// Drops the pending writes the confirmed state now contains: those named in
    /// `committed` (this client's IDs in a Diff) and those acked at or before the
    /// confirmed position.
    ///
    /// - Returns: The dropped writes that were not acked yet (a Diff showed them first).
    @discardableResult
    func dropConfirmed(seqs committed: Set<UInt64>) -> [UInt64] {
        let position = self.position
        var unacked: [UInt64] = []
        pending.removeAll { write in
            if committed.contains(write.seq) {
                if write.ackedAt == nil { unacked.append(write.seq) }
                return true
            }
            if let acked = write.ackedAt, let position, acked.epoch == position.epoch, acked <= position { return true }
            return false
        }
        if let inFlight, committed.contains(inFlight) { self.inFlight = nil }
        return unacked
    }
}
