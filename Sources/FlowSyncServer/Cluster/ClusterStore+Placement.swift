import FlowSyncPostgres

/// Where lists live, kept right as nodes come and go (issue #33; docs/CLUSTER.md,
/// "Placement"):
///
/// 1. **A node that (re)connects announces itself** (`fs_nodes`) once its lease is
///    taken, and every node reads the live nodes again at once — not at its next lease
///    renewal. Placement counts a node from its first second.
/// 2. **A free list is placed on fresh knowledge**: a load reads the live nodes again
///    before its claim (one statement, shared by the loads that start meanwhile), so a
///    list created right after the cluster started lands on its hash node.
/// 3. **A node claims back at once the lists whose writes wait for it**: after every
///    (re)connection it reads `fs_inbox` for lists it owns (or that are free and placed
///    on it) and loads them. A write forwarded to it while it was down or cut off is
///    served when it is back, not when its node forwards it again.
/// 4. **A claim tells everyone** (`fs_claims`, in the claim's statement): a node with
///    writes waiting for the list sends them to the new owner at once — after a fence,
///    a restart or a move — instead of at its forward deadline.
/// 5. **A misplaced list moves when its node appears**: when a node appears among the
///    live nodes, each list owned here that placement now prefers it for is marked
///    (``ListOwnership``, rule 6) and handed over once nothing of it is in flight (the
///    server decides; the mark is offered again at every read of the live nodes). Lists
///    taken over as a fallback while their preferred node was live stay where they are.
/// 6. **A node that lost a list re-reads it, and claims it when it is free and placed
///    here.** Another node's claim at a later term ends this node's term: a node stopped
///    past its lease learns that way, as soon as it continues, that a list it believes
///    it owns has moved, and drops it (``onOwnershipLost``: its subscribers were no
///    longer told of the new owner's batches). After that, after a fenced append, and
///    after an inbox read that finds the list not this node's at its term, the row is
///    read and a free list claimed by its preferred node: the list may have been handed
///    *back* to this node, and the nudge to claim it read as forwarded writes while this
///    node still believed it owned the list. Without this the list stayed without an
///    owner (a soak at 1854eea). The inbox read does not drop the list itself: a soak saw
///    it race the node's own reclaim after a failover.
extension ClusterStore {
    /// Rule 6: `claim` (another node's, at a later term) ended this node's term of the
    /// list it owns at `term`: the list is lost here now, as by a fenced append (the
    /// server drops it and closes its clients with 5001 naming the claimer); then it is
    /// re-read and claimed if free and placed here.
    func claimedAway(_ claim: ClusterLog.Claim, ownedAt term: Int64) {
        lose(claim.list, term: term, "node \(claim.owner) claimed the list at term \(claim.term)")
        onOwnershipLost?(claim.list, .claimedElsewhere(owner: claim.owner))
        reclaimIfFree(claim.list)
    }

    /// Rule 6: reads the list's row; when it has no owner, or its owner's lease lapsed,
    /// the live nodes are read again and the preferred node claims it — this node
    /// through ``onOrphanedList``, which checks placement, others by the nudge a load
    /// sends. Nothing happens when a live node owns it.
    func reclaimIfFree(_ name: String) {
        withLog { [weak self] log in
            log.head(list: name) { [weak self] result in
                guard let self, case .success(let row?) = result, row.owner == nil || !row.ownerAlive else { return }
                withFreshLiveNodes { [weak self] in self?.onOrphanedList?(name) }
            }
        }
    }

    /// The live nodes were read (`nodes`): placement's candidates change, and the lists
    /// placement now prefers a node that just appeared for are marked to move (rule 5).
    func liveNodesRead(_ nodes: [String]) {
        let before = liveNodes
        liveNodes = Set(nodes).union([options.node])
        let appeared = before.isEmpty ? [] : liveNodes.subtracting(before)
        for name in lists.ownedNames {
            let preferred = Placement.owner(of: name, among: liveNodes) ?? options.node
            let current = lists[name].owned?.movingTo
            if preferred == options.node {
                if current != nil { lists.update(name) { $0.preferred(nil) } }
            } else if appeared.contains(preferred) || (current != nil && current != preferred) {
                lists.update(name) { $0.preferred(preferred) }
            }
        }
        let moving = lists.moving.filter { liveNodes.contains($0.to) }.map(\.list)
        if !moving.isEmpty { onMisplacedLists?(moving) }
    }

    /// Rules 1 and 3: after a (re)connection, announce this node, then claim the lists
    /// whose forwarded writes wait for it.
    func arrived(_ log: ClusterLog) {
        log.announce { _ in }
        log.waitingLists { [weak self] result in
            guard let self else { return }
            switch result {
            case .failure(let error):
                // A lost connection reads them again when it is back.
                if !error.outcomeUnknown {
                    logger.error(
                        "cluster: reading the lists with waiting writes failed", metadata: ["error": "\(error)"])
                }
            case .success(let waiting):
                let mine = waiting.filter { !$0.free || isPreferredOwner(of: $0.list) }
                guard !mine.isEmpty else { return }
                logger.info(
                    "cluster: claiming the lists whose forwarded writes waited for this node",
                    metadata: ["lists": "\(mine.count)"])
                for list in mine { onInboxForUnloadedList?(list.list) }
            }
        }
    }

    /// Rule 4: a node claimed a list.
    func claimed(_ claim: ClusterLog.Claim) {
        // A replica's owner is where its forwarded writes go over a link (rule 7 of
        // ListOwnership).
        if claim.owner != options.node { lists.update(claim.list) { $0.ownerSeen(claim.owner) } }
        // Another node's claim at a later term ends this node's term (PostgreSQL fences
        // every append of it from now on): a node stopped past its lease learns here,
        // when it continues, that a list it believes it owns has moved (rule 6).
        if claim.owner != options.node, let owned = lists[claim.list].owned?.ownership, owned.term < claim.term {
            claimedAway(claim, ownedAt: owned.term)
        }
        onListClaimed?(claim.list, claim.owner)
    }

    /// Rule 5: releases `name` to the node placement prefers (marked when it appeared),
    /// nudging it to claim the list; this node follows it from the head it had.
    public func handOver(_ name: String, completion: @escaping (HandOverOutcome) -> Void) {
        guard let target = lists[name].owned?.movingTo ?? Placement.owner(of: name, among: liveNodes),
            target != options.node, let owned = lists.update(name, { $0.handOverStarted() })
        else {
            completion(.kept)
            return
        }
        withLog { [weak self] log in
            log.handOver(list: name, ownership: owned.ownership, to: target) { [weak self] result in
                guard let self else { return }
                switch result {
                case .success(true):
                    lists.update(name) {
                        $0.handOverEnded(.released)
                        $0.ownerSeen(target)
                    }
                    followOnLinks(name)
                    logger.info(
                        "cluster: list handed over to its preferred node",
                        metadata: ["flowsync.list": "\(name)", "to": "\(target)", "head": "\(owned.ownership.head)"])
                    completion(.released)
                    // Its batches from now on come from the new owner.
                    catchUp(name)
                case .success(false):
                    lists.update(name) { $0.handOverEnded(.fenced) }
                    logger.warning(
                        "cluster: list fenced",
                        metadata: [
                            "flowsync.list": "\(name)", "reason": "another node claimed it before its hand-over",
                        ])
                    completion(.fenced)
                case .failure(let error):
                    lists.update(name) { $0.handOverEnded(.kept) }
                    logger.warning(
                        "cluster: handing a list over failed; it stays here",
                        metadata: ["flowsync.list": "\(name)", "error": "\(error)"])
                    completion(.kept)
                }
            }
        }
    }
}
