import FlowSyncCore
import FlowSyncLoop
import FlowSyncProtocol
import Logging

/// The store's part of the daemon: recovery at start, syncs (group commit and the
/// `interval` timer) and a storage failure (docs/ARCHITECTURE.md, "Storage"). The store
/// is used through ``DirectorStore`` only.
extension Server {
    /// Rebuilds the lists from the store (before ``start(adoptingDescriptor:)``, which
    /// calls it when nobody did) — or, with `lists.on_demand` and a store that can, only
    /// opens it (and loads the declared lists): every other list loads on first use. Lists whose stored history may not be what clients
    /// saw (a repair, or an unclean stop under a lossy fsync policy) start a new epoch,
    /// so their subscribers resync from a snapshot instead of trusting a gap.
    /// - Throws: ``StoreError`` — corruption (refuse to start; `repair` keeps the
    ///   valid prefix) or an I/O failure.
    @discardableResult
    public func recover(repair: Bool = false) throws(StoreError) -> RecoveryReport {
        precondition(!lifecycle.hasRecovered, "Internal inconsistency in Server: recover() called twice")
        let options = RecoveryOptions(
            directorLimits: configuration.director, historyLimits: configuration.historyLimits,
            dedupeLimits: configuration.dedupeLimits, repair: repair)
        let started = MonotonicClock.nanoseconds()
        let report: RecoveryReport
        switch storage.kind {
        case .cluster(let cluster, let node):
            // Cluster mode: every list loads on first use, from the store, on the loop.
            report = try cluster.recover(options)
            cluster.onFailure = { [weak self] error in self?.storageFailed(error) }
            followReplicas(node)
        case .onDemand(let onDemand, _):
            // Lists on demand: nothing is read now but the declared lists; each list is
            // recovered by the same rules when it is first used (Server+Loading.swift).
            report = try openOnDemand(onDemand, options)
            logger.info(
                "lists load on demand",
                metadata: ["lists.on_demand": "\(configuration.storage.listLoading.rawValue)"])
            startStoredListCheck(repair: repair)
        case .appending, .committing:
            report = try store.recover(options)
            for list in report.lists { try adopt(list) }
        }
        for note in report.notes { logger.warning("store: \(note)") }
        lifecycle.recovered()
        logLifecycle()
        recordListGauges()
        if !report.lists.isEmpty || report.truncatedBytes > 0 {
            logger.info(
                "recovered",
                metadata: [
                    "lists": "\(report.lists.count)", "batches": "\(report.replayedBatches)",
                    "truncatedBytes": "\(report.truncatedBytes)",
                    "ms": "\((MonotonicClock.nanoseconds() - started) / 1_000_000)",
                ])
        }
        return report
    }

    /// Syncs what the store wrote (group commit under `always`, the timer under `interval`).
    func syncStore() {
        guard storageFailure == nil, let store = storage.appending, store.hasUnsyncedWrites else { return }
        let started = MonotonicClock.nanoseconds()
        do {
            try store.sync()
        } catch {
            storageFailed(error)
            return
        }
        events.storeSynced(nanoseconds: MonotonicClock.nanoseconds() - started)
    }

    /// An asynchronous commit (``CommittingStore``) returned, on the loop thread: its
    /// frames, and those held behind them, are released to their connections (they
    /// leave with the end of this turn's flush); a failure takes the storage-failure
    /// path, so nothing of that batch leaves.
    func commitCompleted(_ ticket: CommitGate<Int, [UInt8]>.Ticket, _ outcome: CommitOutcome, of list: ListHost?) {
        switch outcome {
        case .committed:
            release(commits.gate.complete(ticket, .committed))
        case .fenced(let reason):
            let completion = commits.gate.complete(ticket, .failed)
            release(completion)
            listLost(list, closing: completion.dropped, .fenced(reason))
        case .failed(let error):
            _ = commits.gate.complete(ticket, .failed)
            storageFailed(error)
        }
        // A shutdown may have been waiting for this commit.
        if commits.closeConnectionsWhenDrained && commits.gate.pendingCount == 0 && storageFailure == nil {
            commits.closeConnectionsWhenDrained = false
            closeConnectionsForShutdown()
        }
        finishShutdownIfDone()
    }

