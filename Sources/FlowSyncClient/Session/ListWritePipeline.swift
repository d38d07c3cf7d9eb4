import FlowSyncCore
import FlowSyncProtocol

/// One list's write pipeline: the server's answers (Snapshot, Diff, Ack, Reject) applied
/// to the replica, and the next pending write sent when its turn comes.
///
/// Pure, like the rest of the session: each input returns the ``SessionAction``s it
/// causes (deliveries, completions, sends). ``ClientSession`` routes a message here by
/// its list name and says whether the connection is ready and who this client is.
///
/// Rules (docs/PROTOCOL.md, "Writes"):
/// - One Mutate in flight per list, the next one based on the confirmed version that
///   contains the previous one — so its indices mean what the app meant.
/// - After a reconnect (or a relaunch) the write that was sent and not answered is
///   resent unchanged (same `seq`), so the server's idempotency window answers it if it
///   had committed: nothing applies twice.
/// - A batch that does not follow the replica's position, does not apply, or leaves
///   another digest than the server's asks for a fresh snapshot (``resync(_:)``).
extension ListReplica {
    /// The context a pipeline input needs from the session.
    struct Context: Sendable {
        /// This client's writer identity (its writes are recognised in a Diff by it).
        var clientID: String
        /// Whether the connection is ready (nothing is sent otherwise).
        var isReady: Bool
    }

    /// The Subscribe for this list: resumed from the replica's position and digest when
    /// it has one, a fresh subscription otherwise.
    var subscribeMessage: Message {
        .subscribe(Subscribe(listName: name, resumeFrom: position, digest: position == nil ? nil : confirmed.digest))
    }

    /// Resends, unchanged, the write that was sent on an earlier connection (or by an
    /// earlier launch) and not answered. After a relaunch it may follow writes acked
    /// before the kill whose commit the replica does not hold yet, so it is the first
    /// write without an Ack, not the first write.
    func resendUnanswered() -> [SessionAction] {
        guard let first = pending.first(where: { $0.ackedAt == nil }), let mutate = first.sent else { return [] }
        inFlight = first.seq
        return [.send(.mutate(mutate))]
    }

    // MARK: Batches

    func receive(_ snapshot: Snapshot, _ context: Context) -> [SessionAction] {
        let cause: ListChange.Cause
        switch phase {
        case .failed: return []
        case .resyncing(let reason): cause = .resync(reason)
        case .subscribing where position == nil: cause = .initial
        case .subscribing, .live: cause = .resync(.server(snapshot.reason))
        }
        guard let state = try? Director(sections: snapshot.sections, limits: Self.limits),
            state.digest == snapshot.digest
        else {
            // The server's own snapshot does not add up: framing or the server is broken.
            return [.disconnect(reason: "snapshot of \(snapshot.listName) does not match its digest")]
        }
        confirmed = state
        position = snapshot.position
        phase = .live
        isRestored = false
        // Writes acked in an older epoch are either in this state or lost with the
        // server's history; either way they are no longer pending.
        pending.removeAll { write in write.ackedAt.map { $0.epoch != snapshot.position.epoch } ?? false }
        dropConfirmed(seqs: [])
        let old = rebuildView()
        var actions: [SessionAction] = []
        let changeset = Self.change(from: old, to: view)
        if !changeset.isEmpty || cause == .initial {
            actions.append(deliver(cause, changeset))
        } else {
            actions += metadataChange(cause)
        }
        return actions + sendNext(context)
    }

    func receive(_ diff: Diff, _ context: Context) -> [SessionAction] {
        guard let current = position else { return [] }
        switch phase {
        case .live, .subscribing: break
        case .resyncing, .failed: return []  // a stale batch of the old subscription
        }
        guard diff.from == current else { return resync(.gap) }
        phase = .live
        isRestored = false
        if diff.from == diff.to {
            // The resume answer for a replica that is current: nothing to apply (but a
            // stored copy is now known to be current).
            return metadataChange(.remote) + sendNext(context)
        }
        let viewWasConfirmed = viewIsConfirmed
        do {
            try diff.changeset.apply(to: &confirmed)
        } catch {
            return resync(.gap)
        }
        guard confirmed.digest == diff.digest else { return resync(.digestMismatch) }
        position = diff.to
        let mine = Set(diff.mutations.filter { $0.clientID == context.clientID }.map(\.seq))
        var actions: [SessionAction] = []
        // Complete the writes the batch contains now: their Acks follow on this
        // connection, but a cut could lose them, and the write is no longer pending
        // (nothing would be resent to get a new Ack).
        for seq in dropConfirmed(seqs: mine) {
            committedUnacked.insert(seq)
            actions.append(.complete(list: name, seq: seq, .success(diff.to)))
        }
        if viewWasConfirmed {  // (then nothing is pending now either)
            // Nothing of ours on top: the server's changeset is the visible change.
            view = confirmed
            actions.append(deliver(.remote, diff.changeset))
        } else {
            actions += rebuildViewChange(.remote)
        }
        return actions + sendNext(context)
    }

