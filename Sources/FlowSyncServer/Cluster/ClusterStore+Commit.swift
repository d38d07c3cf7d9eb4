import FlowSyncCore
import FlowSyncLoop
import FlowSyncPostgres
import FlowSyncProtocol
import Logging

/// The store half of the cluster node: a list is loaded by a claim and a read of its
/// log, and a batch commits by the fenced append (docs/CLUSTER.md). Each list's
/// ownership is its ``ListOwnership`` machine in ``ClusterStore/lists``.
extension ClusterStore {
    // MARK: Loading

    public func load(_ name: String, create: Bool, completion: @escaping (Result<RecoveredList?, StoreError>) -> Void) {
        withLog { [weak self] log in
            guard let self else { return }
            if create {
                claim(name, completion)
                return
            }
            log.head(list: name) { [weak self] result in
                guard let self else { return }
                switch result {
                case .failure(let error):
                    completion(.failure(.unusable("PostgreSQL: reading list \"\(name)\": \(error)")))
                case .success(nil): completion(.success(nil))
                case .success: claim(name, completion)
                }
            }
        }
    }

    func claim(_ name: String, _ completion: @escaping (Result<RecoveredList?, StoreError>) -> Void) {
        lists.update(name) { $0.claimStarted() }
        // A new list's epoch: random, as a single node's, within PostgreSQL's bigint.
        let epoch = Int64.random(in: 1...Int64.max)
        // A free list (new, released, or its owner's lease lapsed) is taken only by its
        // preferred owner (placement), judged on the live nodes read just now (issue
        // #33: a node that started a second ago counts); a list this node owns is
        // always taken back.
        withFreshLiveNodes { [weak self] in
            self?.withLog { [weak self] log in self?.claim(name, epoch: epoch, log, completion) }
        }
    }

    private func claim(
        _ name: String, epoch: Int64, _ log: ClusterLog,
        _ completion: @escaping (Result<RecoveredList?, StoreError>) -> Void
    ) {
        log.claim(list: name, epoch: epoch, takeFree: isPreferredOwner(of: name)) { [weak self] result in
            guard let self else { return }
            switch result {
            case .failure(let error):
                loadFailed(name, .unusable("PostgreSQL: claiming list \"\(name)\": \(error)"), completion)
            case .success(nil):
                // Another live node owns it, or placement prefers another node for a
                // free list: follow it as a replica.
                loadReplica(name, log, completion)
            case .success(let ownership?):
                log.load(list: name, epoch: ownership.epoch) { [weak self] result in
                    guard let self else { return }
                    switch result {
                    case .failure(let error):
                        loadFailed(name, .unusable("PostgreSQL: reading the log of \"\(name)\": \(error)"), completion)
                    case .success(let stored):
                        let loaded = rebuild(name, ownership, stored)
                        completion(loaded)
                        // A follower behind the head learns of it even if the previous
                        // owner's last pushes were lost (BatchAnnouncements, rule 7).
                        if case .success = loaded {
                            perform(announcements.announceHead(list: name, version: ownership.head))
                        }
                        // Writes forwarded to the list while it had no live owner.
                        if case .success = loaded { takeInbox(name, log) }
                    }
                }
            }
        }
    }

    /// Replays what a load read (the newest snapshot, then the batches after it) into
    /// the list; this node owns it from now on.
    func rebuild(
        _ name: String, _ ownership: ClusterLog.Ownership, _ stored: ClusterLog.Stored
    ) -> Result<RecoveredList?, StoreError> {
        let path = "postgres:fs_batches/\(name)"
        let rebuilt: (sequencer: Sequencer, head: Int64, snapshotVersion: Int64)
        do throws(StoreError) {
            rebuilt = try rebuildList(name, epoch: ownership.epoch, stored)
        } catch {
            lists.update(name) { $0.loadFailed() }
            return .failure(error)
        }
        guard rebuilt.head == ownership.head else {
            lists.update(name) { $0.loadFailed() }
            return .failure(.corrupt(path, offset: 0, "head is \(ownership.head) but the log ends at \(rebuilt.head)"))
        }
        let batches = stored.batches
        lists.update(name) {
            $0.claimed(ownership, batches: batches.count, bytes: batches.reduce(0) { $0 + $1.body.count })
        }
        logger.debug(
            "cluster: list claimed",
            metadata: [
                "flowsync.list": "\(name)", "term": "\(ownership.term)", "head": "\(ownership.head)",
                "snapshot": "\(rebuilt.snapshotVersion)", "replayed": "\(batches.count)",
            ])
        return .success(RecoveredList(name: name, sequencer: rebuilt.sequencer))
    }

