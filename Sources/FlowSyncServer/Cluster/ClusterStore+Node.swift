import FlowSyncCore
import FlowSyncLoop
import FlowSyncPostgres
import FlowSyncProtocol

/// Replicas and forwarded writes (docs/CLUSTER.md, "Replicas"): a node that does not own
/// a list follows its batches through PostgreSQL — `LISTEN fs_batches` (and
/// `fs_frames`: the next batch's frame, applied without a read), then a read of the
/// batches after the last one it has — and forwards writes to the owner through
/// `fs_inbox`; the owner answers in a notification (`fs_answers`; `fs_outbox` for a
/// long answer or an origin of an older build).
///
/// Why through PostgreSQL rather than a peer link to the owner: every batch is there
/// already (a replica applies only what was announced after its commit, or reads it,
/// so it can never show a write the log does not hold), it needs no node addresses or
/// peer credentials, and a dead owner changes nothing for a replica. The price is a
/// round trip to PostgreSQL per batch that does not come with its frame; every node is
/// notified of every list's batches and ignores the lists it does not follow. With peer
/// links on (issue #33; `ClusterStore+PeerLinks.swift`), owners also push batches and
/// writes are forwarded over the links; all of this stays the path without a link.
extension ClusterStore {
    public func isReplica(_ name: String) -> Bool { lists[name].isReplica }

    /// Half a lease: a dead owner's lease lapses at most one lease after its last
    /// renewal, so a take-over is tried about twice before it can work.
    public var forwardDeadlineMilliseconds: Int { max(250, options.leaseMilliseconds / 2) }

    /// Decodes the log's record bodies after `version`, checking that each is the next
    /// Diff of `name` at `epoch`.
    func decode(
        _ name: String, epoch: Int64, after version: Int64, _ batches: [(version: Int64, body: [UInt8])]
    ) throws(StoreError) -> [ReplicatedBatch] {
        let path = "postgres:fs_batches/\(name)"
        let decoder = FrameDecoder(limits: StoreFormat.decoderLimits, dictionary: .standard)
        var decoded: [ReplicatedBatch] = []
        decoded.reserveCapacity(batches.count)
        for (index, batch) in batches.enumerated() {
            decoder.feed(batch.body)
            let message: Message?
            do { message = try decoder.next() } catch {
                throw .corrupt(path, offset: Int(batch.version), "batch \(batch.version) does not decode: \(error)")
            }
            guard case .diff(let diff)? = message, decoder.bufferedByteCount == 0,
                diff.listName == name, diff.epoch == UInt64(epoch), diff.toVersion == UInt64(batch.version),
                batch.version == version + Int64(index + 1)
            else {
                throw .corrupt(
                    path, offset: Int(batch.version), "batch \(batch.version) is not the next diff of \"\(name)\"")
            }
            decoded.append(
                ReplicatedBatch(
                    commit: Sequencer.Commit(
                        from: diff.from, to: diff.to, changeset: diff.changeset, digest: diff.digest,
                        mutations: diff.mutations), frame: batch.body))
        }
        return decoded
    }

    // MARK: Following a list

    /// Loads `name` as a replica: its row (for the epoch), then every batch of the
    /// epoch. Batches committed after that read are notified (this session listens
    /// since it connected) and read by ``catchUp(_:)``.
    func loadReplica(
        _ name: String, _ log: ClusterLog, _ completion: @escaping (Result<RecoveredList?, StoreError>) -> Void
    ) {
        log.head(list: name) { [weak self] result in
            guard let self else { return }
            switch result {
            case .failure(let error):
                loadFailed(name, .unusable("PostgreSQL: reading list \"\(name)\": \(error)"), completion)
            case .success(nil):
                loadFailed(name, .unusable("list \"\(name)\" vanished from fs_lists"), completion)
            case .success(let row?):
                log.load(list: name, epoch: row.epoch) { [weak self] result in
                    guard let self else { return }
                    switch result {
                    case .failure(let error):
                        loadFailed(name, .unusable("PostgreSQL: reading the log of \"\(name)\": \(error)"), completion)
                    case .success(let stored):
                        let rebuilt: (sequencer: Sequencer, head: Int64, snapshotVersion: Int64)
                        do throws(StoreError) {
                            rebuilt = try rebuildList(name, epoch: row.epoch, stored)
                        } catch {
                            loadFailed(name, error, completion)
                            return
                        }
                        lists.update(name) {
                            $0.following(epoch: row.epoch, head: rebuilt.head, owner: row.ownerAlive ? row.owner : nil)
                        }
                        // Its owner pushes its batches from now on (peer links).
                        followOnLinks(name)
                        // A free list (no owner, or its lease lapsed): ask its preferred
                        // node, as the live nodes are now, to claim it — possibly this
                        // one (the nudge then takes the replica over). If nobody does, a
                        // write here takes it over when overdue.
                        if row.owner == nil || !row.ownerAlive {
                            withFreshLiveNodes { [weak self] in
                                guard let self, lists[name].isReplica,
                                    let preferred = Placement.owner(of: name, among: liveNodes)
                                else { return }
                                withLog { log in log.nudge(owner: preferred, list: name) }
                            }
                        }
                        logger.debug(
                            "cluster: following list as a replica",
                            metadata: [
                                "flowsync.list": "\(name)", "owner": "\(row.owner ?? "")", "head": "\(rebuilt.head)",
                            ])
                        completion(.success(RecoveredList(name: name, sequencer: rebuilt.sequencer)))
                        // A batch committed between the claim and the read above was
                        // notified before this list was followed: read once more.
                        catchUp(name)
                    }
                }
            }
        }
    }