    // MARK: Write answers

    func receive(_ ack: Ack, _ context: Context) -> [SessionAction] {
        var actions: [SessionAction] = []
        if committedUnacked.remove(ack.seq) == nil {
            actions.append(.complete(list: name, seq: ack.seq, .success(ack.committed)))
        }
        if inFlight == ack.seq { inFlight = nil }
        if let index = pending.firstIndex(where: { $0.seq == ack.seq }) {
            pending[index].ackedAt = ack.committed
            let before = pending.count
            dropConfirmed(seqs: [])
            if pending.count != before {
                actions += rebuildViewChange(.remote)
            }
        }
        return actions + sendNext(context)
    }

    /// Write `seq` was refused — by the server (a Reject) or by the shell before it
    /// could be sent (``ClientSession/sendFailed(list:seq:_:)``): it fails, its effect
    /// leaves the view, and the next write goes.
    func refuse(seq: UInt64, _ error: FlowSyncError, _ context: Context) -> [SessionAction] {
        var actions: [SessionAction] = [.complete(list: name, seq: seq, .failure(error))]
        if inFlight == seq { inFlight = nil }
        if let index = pending.firstIndex(where: { $0.seq == seq }) {
            pending.remove(at: index)
            actions += rebuildViewChange(.rollback(seq: seq, error: error))
        }
        return actions + sendNext(context)
    }

    /// The server refused the subscription: every pending write fails with it.
    func fail(_ failure: FlowSyncError) -> [SessionAction] {
        phase = .failed(failure)
        var actions: [SessionAction] = pending.map { .complete(list: name, seq: $0.seq, .failure(failure)) }
        pending = []
        inFlight = nil
        actions += rebuildViewChange(.remote)
        actions.append(.listFailed(list: name, failure))
        return actions
    }

    // MARK: Sending

    /// Sends the oldest pending write when nothing is in flight and every earlier write
    /// is in the confirmed state — so its base is a version that contains them.
    func sendNext(_ context: Context) -> [SessionAction] {
        guard context.isReady, phase == .live, inFlight == nil, let position else { return [] }
        var actions: [SessionAction] = []
        while let first = pending.first, first.sent == nil {
            // Re-express the write in the confirmed state: the operations the server
            // will apply as written (their base is current) or rebase like we did.
            var base = confirmed
            let operations: [Operation]
            do {
                operations = try base.applyResolving(first.anchored)
            } catch {
                // It conflicts with what others committed: the server would refuse it.
                let failure = FlowSyncError.rejected(
                    code: ErrorCode(for: error.reason), message: "\(error.message) (found before sending)")
                pending.removeFirst()
                actions.append(.complete(list: name, seq: first.seq, .failure(failure)))
                actions += rebuildViewChange(.rollback(seq: first.seq, error: failure))
                continue
            }
            if operations.isEmpty {
                // Everything it did is already done (it deleted what others deleted).
                pending.removeFirst()
                actions.append(.complete(list: name, seq: first.seq, .success(position)))
                continue
            }
            // Anchor again in the confirmed state, as the server will if it rebases.
            var anchorState = confirmed
            if let reanchored = try? anchorState.anchor(operations) { pending[0].anchored = reanchored }
            let mutate = Mutate(
                listName: name, clientID: context.clientID, seq: first.seq, base: position, operations: operations)
            pending[0].sent = mutate
            inFlight = first.seq
            actions.append(.send(.mutate(mutate)))
            break
        }
        return actions
    }

    /// Asks for a fresh snapshot of a replica that cannot be trusted.
    func resync(_ reason: ListChange.ResyncReason) -> [SessionAction] {
        phase = .resyncing(reason)
        return [
            .send(.unsubscribe(Unsubscribe(listName: name))),
            .send(.subscribe(Subscribe(listName: name, resumeFrom: nil, digest: nil))),
        ]
    }

    // MARK: Deliveries

    /// Rebuilds the view on the confirmed state and reports the visible change, if any.
    func rebuildViewChange(_ cause: ListChange.Cause) -> [SessionAction] {
        let old = rebuildView()
        let changeset = Self.change(from: old, to: view)
        return changeset.isEmpty ? metadataChange(cause) : [deliver(cause, changeset)]
    }

    /// A change with no rows to show, when the pending count or the stored-copy flag moved
    /// since the last delivered change; none otherwise.
    func metadataChange(_ cause: ListChange.Cause) -> [SessionAction] {
        guard pending.count != deliveredPending || isRestored != deliveredRestored else { return [] }
        return [deliver(cause, Changeset())]
    }

    /// The visible change `changeset`, with the view right after it.
    func deliver(_ cause: ListChange.Cause, _ changeset: Changeset) -> SessionAction {
        deliveredPending = pending.count
        deliveredRestored = isRestored
        return .deliver(
            list: name, cause: cause, changeset: changeset, view: view, version: position, pending: pending.count)
    }
}
