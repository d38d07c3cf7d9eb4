import FlowSyncCore
import FlowSyncLoop
import FlowSyncPostgres
import FlowSyncProtocol
import Foundation

/// What goes over the peer links (issue #33; docs/CLUSTER.md, "Peer links"), and what
/// happens when a link is missing. PostgreSQL stays the log and the fence; a link is a
/// shortcut that may fail at any time.
///
/// Ordering and fallback rules, each with its reason:
/// 1. **A batch is pushed only after its fenced append returned `appended`**, and before
///    the local commit's completion releases its Acks: no follower can show a version the
///    log lacks, and the push of a forwarded write's batch leaves before its answer, so the
///    origin's replica usually holds the version when the answer arrives.
/// 2. **Encode once, fan out the same bytes** to every follower of the list.
/// 3. **A push is applied only as the replica's next version**; an older one is a
///    duplicate (dropped), a newer one means a push was lost or the follow started late,
///    and the log is read (``PushedBatches``). The announcements through PostgreSQL keep
///    coming as before, and whichever arrives first applies; the other is a duplicate.
/// 4. **A forwarded write goes over the link to the node believed to own the list**; no
///    ready link, or no known owner, is PostgreSQL's `fs_inbox` as before. A node that
///    receives a write for a list it does not own (any more) passes it on through
///    `fs_inbox` with the origin's name, so the real owner answers the origin.
/// 5. **An answer goes back over the link to its origin when one is ready**, else
///    through PostgreSQL as before. Either way the origin's ``ForwardedWrites`` takes the
///    first and ignores a second.
/// 6. **A lost link re-sends every waiting forwarded write** (through PostgreSQL, since
///    the link is gone): a write sent on it may have been lost in its queue. A copy the
///    owner had committed is answered from its idempotency window.
/// 7. **Follows are sent to every ready link** (not only the owner's): whoever owns the
///    list, now or after a move, already knows this node follows it.
/// 8. **PostgreSQL announces a commit only while some live node lacks a link here**
///    (``BatchAnnouncements`` rules 5–7): the push is then the only notice a follower
///    gets, so every way a push can be missed is closed by a read of the log:
///    - a follow that races a commit: the owner announces the list's head through
///      PostgreSQL when the follow arrives (after it is kept, so later commits push);
///    - a push lost with its link: the follower reads the log of every list it follows
///      from that peer when the link is lost and when a link is ready again, and the
///      owner, once it sees the link gone, announces every head it owns;
///    - a node that appears without a link: the owner's next read of the live nodes
///      finds it unlinked, and every head is announced.
extension ClusterStore {
    /// What went over this node's peer links since it started (for tests and stats).
    public var peerLinkStatistics: PeerLinkStatistics {
        var statistics = peerCounters
        statistics.readyPeers = links?.readyPeers.sorted() ?? []
        statistics.listening = links?.advertisedAddress
        statistics.postgresAnnouncementsSkipped = announcements.skipped
        return statistics
    }

    /// Closes every ready link now, as a network cut would (tests: a link lost
    /// mid-stream). Dialers reconnect after their backoff.
    public func dropPeerLinks() {
        links?.dropReady()
    }

    /// Reads the credential and binds the listener, when `peer_secret_file` is set.
    func startPeerLinks() throws(StoreError) {
        guard let file = options.peerSecretFile else { return }
        let secret: [UInt8]
        do throws(PeerSecretFile.Problem) { secret = try PeerSecretFile.read(file) } catch {
            throw .unusable(error.message)
        }
        let links = PeerLinks(
            loop: loop, node: options.node,
            options: PeerLinks.Options(
                credential: PeerCredential(secret: secret), host: options.peerHost, port: options.peerPort,
                frameLimit: options.peerMaxFrameBytes, maxQueuedBytes: options.peerMaxQueuedBytes),
            logger: logger)
        do { try links.start() } catch {
            throw .unusable("cluster: the peer listener cannot bind \(options.peerHost):\(options.peerPort): \(error)")
        }
        links.onReady = { [weak self] peer in self?.peerReady(peer) }
        links.onLost = { [weak self] peer in self?.peerLost(peer) }
        links.onFrame = { [weak self] peer, frame in self?.received(frame, from: peer) }
        self.links = links
    }

