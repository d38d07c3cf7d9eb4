import FlowSyncCore
import FlowSyncProtocol
import Logging

/// Cluster mode's replicas (docs/CLUSTER.md, "Replicas"): a list another node owns is
/// served here from a replica that follows the owner's committed batches; a write to it
/// is forwarded to the owner and answered here, an Ack only once this node's subscribers
/// have its Diff (``ForwardedWrites``); a replica whose owner stopped answering is taken
/// over.
extension Server {
    func followReplicas(_ store: ClusterNode) {
        store.onReplicated = { [weak self] name, batches in self?.replicated(name, batches) }
        store.onForwarded = { [weak self] name, writes in self?.received(writes, for: name) }
        store.onAnswers = { [weak self] answers in self?.answered(answers) }
        store.onInboxForUnloadedList = { [weak self] name in
            // Writes were forwarded to this node (or placement asked it to claim) for a
            // list it does not own here: take it over from its replica, or load it.
            guard let self, storageFailure == nil, !lifecycle.isShuttingDown else { return }
            if store.isReplica(name) {
                tryTakeOver(name, forwardAgain: false)
            } else if lists[name] == nil {
                loadWithoutRequest(name)
            }
        }
        store.onOrphanedList = { [weak self] name in
            // No owner (released at a clean stop, or never claimed): the preferred node
            // claims it now — from its replica, or by loading it. The others wait; a
            // write of theirs takes it over when overdue if the preferred node does not.
            guard let self, store.isPreferredOwner(of: name), storageFailure == nil, !lifecycle.isShuttingDown else {
                return
            }
            if store.isReplica(name) {
                tryTakeOver(name, forwardAgain: false)
            } else {
                loadWithoutRequest(name)
            }
        }
        store.onListClaimed = { [weak self] name, owner in self?.listClaimed(name, by: owner) }
        store.onSessionStarted = { [weak self] in self?.forwardWaitingWritesAgain() }
        store.onPeerLinkLost = { [weak self] in self?.forwardWaitingWritesAgain() }
        store.onMisplacedLists = { [weak self] names in self?.handOver(names) }
        store.onReplicaBroken = { [weak self] name in
            guard let self, let list = lists[name] else { return }
            listLost(list, closing: [], .replicaBroken)
        }
        store.onOwnershipLost = { [weak self] name, reason in
            guard let self, let list = lists[name] else { return }
            listLost(list, closing: [], .fenced(reason))
        }
    }

    /// The owner committed `batches` of a replica list: replayed here, their frames
    /// (the owner's bytes) fanned out, then the Acks they cover leave — after the Diff,
    /// in the same flush.
    private func replicated(_ name: String, _ batches: [ReplicatedBatch]) {
        guard let list = lists[name], storageFailure == nil else { return }
        for batch in batches {
            do {
                try list.replicate(batch.commit)
            } catch {
                logger.error(
                    "cluster: a replicated batch does not apply; list dropped",
                    metadata: ["flowsync.list": "\(name)", "error": "\(error)"])
                listLost(list, closing: [], .replicaBroken)
                return
            }
            events.batchReplicated()
            fanOut(ListHost.SealedBatch(commit: batch.commit, frame: batch.frame), of: list)
        }
        carryOut(relay.forwarded.replicaAdvanced(name, to: list.position))
    }

    // MARK: Writes on a replica (this node forwards)

    func forward(_ mutate: Mutate, from connection: Connection, to store: ClusterNode) {
        relay.forwarded.forwarded(mutate, connection: connection.id, now: loop.now)
        events.mutationForwarded()
        store.forward(mutate)
    }

    /// The owners answered writes forwarded from here.
    private func answered(_ answers: [WriteAnswer]) {
        for answer in answers {
            let key = ForwardedWrites.Key(list: answer.list, clientID: answer.clientID, seq: answer.seq)
            carryOut(relay.forwarded.answered(key, result: answer.result, replica: lists[answer.list]?.position))
        }
    }

    private func carryOut(_ answers: [ForwardedWrites.Answer]) {
        for answer in answers {
            switch answer {
            case .ack(let id, let ack):
                guard let connection = connections[id], !connection.isClosing else { continue }
                events.mutationCommitted()
                send(.ack(ack), to: connection, about: ack.listName)
            case .reject(let id, let reject):
                guard let connection = connections[id], !connection.isClosing else { continue }
                events.mutationRejected(code: reject.code.rawValue)
                send(.reject(reject), to: connection, about: reject.listName)
            }
        }
    }