    private func release(_ completion: CommitGate<Int, [UInt8]>.Completion) {
        for (id, frames) in completion.released {
            guard storageFailure == nil, let connection = connections[id] else { continue }
            for frame in frames { enqueueNow(frame, to: connection) }
        }
    }

    /// Why a list left this node abruptly (cluster mode), for its clients and the log.
    enum ListLoss: Equatable {
        /// The store fenced one of its batches (``FenceReason``).
        case fenced(FenceReason)
        /// Its replica could not follow the owner's log (a batch that does not decode
        /// or apply): it loads again at its next use.
        case replicaBroken

        /// What the list's clients are told after "list "name"".
        var explanation: String {
            switch self {
            case .fenced(let reason): return reason.explanation
            case .replicaBroken:
                return
                    "could not follow its owner's log on this node and loads again at its next use; reconnect and resume"
            }
        }
    }

    /// The store fenced a batch of `list` (cluster mode), or its replica broke. The list
    /// is dropped here — its state in memory is ahead of what was committed, or behind
    /// what can be followed — and its subscribers, and every connection that lost a
    /// frame (an Ack it will never get), are closed with `server-draining` (5001) and a
    /// message saying what happened: they reconnect and resume where the list lives
    /// now. Only the host the batch was sealed on is dropped: the fenced completions of
    /// its later batches find it gone, or a newer load.
    ///
    /// After ``FenceReason/notCommitted`` the list is still this node's: it loads again
    /// at once (the claim's notification then brings the writes other nodes had
    /// forwarded to it back, issue #33), rather than at its next use.
    func listLost(_ list: ListHost?, closing dropped: [Int], name: String? = nil, _ loss: ListLoss) {
        var toClose = Set(dropped)
        // One step forgets all of it (ListTable.lose): its turn flags, its compaction,
        // and the writes other nodes forwarded to it and not sealed yet — never answered
        // from here: their nodes send them again when the list is claimed next.
        var dropped = false
        if let list, lists.lose(list) {
            dropped = true
            toClose.formUnion(list.subscribers.map(\.id))
            if case .fenced = loss { metrics.listsFenced.increment() }
            logger.warning(
                "list dropped here, its clients closed with 5001: it \(loss.explanation)",
                metadata: ["flowsync.list": "\(list.name)", "subscribers": "\(list.subscribers.count)"])
            recordListGauges()
        }
        let name = list?.name ?? name ?? "?"
        for id in toClose {
            guard let connection = connections[id], !connection.isClosing else { continue }
            close(connection, code: .serverDraining, message: "list \"\(name)\" \(loss.explanation)")
        }
        if dropped, loss == .fenced(.notCommitted), storage.cluster != nil, storageFailure == nil,
            !lifecycle.isShuttingDown
        {
            loadWithoutRequest(name)
        }
    }

    /// A write or fsync failed: nothing more leaves (the batch in flight is never
    /// acknowledged), and the fatal handler runs. Connections are closed at the end of
    /// the turn, never inside a callback.
    func storageFailed(_ error: StoreError) {
        guard lifecycle.storageFailed(error) else { return }
        logLifecycle()
        metrics.storeFailed.record(1)
        logger.critical("storage failed; no further acknowledgement will be sent", metadata: ["error": "\(error)"])
        // No flush runs after a failure (Outbox, lifetime rule 3).
        outbox.discardAll()
        commits.gate.dropHeldFrames()
        for connection in connections.values { connection.discardPending() }
        onFatalStorageError?(error)
    }

    /// The end of the turn after a failure: the listener and every connection close,
    /// once.
    func closeEverythingAfterStorageFailure() {
        guard lifecycle.closeAfterFailure() else { return }
        handles.listener?.close()
        handles.listener = nil
        for connection in Array(connections.values) { peerEnded(connection, nil) }
    }
}
