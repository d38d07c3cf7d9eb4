import FlowSyncCore
import FlowSyncProtocol
import Logging

/// Cluster mode: lists that move while the node runs (issue #33; docs/CLUSTER.md,
/// "Placement"). A claim anywhere sends the writes waiting here for that list to its
/// new owner at once; a list owned here whose preferred node appeared is handed over to
/// it when nothing of it is in flight, and followed here as a replica from then on —
/// its subscribers stay connected.
extension Server {
    /// A node claimed `name` (PostgreSQL notified it). The writes this node forwarded
    /// for the list and still waits for go to the new owner now — a fenced owner's
    /// reload, a restarted owner, a take-over or a move end their wait at once, not at
    /// the forward deadline (half a lease). If this node is the new owner, they are
    /// sequenced here.
    func listClaimed(_ name: String, by owner: String) {
        guard let node = clusterNode, storageFailure == nil, relay.forwarded.hasWaiting(for: name) else { return }
        if lists[name] != nil, !node.isReplica(name), lists[name]?.handingOver != true {
            resubmitForwarded(name)
            return
        }
        let waiting = relay.forwarded.waiting(of: name)
        relay.forwarded.retried(name, now: loop.now)
        lists[name]?.lastForwardedAgain = loop.now
        for pending in waiting { node.forward(pending.mutate) }
        logger.debug(
            "cluster: writes sent to the list's new owner",
            metadata: ["flowsync.list": "\(name)", "owner": "\(owner)", "writes": "\(waiting.count)"])
    }

    /// A new session with PostgreSQL: every write still waiting for its owner is sent
    /// again — the claim notification that would have sent it may have gone to the old
    /// session, and a forward cut off by the loss may not have committed. A copy the
    /// owner had taken is answered from its idempotency window.
    func forwardWaitingWritesAgain() {
        guard let node = clusterNode, storageFailure == nil else { return }
        for name in relay.forwarded.listsWaiting where lists[name]?.handingOver != true {
            if lists[name] != nil, !node.isReplica(name) {
                resubmitForwarded(name)
                continue
            }
            relay.forwarded.retried(name, now: loop.now)
            for pending in relay.forwarded.waiting(of: name) { node.forward(pending.mutate) }
        }
    }

    /// A write to a list being handed over: remembered as a forwarded write (the same
    /// table, the same deadline), sent nowhere yet. A release forwards it to the new
    /// owner once that node's claim is notified; a hand-over that keeps the list here
    /// sequences it here.
    func park(_ mutate: Mutate, from connection: Connection) {
        relay.forwarded.forwarded(mutate, connection: connection.id, now: loop.now)
    }

    /// The store marked these owned lists to move to the node placement prefers now:
    /// each that is quiet — nothing waiting for its seal, no batch committing, no
    /// write of another node in it, no take-over, no hand-over — is handed over; the
    /// others are offered again at the next read of the live nodes.
    func handOver(_ names: [String]) {
        guard let node = clusterNode, storageFailure == nil, !lifecycle.isShuttingDown else { return }
        for name in names {
            guard let list = lists[name], !node.isReplica(name), !list.handingOver, !list.takingOver,
                !list.sequencer.hasPending, list.remoteWrites.isEmpty, !commits.gate.hasPendingCommit(of: name),
                !outbox.dirtyLists.contains(name)
            else { continue }
            list.handingOver = true
            node.handOver(name) { [weak self, weak list] outcome in
                guard let self else { return }
                list?.handingOver = false
                switch outcome {
                case .released:
                    // A replica here now: parked writes go to the new owner when its
                    // claim is notified (listClaimed), or at their deadline.
                    break
                case .kept:
                    resubmitForwarded(name)
                case .fenced:
                    listLost(list, closing: [], .fenced(.claimedElsewhere(owner: nil)))
                }
            }
        }
    }
}