    /// The live nodes were read with their peer addresses.
    func livePeersRead(_ peers: [(node: String, peer: String?)]) {
        liveNodesRead(peers.map(\.node))
        links?.peersRead(peers.map { (node: $0.node, address: $0.peer) })
        linkCoverageChanged()
    }

    /// Whether every other live node has a ready link here may have changed (rule 8).
    func linkCoverageChanged() {
        var linked = false
        // Unknown live nodes (none read yet) or links off: not covered.
        if let links, !liveNodes.isEmpty {
            let ready = Set(links.readyPeers)
            linked = liveNodes.allSatisfy { $0 == options.node || ready.contains($0) }
        }
        perform(
            announcements.linksChanged(everyLiveNodeLinked: linked) { lists.owned.mapValues(\.head) })
    }

    // MARK: Following (rule 7)

    func followOnLinks(_ name: String) {
        guard let links else { return }
        for peer in links.readyPeers { links.link(to: peer)?.send(.follow(list: name)) }
    }

    func unfollowOnLinks(_ name: String) {
        guard let links else { return }
        for peer in links.readyPeers { links.link(to: peer)?.send(.unfollow(list: name)) }
    }

    /// A link is ready: the peer learns every list this node follows.
    private func peerReady(_ peer: String) {
        guard let link = links?.link(to: peer) else { return }
        for name in lists.replicaNames { link.send(.follow(list: name)) }
        // A push may have been missed while there was no link: one read per list whose
        // owner this is (or is not known) covers it (rules 3, 8).
        catchUpLists(followedFrom: peer)
        linkCoverageChanged()
    }

    /// The link to `peer` was lost (or replaced by a newer one): what it carried may be
    /// lost with it (rules 6, 8).
    private func peerLost(_ peer: String) {
        catchUpLists(followedFrom: peer)
        linkCoverageChanged()
        onPeerLinkLost?()
    }

    /// One read of the log for every list this node follows from `peer`, or from an
    /// owner it does not know (rule 8).
    private func catchUpLists(followedFrom peer: String) {
        for name in lists.replicaNames {
            let owner = lists[name].following?.owner
            if owner == nil || owner == peer { catchUp(name) }
        }
    }

    // MARK: Owner side (rules 1, 2)

    /// Pushes a committed batch to the peers that follow the list.
    func pushCommitted(_ name: String, _ ownership: ClusterLog.Ownership, version: Int64, frame: [UInt8]) {
        guard let links else { return }
        let followers = links.followers(of: name)
        guard !followers.isEmpty else { return }
        let bytes = PeerFrame.push(
            list: name, epoch: ownership.epoch, term: ownership.term, version: version, frame: frame
        ).encoded()
        for link in followers where link.send(encoded: bytes) { peerCounters.pushesSent += 1 }
    }

    /// Sends `answer` to its origin over a ready link (rule 5); `false`: use PostgreSQL.
    func answerOverLink(_ answer: ClusterLog.Answer) -> Bool {
        guard let link = links?.link(to: answer.origin),
            link.send(
                .answer(
                    list: answer.list, clientID: answer.clientID, seq: UInt64(answer.seq), epoch: answer.epoch,
                    version: answer.version, code: Int64(answer.code), message: answer.message))
        else { return false }
        peerCounters.answersSent += 1
        return true
    }

    // MARK: Origin side (rule 4)

    /// Sends an encoded `Mutate` to the owner of `name` over its link; `false`: use
    /// PostgreSQL.
    func forwardOverLink(_ name: String, body: [UInt8]) -> Bool {
        guard let owner = lists[name].following?.owner, let link = links?.link(to: owner),
            link.send(.forward(mutate: body))
        else { return false }
        peerCounters.forwardsSent += 1
        return true
    }

    // MARK: Frames from peers

