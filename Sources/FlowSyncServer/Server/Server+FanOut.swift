import FlowSyncCore
import FlowSyncLoop
import FlowSyncProtocol
import Logging

/// The end of every loop turn (the check hook): seal → store → fan-out → acks, the
/// catch-ups of lagging subscribers, and the one flush per connection. The list's own
/// part (sealing, the frames) is in ``ListHost``; each subscription's decision is its
/// ``SubscriptionFlow``'s, kept by the connection's machine.
extension Server {
    func endOfTurn() {
        // A sliced flush left connections to write, or a paced list waits for its
        // seal: the next turn polls without sleeping, reads what arrived, and goes on.
        defer { outbox.idle?.setActive(outbox.keepsIdleOn(failed: storageFailure != nil)) }
        if storageFailure != nil {
            closeEverythingAfterStorageFailure()
            return
        }
        sealDirtyLists()
        flushAll()
        // Lagging subscribers whose queue is already low (the flush wrote everything
        // without a uv_write, so no drain callback will come) are caught up now.
        var caughtUp = false
        for id in laggingConnections {
            guard let connection = connections[id] else { continue }
            caughtUp = catchUpLaggingFlows(of: connection) || caughtUp
        }
        if caughtUp { flushAll() }
        if !lists.compactionsDue.isEmpty { compactDueLists() }
        if storageFailure != nil { closeEverythingAfterStorageFailure() }
    }

    /// Seals every list with mutations waiting, each into one batch.
    ///
    /// **Pacing** (`[server] seal_wait_us`, issue #20): while a sliced flush still has
    /// connections to write — a fan-out longer than a slice is under way — a list's
    /// mutations wait for more to join them, up to `seal_wait_us` after the first
    /// arrived. Each batch costs one queue step per subscriber and one frame for the
    /// receivers to read, so sealing a batch every slice under pressure would make the
    /// sweep longer than the wait saves; a few larger batches per sweep keep the
    /// latency at about one sweep. With no flush under way nothing waits. `force`
    /// (shutdown) seals everything.
    func sealDirtyLists(force: Bool = false) {
        guard !outbox.dirtyLists.isEmpty, storageFailure == nil else { return }
        // The pacer decides (``FlushPacer``, rule 1); the clock is read only to pace.
        let pacer = outbox.pacer
        let now = pacer.pacesSeals(force: force) ? outbox.clock() : nil
        var dirty: [(name: ListHost, pendingSince: UInt64?)] = []
        for name in outbox.dirtyLists {
            guard let list = lists[name] else { continue }
            dirty.append((list, list.pendingSince))
        }
        outbox.dirtyLists = []
        let plan = pacer.plan(dirty, now: now, force: force)
        // Held lists stay dirty: a later turn seals them (the idle handle keeps turns
        // coming).
        for list in plan.hold { outbox.dirtyLists.insert(list.name) }
        for list in plan.seal { seal(list) }
    }