    /// A notification arrived (loop thread).
    func notified(_ channel: String, _ payload: String) {
        switch channel {
        case ClusterLog.batchesChannel:
            guard let (list, version) = ClusterLog.parseBatchNotification(payload), let replica = lists[list].following,
                version > replica.head
            else { return }
            catchUp(list)
        case ClusterLog.framesChannel:
            // A committed batch with its frame: the next one applies without a read;
            // one past a gap reads what is missing (its batches notification, sent
            // right after, would too).
            guard let (list, version, frame) = ClusterLog.parseFrameNotification(payload),
                let replica = lists[list].following, version > replica.head
            else { return }
            if version == replica.head + 1 {
                deliverAnnounced(list, version: version, frame: frame)
            } else {
                catchUp(list)
            }
        case ClusterLog.inboxChannel:
            guard let (owner, list) = ClusterLog.parseInboxNotification(payload) else { return }
            if owner.isEmpty {
                withFreshLiveNodes { [weak self] in self?.onOrphanedList?(list) }
                return
            }
            guard owner == options.node else { return }
            if lists[list].owned != nil {
                withLog { [weak self] log in self?.takeInbox(list, log) }
            } else {
                // Writes were forwarded to a list this node owns in PostgreSQL but has
                // not loaded (it restarted, or unloaded it), or placement asks it to
                // claim a free list: the server loads it (or takes its replica over),
                // and the claim takes the inbox. The live nodes are read first, so the
                // claim's placement check sees the node that asked.
                withFreshLiveNodes { [weak self] in self?.onInboxForUnloadedList?(list) }
            }
        case ClusterLog.outboxChannel:
            guard payload == options.node else { return }
            withLog { [weak self] log in self?.takeOutbox(log) }
        case ClusterLog.answersChannel:
            answerNotified(payload)
        case ClusterLog.claimsChannel:
            guard let claim = ClusterLog.parseClaimNotification(payload) else { return }
            claimed(claim)
        case ClusterLog.nodesChannel:
            guard payload != options.node else { return }
            // A node took its lease: read the live nodes now (placement, moves).
            withFreshLiveNodes {}
        default:
            return
        }
    }

    /// Runs `action` after the live nodes were read again — for placement decisions
    /// about a list that has just become free or been nudged (the node that released it
    /// has just deleted its lease; the node that nudged sees a lease this node may not
    /// have seen yet). One read serves every action asked for meanwhile (a stopping node
    /// releases all its lists at once).
    func withFreshLiveNodes(_ action: @escaping () -> Void) {
        afterLiveNodes.append(action)
        guard afterLiveNodes.count == 1 else { return }
        withLog { [weak self] log in
            log.livePeers { [weak self] result in
                guard let self else { return }
                if case .success(let nodes) = result { livePeersRead(nodes) }
                let actions = afterLiveNodes
                afterLiveNodes = []
                for action in actions { action() }
            }
        }
    }