    private func received(_ frame: PeerFrame, from peer: String) {
        switch frame {
        case .push(let list, let epoch, let term, let version, let batch):
            pushed(list, epoch: epoch, term: term, version: version, frame: batch, from: peer)
        case .forward(let body):
            forwardedOverLink(body, from: peer)
        case .answer(let list, let clientID, let seq, let epoch, let version, let code, let message):
            guard (0...Int64(UInt16.max)).contains(code) else { return }
            peerCounters.answersReceived += 1
            onAnswers?([
                Self.writeAnswer(
                    ClusterLog.Answer(
                        origin: options.node, list: list, clientID: clientID, seq: Int64(bitPattern: seq),
                        epoch: epoch, version: version, code: Int(code), message: message))
            ])
        case .follow(let list):
            // Rule 8: a commit between the peer's read of the log and this follow was
            // pushed to nobody; announcing the head now lets it read what it missed.
            // The link's machine kept the follow first, so every later commit pushes.
            guard let head = lists[list].owned?.ownership.head else { return }
            perform(announcements.announceHead(list: list, version: head))
        case .hello, .challenge, .proof, .accepted, .unfollow, .ping:
            // The link's machine keeps these to itself.
            return
        }
    }

    /// A batch pushed by `peer` (rule 3).
    private func pushed(_ name: String, epoch: Int64, term: Int64, version: Int64, frame: [UInt8], from peer: String) {
        guard let replica = lists[name].following else { return }
        // Only an owner that committed the batch pushes it: it is the owner now.
        lists.update(name) { $0.ownerSeen(peer) }
        switch PushedBatches.step(epoch: epoch, version: version, replicaEpoch: replica.epoch, head: replica.head) {
        case .apply:
            peerCounters.pushesApplied += 1
            deliverAnnounced(name, version: version, frame: frame)
        case .drop:
            return
        case .readLog:
            catchUp(name)
        }
    }

    /// A write `origin` sent over its link (rule 4).
    private func forwardedOverLink(_ body: [UInt8], from origin: String) {
        let decoder = FrameDecoder(limits: StoreFormat.decoderLimits, dictionary: .standard)
        decoder.feed(body)
        guard case .mutate(let mutate)? = try? decoder.next(), decoder.bufferedByteCount == 0 else {
            logger.error(
                "cluster: a write forwarded over a peer link does not decode; dropped",
                metadata: ["origin": "\(origin)"])
            return
        }
        let name = mutate.listName
        peerCounters.forwardsReceived += 1
        guard lists[name].owned != nil else {
            peerCounters.forwardsPassedOn += 1
            // Not owned here (any more, or not yet loaded): through PostgreSQL, answered
            // to the origin by whoever owns it — or by this node once it loaded it.
            withLog { [weak self] log in
                log.forward(list: name, body: body, origin: origin) { [weak self] result in
                    if case .failure(let error) = result, !error.outcomeUnknown {
                        self?.logger.error(
                            "cluster: passing on a write forwarded over a peer link failed",
                            metadata: ["flowsync.list": "\(name)", "origin": "\(origin)", "error": "\(error)"])
                    }
                }
            }
            return
        }
        // An origin with a link is of this build: it reads answers from notifications
        // too, should its link be gone when the answer is ready.
        originsAnsweredByNotification.insert(origin)
        onForwarded?(name, [ForwardedWrite(origin: origin, mutate: mutate)])
    }
}

/// What went over a node's peer links (``ClusterStore/peerLinkStatistics``).
public struct PeerLinkStatistics: Sendable, Equatable {
    /// The peers with a ready (authenticated) link now, by name.
    public var readyPeers: [String] = []
    /// The peer listener's advertised address, when links are on.
    public var listening: String?
    /// Writes this node forwarded over a link, and received over one.
    public var forwardsSent = 0
    public var forwardsReceived = 0
    /// Writes received over a link for a list not owned here, passed on through PostgreSQL.
    public var forwardsPassedOn = 0
    public var answersSent = 0
    public var answersReceived = 0
    /// Batches pushed to followers, and pushes applied here as a replica's next batch.
    public var pushesSent = 0
    public var pushesApplied = 0
    /// Reads of `fs_batches` for a replica (a gap, an announcement that came before its
    /// push, a reconnection), with or without links.
    public var logReads = 0
    /// Batches announced through PostgreSQL (`fs_batches`/`fs_frames` notifications, one
    /// per list and version in a statement), and announcement statements sent.
    public var postgresAnnouncements = 0
    public var postgresAnnouncementStatements = 0
    /// Commits not announced through PostgreSQL because every live node was linked here
    /// (``BatchAnnouncements`` rule 5).
    public var postgresAnnouncementsSkipped = 0

    public init() {}
}