    /// From the sweep: a replica list whose forwarded write is unanswered for half a
    /// lease may have lost its owner. Claiming it works only once the owner's lease
    /// lapsed, so after a failed claim the next comes 250 ms later (a claim is one
    /// statement); the writes themselves are forwarded again at most every half lease
    /// (the owner's idempotency window answers a copy it had committed with the same
    /// version).
    func takeOverOverdueLists(now: UInt64) {
        guard let store = clusterNode, storageFailure == nil, !lifecycle.isShuttingDown else { return }
        let deadline = UInt64(store.forwardDeadlineMilliseconds)
        for name in relay.forwarded.overdue(now: now, after: deadline) where lists[name]?.takingOver != true {
            // The next try in 250 ms, unless this one succeeds.
            relay.forwarded.retried(name, now: now - deadline + min(deadline, 250))
            tryTakeOver(name, forwardAgain: now >= (lists[name]?.lastForwardedAgain ?? 0) + deadline)
        }
    }

    /// Claims replica list `name` (writes wait for it); on success its waiting writes
    /// are sequenced here, else they are forwarded again if `forwardAgain`.
    func tryTakeOver(_ name: String, forwardAgain: Bool) {
        guard let store = clusterNode, lists[name]?.takingOver != true else { return }
        guard store.isReplica(name), let list = lists[name] else {
            if lists[name] == nil {
                // Dropped here meanwhile (fenced, or its replica broke): load it again;
                // the next overdue tick finds it a replica (forwarded again) or owned.
                loadWithoutRequest(name)
            } else {
                // Owned here already (taken over by a load): the writes are sequenced here.
                resubmitForwarded(name)
            }
            return
        }
        list.takingOver = true
        store.takeOver(name) { [weak self, weak list] outcome in
            guard let self else { return }
            // The flag is the list's own: a list dropped meanwhile took it with it.
            list?.takingOver = false
            switch outcome {
            case .owned:
                list?.lastForwardedAgain = 0
                resubmitForwarded(name)
            case .ownedElsewhere:
                guard forwardAgain else { return }
                list?.lastForwardedAgain = loop.now
                for pending in relay.forwarded.waiting(of: name) { store.forward(pending.mutate) }
            case .failed(let error):
                logger.warning(
                    "cluster: taking over a list failed", metadata: ["flowsync.list": "\(name)", "error": "\(error)"])
            }
        }
    }

    /// This node owns `name` now: its forwarded writes are sequenced here.
    func resubmitForwarded(_ name: String) {
        guard let list = lists[name], clusterNode?.isReplica(name) == false else { return }
        let taken = relay.forwarded.takeAll(list: name)
        carryOut(taken.acks)
        for pending in taken.resubmit {
            guard let connection = connections[pending.connection], !connection.isClosing else { continue }
            let mutate = pending.mutate
            list.submit(
                MutationRequest(
                    clientID: mutate.clientID, seq: mutate.seq, base: mutate.base, operations: mutate.operations),
                tag: connection.id,
                now: outbox.clock())
            outbox.dirtyLists.insert(name)
        }
    }

    // MARK: Writes other nodes forwarded (this node owns the list)

    private func received(_ writes: [ForwardedWrite], for name: String) {
        guard let list = lists[name], clusterNode?.isReplica(name) == false, storageFailure == nil else {
            // Not here any more: the origin forwards them again when they are overdue.
            return
        }
        list.lastActive = loop.now
        for write in writes {
            let tag = relay.remoteTag()
            list.remoteWrites[tag] = write
            let mutate = write.mutate
            list.submit(
                MutationRequest(
                    clientID: mutate.clientID, seq: mutate.seq, base: mutate.base, operations: mutate.operations),
                tag: tag,
                now: outbox.clock())
        }
        outbox.dirtyLists.insert(name)
    }

    /// The answers to the forwarded writes among a sealed batch's outcomes (their tags
    /// are negative), taken out of the list's ``ListHost/remoteWrites``.
    func takeRemoteOutcomes(_ outcomes: [Sequencer.Outcome], of list: ListHost) -> [WriteAnswer] {
        var answers: [WriteAnswer] = []
        for outcome in outcomes where outcome.tag < 0 {
            guard let write = list.remoteWrites.removeValue(forKey: outcome.tag) else { continue }
            let result: WriteAnswer.Result
            switch outcome.result {
            case .success(let version):
                result = .committed(version)
            case .failure(let rejection):
                let (code, message) = ListHost.wire(rejection)
                result = .rejected(code, message)
            }
            answers.append(
                WriteAnswer(
                    origin: write.origin, list: list.name, clientID: write.mutate.clientID, seq: write.mutate.seq,
                    result: result))
        }
        return answers
    }
}