    /// Reads the replica's batches after its head and delivers them; one read at a
    /// time per list (a notification meanwhile asks for one more).
    func catchUp(_ name: String) {
        // One read at a time (ListOwnership, rule 3).
        guard let replica = lists.update(name, { $0.fetchWanted() }) else { return }
        peerCounters.logReads += 1
        withLog { [weak self] log in
            log.batches(list: name, epoch: replica.epoch, after: replica.head) { [weak self] result in
                guard let self, lists[name].isReplica else { return }
                let again = lists.update(name) { $0.fetchEnded() }
                switch result {
                case .failure(let error):
                    // A lost connection reads every replica again when it is back.
                    if !error.outcomeUnknown {
                        logger.error(
                            "cluster: reading a replica's batches failed",
                            metadata: ["flowsync.list": "\(name)", "error": "\(error)"])
                    }
                    return
                case .success(let rows):
                    deliver(name, rows)
                }
                if again { catchUp(name) }
            }
        }
    }

    /// Delivers the rows read after some head: only those after the replica's head now
    /// (two reads may overlap: a catch-up and a take-over), each once, in order.
    func deliver(_ name: String, _ rows: [(version: Int64, body: [UInt8])]) {
        guard let replica = lists[name].following else { return }
        let fresh = rows.filter { $0.version > replica.head }
        guard !fresh.isEmpty else { return }
        do throws(StoreError) {
            let batches = try decode(name, epoch: replica.epoch, after: replica.head, fresh)
            lists.update(name) { $0.delivered(upTo: fresh.last!.version) }
            onReplicated?(name, batches)
        } catch {
            // Not the next batches: the replica cannot go on. Forgotten here; the
            // server drops the list, and its next use loads it again.
            logger.error(
                "cluster: a replica's batches do not follow on",
                metadata: ["flowsync.list": "\(name)", "error": "\(error)"])
            lists.update(name) { $0.broken() }
            unfollowOnLinks(name)
            onReplicaBroken?(name)
        }
    }

    /// Applies an announced frame that is the replica's next batch; a frame that does
    /// not decode as that (it cannot, short of a bug) is left to a read of the log.
    func deliverAnnounced(_ name: String, version: Int64, frame: [UInt8]) {
        guard let replica = lists[name].following, version == replica.head + 1 else { return }
        do throws(StoreError) {
            let batches = try decode(name, epoch: replica.epoch, after: replica.head, [(version: version, body: frame)])
            lists.update(name) { $0.delivered(upTo: version) }
            onReplicated?(name, batches)
        } catch {
            logger.warning(
                "cluster: an announced frame is not the next batch; reading the log",
                metadata: ["flowsync.list": "\(name)", "error": "\(error)"])
            catchUp(name)
        }
    }

    /// After a (re)connection: every replica reads what it missed, every owned list
    /// takes the writes forwarded to it, and this node takes its answers.
    func resynchronise(_ log: ClusterLog) {
        for name in lists.replicaNames { catchUp(name) }
        for name in lists.ownedNames { takeInbox(name, log) }
        takeOutbox(log)
    }

    // MARK: Releasing and taking over

    public func release(_ completion: @escaping () -> Void) {
        guard let log = readyLog else {
            completion()
            return
        }
        var done = false
        let finish = {
            guard !done else { return }
            done = true
            completion()
        }
        // Bounded: a PostgreSQL that does not answer must not hold the stop.
        let timer = LoopTimer(loop: loop)
        timer.start(after: 2_000) { [weak self] in
            self?.logger.warning("cluster: releasing the lists timed out; they move when the lease lapses")
            finish()
        }
        let owned = lists.ownedNames.count
        log.release { [weak self] result in
            timer.close()
            switch result {
            case .success(let released):
                self?.logger.info(
                    "cluster: lists and lease released", metadata: ["lists": "\(released)", "owned": "\(owned)"])
            case .failure(let error):
                self?.logger.warning(
                    "cluster: releasing the lists failed; they move when the lease lapses",
                    metadata: ["error": "\(error)"])
            }
            self?.lists.releaseAll()
            finish()
        }
    }