    /// Seals a list's pending mutations into one batch and queues its frames: the diff
    /// (encoded once, the same bytes for every subscriber), then acks and rejects — so a
    /// writer that also subscribes sees the batch before its ack.
    func seal(_ list: ListHost) {
        let sealed = list.seal(encoder: encoder)
        // Writes forwarded by other nodes are answered through the store, once their
        // batch committed (Server+Replicas.swift).
        let remote = list.remoteWrites.isEmpty ? [] : takeRemoteOutcomes(sealed.outcomes, of: list)
        if let batch = sealed.batch {
            events.batchCommitted()
            let stored = StoredBatch(listName: list.name, commit: batch.commit, encodedDiff: batch.frame)
            if let committingStore {
                // Committed later: the frames routed below wait in the commit gate
                // until the completion says committed. A completion that runs inside
                // submit is carried out after it, here: nothing is routed yet, so the
                // gate could neither hold nor drop this batch's frames.
                let ticket = commits.gate.begin(list: list.name)
                var inline: CommitOutcome?
                var submitting = true
                committingStore.submit(stored) { [weak self, weak list] outcome in
                    if case .committed = outcome, !remote.isEmpty { self?.clusterNode?.answer(remote) }
                    if submitting {
                        inline = outcome
                    } else {
                        self?.commitCompleted(ticket, outcome, of: list)
                    }
                }
                submitting = false
                if committingStore.snapshotDue(of: list.name) { lists.compactionDue(list) }
                if let inline {
                    commitCompleted(ticket, inline, of: list)
                    if case .fenced(let reason) = inline {
                        // Not one frame of the batch leaves; its writers will never get
                        // their Ack or Reject, so they are closed like its subscribers.
                        listLost(nil, closing: sealed.outcomes.map(\.tag), name: list.name, .fenced(reason))
                        return
                    }
                }
                guard storageFailure == nil else { return }
            } else {
                // Into the store before anything is queued; the frames queued below leave
                // only after flushAll() has synced it (fsync = always).
                guard let store = storage.appending else {
                    preconditionFailure("Internal inconsistency in Server: a store that neither commits nor appends")
                }
                do {
                    if try store.append(stored) {
                        lists.compactionDue(list)
                    }
                } catch {
                    storageFailed(error)
                    return
                }
            }
            fanOut(batch, of: list)
        } else if !remote.isEmpty {
            clusterNode?.answer(remote)
        }
        for outcome in sealed.outcomes {
            guard let connection = connections[outcome.tag] else { continue }
            switch outcome.result {
            case .success(let version):
                events.mutationCommitted()
                send(
                    .ack(Ack(listName: list.name, seq: outcome.id.seq, committed: version)), to: connection,
                    about: list.name)
            case .failure(let rejection):
                let (code, message) = ListHost.wire(rejection)
                events.mutationRejected(code: code.rawValue)
                send(
                    .reject(Reject(listName: list.name, seq: outcome.id.seq, code: code, message: message)),
                    to: connection, about: list.name)
            }
        }
    }

    /// Queues a committed batch's frame — the same bytes for everyone — to each
    /// subscriber whose flow says so.
    ///
    /// The per-subscriber work is kept to what the delivery needs (issue #20): the
    /// list's entries carry the connection and the slot of the subscription's flow
    /// (``ListHost/Subscriber``), so there is no dictionary lookup, no hashing of the
    /// list's name and no retain/release per subscriber; the frame's bytes are shared
    /// (one retain of the same buffer per queued copy), and `toFlush` is an append
    /// guarded by a flag.
    /// - Complexity: O(subscribers), each O(1).
    func fanOut(_ batch: ListHost.SealedBatch, of list: ListHost) {
        let commit = batch.commit
        // Subscribers whose first frame is being built off the loop get this batch
        // after it, from the build (the same bytes, in order: no gap).
        list.holdForPendingFrames(from: commit.from, to: commit.to, frame: batch.frame)
        let policy = configuration.backpressure
        let name = list.name
        let frame = batch.frame
        // A copy of the array (one retain of its storage): a subscriber closed below
        // (hard limit) leaves the list's array, not this one. Its connection stays
        // alive meanwhile — the table holds it until the socket closes at the turn's
        // end — and its machine, closing, answers nil: skipped, as before.
        let subscribers = list.subscribers
        for subscriber in subscribers {
            subscriber.connection._withUnsafeGuaranteedRef { connection in
                let queued = connection.queuedBytes
                let decided = connection.machine.updateFlow(inSlot: subscriber.slot, of: name) { flow in
                    (
                        wasLive: flow.state == .live,
                        decision: flow.batchCommitted(from: commit.from, to: commit.to, queued: queued, policy: policy)
                    )
                }
                guard let decided else { return }
                switch decided.decision {
                case .send:
                    enqueue(frame, to: connection, about: name)
                case .held:
                    break
                case .skip:
                    if decided.wasLive {
                        laggingConnections.insert(connection.id)
                        events.slowConsumer()
                        connection.logger.info(
                            "subscriber lagging: per-batch frames paused",
                            metadata: ["flowsync.list": "\(name)", "queued": "\(queued)"])
                    }
                }
            }
        }
    }