    /// The list at `epoch` from its newest snapshot (or version 0) and the batches after
    /// it, each checked to be the next Diff; its head is the last version replayed.
    func rebuildList(
        _ name: String, epoch: Int64, _ stored: ClusterLog.Stored
    ) throws(StoreError) -> (sequencer: Sequencer, head: Int64, snapshotVersion: Int64) {
        let path = "postgres:fs_snapshots/\(name)"
        var rebuilder: ListRebuilder
        var from: Int64 = 0
        if let snapshot = stored.snapshot {
            let decoded: StoredSnapshot
            do { decoded = try StoreFormat.decodeSnapshot(snapshot.body) } catch {
                throw .corrupt(path, offset: Int(snapshot.version), "snapshot \(snapshot.version): \(error)")
            }
            guard decoded.listName == name,
                decoded.position == ListVersion(epoch: UInt64(epoch), version: UInt64(snapshot.version))
            else {
                throw .corrupt(
                    path, offset: Int(snapshot.version),
                    "snapshot \(snapshot.version) is of \"\(decoded.listName)\" at \(decoded.position)")
            }
            do { rebuilder = try ListRebuilder(snapshot: decoded, options: recoveryOptions) } catch {
                throw .corrupt(path, offset: Int(snapshot.version), "\(error)")
            }
            from = snapshot.version
        } else {
            rebuilder = ListRebuilder(epoch: UInt64(epoch), options: recoveryOptions)
        }
        for batch in try decode(name, epoch: epoch, after: from, stored.batches) {
            do { try rebuilder.replay(batch.commit) } catch {
                throw .corrupt("postgres:fs_batches/\(name)", offset: Int(batch.commit.to.version), "\(error)")
            }
        }
        return (rebuilder.sequencer, from + Int64(stored.batches.count), from)
    }

    /// A load of `name` failed: its claim ends (``ListOwnership/loadFailed()``) and the
    /// server gets the error (the list is refused now, tried again at its next use).
    func loadFailed(
        _ name: String, _ error: StoreError, _ completion: (Result<RecoveredList?, StoreError>) -> Void
    ) {
        lists.update(name) { $0.loadFailed() }
        completion(.failure(error))
    }

    // MARK: Committing

    public func submit(_ batch: StoredBatch, completion: @escaping (CommitOutcome) -> Void) {
        let name = batch.listName
        guard let ownership = lists[name].owned?.ownership, batch.commit.to.epoch == UInt64(ownership.epoch) else {
            // Not owned here (any more): fenced earlier, or handed over.
            completion(.fenced(.claimedElsewhere(owner: nil)))
            return
        }
        let commit = batch.commit
        let body =
            batch.encodedDiff
            ?? encoder.encode(
                .diff(
                    Diff(
                        listName: name, epoch: commit.to.epoch, fromVersion: commit.from.version,
                        toVersion: commit.to.version, digest: commit.digest, changeset: commit.changeset,
                        mutations: commit.mutations)))
        let version = Int64(commit.to.version)
        withLog { [weak self] log in
            log.append(list: name, ownership: ownership, version: version, body: body) { [weak self] result in
                guard let self else { return }
                switch result {
                case .success(.appended):
                    lists.update(name) { $0.committed(term: ownership.term, version: version, bytes: body.count) }
                    // Pushed only now that the append returned (never before: a follower
                    // must not show what the log lacks), and before the completion
                    // releases the answers (`ClusterStore+PeerLinks`, rule 1).
                    pushCommitted(name, ownership, version: version, frame: body)
                    completion(.committed)
                    perform(announcements.committed(list: name, version: version, frame: body))
                case .success(.fenced):
                    lose(name, term: ownership.term, "the append was fenced: another node owns the list")
                    completion(.fenced(.claimedElsewhere(owner: nil)))
                    // It may have been released to this node meanwhile (Placement, rule 6).
                    reclaimIfFree(name)
                case .failure(let error) where error.outcomeUnknown:
                    let append = Unresolved(list: name, ownership: ownership, version: version, completion: completion)
                    if case .ready(let current) = state, current !== log {
                        resolve(append, with: current)
                    } else {
                        unresolved.append(append)
                    }
                case .failure(let error):
                    completion(.failed(.unusable("PostgreSQL: appending to \"\(name)\" failed: \(error)")))
                }
            }
        }
    }