    /// Claims replica `name` if it is free (its owner released it, or its lease lapsed),
    /// whatever placement prefers: the fallback when the preferred node does not.
    public func takeOver(_ name: String, completion: @escaping (TakeOverOutcome) -> Void) {
        guard let replica = lists[name].following, lists.update(name, { $0.takeOverStarted() }) else {
            completion(lists[name].owned != nil ? .owned : .failed(.unusable("list \"\(name)\" is not followed here")))
            return
        }
        // Every way out ends the take-over in the machine: owned, or following again.
        let ended: (TakeOverOutcome, ClusterLog.Ownership?) -> Void = { [weak self] outcome, ownership in
            self?.lists.update(name) { $0.takeOverEnded(ownership) }
            completion(outcome)
        }
        withLog { [weak self] log in
            log.claim(list: name, epoch: replica.epoch) { [weak self] result in
                guard let self else { return }
                switch result {
                case .failure(let error):
                    ended(.failed(.unusable("PostgreSQL: claiming list \"\(name)\": \(error)")), nil)
                case .success(nil):
                    ended(.ownedElsewhere, nil)
                case .success(let ownership?):
                    guard ownership.epoch == replica.epoch else {
                        ended(.failed(.unusable("list \"\(name)\" changed epoch under its replica")), nil)
                        return
                    }
                    // Batches the replica has not delivered yet come first: the list
                    // here must be at `head` before it sequences anything.
                    let from = lists[name].following?.head ?? replica.head
                    log.batches(list: name, epoch: ownership.epoch, after: from) { [weak self] result in
                        guard let self else { return }
                        switch result {
                        case .failure(let error):
                            ended(.failed(.unusable("PostgreSQL: reading the log of \"\(name)\": \(error)")), nil)
                        case .success(let rows):
                            deliver(name, rows)
                            guard let now = lists[name].following, now.head == ownership.head else {
                                ended(
                                    .failed(
                                        .unusable("list \"\(name)\": the replica did not reach head \(ownership.head)")),
                                    nil)
                                return
                            }
                            // Owned now; the next snapshot comes one full interval from
                            // now (at most two intervals of batches to replay).
                            lists.update(name) { $0.takeOverEnded(ownership) }
                            unfollowOnLinks(name)
                            logger.info(
                                "cluster: took over list",
                                metadata: [
                                    "flowsync.list": "\(name)", "term": "\(ownership.term)",
                                    "head": "\(ownership.head)",
                                ])
                            completion(.owned)
                            takeInbox(name, log)
                        }
                    }
                }
            }
        }
    }

    // MARK: Unloading

    public func unload(_ name: String) -> Bool {
        let unresolved = unresolved.contains { $0.list == name }
        let wasReplica = lists[name].isReplica
        let unloaded = lists.update(name) { $0.unloaded(unresolved: unresolved) }
        if unloaded && wasReplica { unfollowOnLinks(name) }
        return unloaded
    }

    // MARK: Snapshots in PostgreSQL

    public func snapshotDue(of name: String) -> Bool {
        lists[name].snapshotDue(everyBatches: options.snapshotEveryBatches, everyBytes: options.snapshotEveryBytes)
    }

    /// Stores `encoded` (built off the loop) as the list's state at `position` — if this
    /// node still owns the list and `position` is committed — and trims the log behind
    /// the previous snapshot. A failure is logged, not fatal: the next load replays
    /// more batches, nothing is lost.
    public func compact(list name: String, at position: ListVersion, encoded: [UInt8]) {
        guard let ownership = lists[name].owned?.ownership, UInt64(ownership.epoch) == position.epoch,
            Int64(position.version) <= ownership.head
        else { return }
        guard position.version > 0 else {
            // The history still reaches version 0: nothing to store yet.
            lists.update(name) { $0.snapshotSkipped() }
            return
        }
        let counted = lists.update(name) { $0.snapshotStarted() }
        withLog { [weak self] log in
            log.putSnapshot(list: name, ownership: ownership, version: Int64(position.version), body: encoded) {
                [weak self] result in
                guard let self else { return }
                switch result {
                case .success(true):
                    // What was appended since the count was taken stays counted.
                    lists.update(name) { $0.snapshotEnded(stored: counted) }
                    logger.debug(
                        "cluster: snapshot stored",
                        metadata: [
                            "flowsync.list": "\(name)", "version": "\(position.version)", "bytes": "\(encoded.count)",
                        ])
                case .success(false):
                    lists.update(name) { $0.snapshotEnded(stored: nil) }
                    logger.warning(
                        "cluster: snapshot not stored (the list is no longer this node's)",
                        metadata: ["flowsync.list": "\(name)"])
                case .failure(let error):
                    lists.update(name) { $0.snapshotEnded(stored: nil) }
                    logger.warning(
                        "cluster: storing a snapshot failed; loads replay more of the log",
                        metadata: ["flowsync.list": "\(name)", "error": "\(error)"])
                }
            }
        }
    }
}