    /// Queues catch-ups for the connection's lagging subscriptions whose queue is low
    /// enough; returns whether any was queued.
    @discardableResult
    func catchUpLaggingFlows(of connection: Connection) -> Bool {
        var queued = false
        for name in connection.machine.laggingLists {
            // A catch-up queued above may have closed the connection (hard limit): its
            // subscriptions are gone and must stay gone.
            guard !connection.isClosing else { break }
            let policy = configuration.backpressure
            let bytes = connection.queuedBytes
            guard let list = lists[name],
                connection.machine.updateFlow(of: name, { $0.queueShrank(to: bytes, policy: policy) }) == true,
                let delivered = connection.machine.flow(of: name)?.delivered
            else { continue }
            // Inline for a small list; a large list's catch-up is built off the loop and
            // the flow waits for it (holding the batches committed meanwhile).
            let first = firstFrame(for: connection, of: list, from: delivered, digest: nil, cause: .lag)
            _ = connection.machine.updateFlow(of: name) { $0 = first.flow }
            if let frame = first.frame {
                enqueue(frame, to: connection, about: name)
                queued = true
            }
        }
        if connection.machine.laggingLists.isEmpty {
            laggingConnections.remove(connection.id)
        }
        return queued
    }

    /// Writes the connections with queued frames, once each, in the order they were
    /// queued. The durability rule: under fsync = always, no byte leaves while a batch
    /// appended to the store is not on disk — one sync covers every list written this
    /// turn (group commit), then the acks and diffs of all of them go out.
    ///
    /// **Sliced** (`sliced`, `[server] flush_slice_us`): after about that long, the
    /// connections not reached stay queued, first in line for the next turn, and the
    /// loop reads before it writes on (``flushIdle`` keeps it from sleeping). A batch's
    /// fan-out to thousands of subscribers then no longer holds every other client for
    /// its whole length: a write that arrives meanwhile is sealed within a slice, and
    /// its frame joins the queues of the subscribers not yet written — one write call
    /// carries both frames — so it reaches everyone one fan-out later, not two. Under
    /// pressure the frames per write call grow by themselves (issue #20). Order is
    /// kept: a connection is listed once, and its frames leave in queue order.
    ///
    /// Lifetime of the unretained `toFlush` entries: each names a connection that is
    /// in the table, or was forgotten and is then held by ``retiredConnections`` (see
    /// `forget`), which only the outermost flush empties, after its loop, of the
    /// connections no flush lists any more.
    func flushAll(sliced: Bool = true) {
        guard storageFailure == nil else { return }
        if configuration.fsyncPolicy == .always, storage.appending?.hasUnsyncedWrites == true {
            syncStore()
            guard storageFailure == nil else { return }
        }
        let framesBefore = statistics.framesSent
        let bytesBefore = statistics.bytesSent
        // The outbox walks its list under its lifetime rule; each connection written
        // comes back here (it may end the connection, which may flush again).
        let report = outbox.flush(now: loop.now, sliced: sliced) { connection, frames, bytes, error in
            finishFlush(of: connection, frames: frames, bytes: bytes, error: error)
        }
        let (frames, bytes) = (statistics.framesSent - framesBefore, statistics.bytesSent - bytesBefore)
        events.flushed(report, frames: frames, bytes: bytes)
    }

    /// After a connection's frames were handed to the socket (`error`: it is broken):
    /// counts them, and shuts a closing connection down behind them.
    func finishFlush(of connection: Connection, frames: Int, bytes: Int, error: UVError?) {
        if let error {
            peerEnded(connection, error)
            return
        }
        // The metrics counters follow at the end of the flush (``flushAll()``).
        events.written(frames: frames, bytes: bytes)
        if connection.isClosing {
            connection.shutdownAfterWrites { [weak self, weak connection] in
                guard let self, let connection else { return }
                // Closing: its subscriptions ended with the close.
                forget(connection, leaving: [])
            }
        }
    }
}