    /// Reads the list's row back to learn whether an append committed.
    func resolve(_ append: Unresolved, with log: ClusterLog) {
        log.head(list: append.list) { [weak self] result in
            guard let self else { return }
            switch result {
            case .success(let row?)
            where row.owner == options.node && row.term == append.ownership.term
                && row.epoch == append.ownership.epoch && row.head >= append.version:
                lists.update(append.list) { $0.resolvedCommitted(term: append.ownership.term, version: append.version) }
                append.completion(.committed)
                // Not pushed (its frame is gone by now): announced through PostgreSQL
                // whatever the links (BatchAnnouncements, rule 7).
                perform(announcements.announceHead(list: append.list, version: append.version))
            case .success(let row):
                // Not committed. Still this node's (same owner; a later claim of its own
                // or the same term): the list reloads here. Anyone else's: it moved.
                let reason: FenceReason =
                    row?.owner == options.node ? .notCommitted : .claimedElsewhere(owner: row?.owner)
                lose(
                    append.list, term: append.ownership.term,
                    reason == .notCommitted
                        ? "an append cut off by the lost connection did not commit; the list reloads here"
                        : "an append cut off by the lost connection did not commit, and another node owns the list")
                append.completion(.fenced(reason))
                if reason != .notCommitted { reclaimIfFree(append.list) }
            case .failure(let error) where error.outcomeUnknown:
                unresolved.append(append)
            case .failure(let error):
                append.completion(.failed(.unusable("PostgreSQL: reading back \"\(append.list)\" failed: \(error)")))
            }
        }
    }

    /// Sends an announcement of committed batches (``BatchAnnouncements``), after them
    /// in the pipeline, so after their commits.
    func perform(_ action: BatchAnnouncements.Action) {
        guard case .announce(let id, let batch) = action else { return }
        guard let log = readyLog else {
            // No session (the machine thinks there is one only until sessionLost runs).
            perform(announcements.announced(id, lost: true))
            return
        }
        peerCounters.postgresAnnouncements += batch.count
        peerCounters.postgresAnnouncementStatements += 1
        log.announce(batch.map { (list: $0.list, version: $0.version, frame: $0.frame) }) { [weak self] result in
            guard let self else { return }
            var lost = false
            if case .failure(let error) = result {
                if error.outcomeUnknown {
                    lost = true
                } else {
                    logger.warning("cluster: announcing committed batches failed", metadata: ["error": "\(error)"])
                }
            }
            perform(announcements.announced(id, lost: lost))
        }
    }

    /// This node no longer serves the list at `term` (a later claim of its own keeps
    /// it): the server drops it, and its next use claims and reads it again.
    func lose(_ name: String, term: Int64, _ reason: String) {
        guard lists.update(name, { $0.fenced(term: term) }) else { return }
        logger.warning(
            "cluster: list fenced", metadata: ["flowsync.list": "\(name)", "term": "\(term)", "reason": "\(reason)"])
    }
}
