import FlowSyncCore
import FlowSyncLoop
import FlowSyncPostgres
import FlowSyncProtocol
import Logging

/// Cluster mode's node on PostgreSQL (`[cluster]`, docs/CLUSTER.md), over
/// ``ClusterLog``: the store half commits and loads (``CommittingStore``,
/// ``LoopLoadingStore``; `ClusterStore+Commit.swift`), the node half follows replicas,
/// forwards writes and takes lists over (``ClusterNode``; `ClusterStore+Node.swift`).
/// This file holds the connection and the lease. Loop-confined.
///
/// Each list's ownership is one pure machine (``ListOwnership``: unowned → claiming →
/// owned(term) → fenced; replica → takingOver → owned) in one table (``lists``);
/// PostgreSQL's fence (one conditional statement, ``ClusterLog``) stays the truth.
///
/// - **Lease.** At open, and then every third of `lease_ms`, the node renews its lease
///   on PostgreSQL's clock. A claim works only while it is alive.
/// - **Load** (``load(_:create:completion:)``): `claim` (the next term, if nobody else
///   holds a live lease on the list and placement prefers this node for a free one),
///   then the list's newest snapshot and the batches after it at its epoch — the record
///   bodies are the Diff frames the file store writes. A list owned elsewhere is
///   followed as a replica instead.
/// - **Commit** (``submit(_:completion:)``): the fenced append. `appended` is
///   ``CommitOutcome/committed``; zero rows (another node claimed the list, or the
///   version is not next) is ``CommitOutcome/fenced``: the list is no longer this
///   node's, and every later batch of it fails the same way.
/// - **Unknown outcome.** A lost connection leaves the appends in flight unknown. The
///   store reconnects — after 100 ms, backing off to 500 ms, for as long as it takes
///   (``Reconnection``; issue #33: it used to fail for good after `lease_ms`) — and
///   reads each list's row back: `head` at or past the version, under this node and
///   term, is committed; anything else is fenced. Statements asked for meanwhile wait
///   for the new connection, so writes are not acknowledged until it is back.
///
/// Not built (docs/CLUSTER.md, "Not built yet"): new epochs (``startEpoch(_:)``
/// refuses), rebalancing running lists. Peer links (issue #33) are in
/// `ClusterStore+PeerLinks.swift`: off without `peer_secret_file`, and PostgreSQL carries
/// whatever a link does not.
public final class ClusterStore: CommittingStore, LoopLoadingStore, ClusterNode {
    /// What `[cluster]` configures.
    public struct Options: Sendable, Hashable {
        public var conninfo: String
        public var node: String
        public var leaseMilliseconds: Int
        /// Batches, or bytes of batches, since a list's snapshot in PostgreSQL that make
        /// the next one due (0: never) — `[storage] snapshot_every_batches` and
        /// `snapshot_every_bytes`, as for the file store.
        public var snapshotEveryBatches: Int
        public var snapshotEveryBytes: Int
        /// Peer links (issue #33; docs/CLUSTER.md, "Peer links"): the file holding the
        /// cluster credential (`[cluster] peer_secret_file`). `nil`: no links, every
        /// node-to-node message goes through PostgreSQL.
        public var peerSecretFile: String?
        /// The peer listener's address (`peer_host`, default the server's `host`) and
        /// port (`peer_port`, default 0: the OS chooses; the bound port is advertised).
        public var peerHost = "127.0.0.1"
        public var peerPort = 0
        /// Bytes a link may have queued before it is dropped (`peer_max_queued_bytes`).
        public var peerMaxQueuedBytes = 8 << 20
        /// The largest frame a peer may send (`peer_max_frame_bytes`).
        public var peerMaxFrameBytes = 64 << 20

        public init(
            conninfo: String, node: String, leaseMilliseconds: Int = 5_000,
            snapshotEveryBatches: Int = FileStore.Options().snapshotEveryBatches,
            snapshotEveryBytes: Int = FileStore.Options().snapshotEveryBytes
        ) {
            self.conninfo = conninfo
            self.node = node
            self.leaseMilliseconds = leaseMilliseconds
            self.snapshotEveryBatches = snapshotEveryBatches
            self.snapshotEveryBytes = snapshotEveryBytes
        }
    }

    enum State {
        /// Opening or reopening the connection, for as long as it takes; the work waits
        /// (``Reconnection``).
        case connecting(Reconnection)
        case ready(ClusterLog)
        case closed
    }

    /// An append whose outcome the lost connection left unknown.
    struct Unresolved {
        let list: String
        let ownership: ClusterLog.Ownership
        let version: Int64
        let completion: (CommitOutcome) -> Void
    }

    public let options: Options
    let loop: EventLoop
    let logger: Logger
    private(set) var state: State
    /// The log while a connection is up, else `nil` (for `ClusterStore+Replicas`).
    var readyLog: ClusterLog? {
        if case .ready(let log) = state { return log }
        return nil
    }
    /// Work that waits for a connection, in order.
    private var waiting: [(ClusterLog) -> Void] = []
    var unresolved: [Unresolved] = []
    /// Committed batches not yet announced to the followers (``BatchAnnouncements``).
    var announcements = BatchAnnouncements()
    /// The origin nodes whose last forwarded write said they read answers from their
    /// notification (a build with issue #33); the others are answered through
    /// `fs_outbox`, so nodes of both builds can run side by side.
    var originsAnsweredByNotification: Set<String> = []
    /// Every list this node claims, owns (at its term, with its head and the batches
    /// since its snapshot) or follows as a replica: one ownership machine each
    /// (``ListOwnership``).
    var lists = ClusterLists()
    /// The nodes with a live lease at the last look (every lease renewal): placement's
    /// candidates. Always holds this node.
    var liveNodes: Set<String> = []
    /// What waits for the live nodes to be read again (``withFreshLiveNodes(_:)``).
    var afterLiveNodes: [() -> Void] = []
    public var onReplicated: ((String, [ReplicatedBatch]) -> Void)?
    public var onForwarded: ((String, [ForwardedWrite]) -> Void)?
    public var onAnswers: (([WriteAnswer]) -> Void)?
    public var onReplicaBroken: ((String) -> Void)?
    public var onOwnershipLost: ((String, FenceReason) -> Void)?
    public var onInboxForUnloadedList: ((String) -> Void)?
    public var onOrphanedList: ((String) -> Void)?
    public var onListClaimed: ((String, String) -> Void)?
    public var onSessionStarted: (() -> Void)?
    public var onMisplacedLists: (([String]) -> Void)?
    var recoveryOptions = RecoveryOptions()
    /// The peer links, when `peer_secret_file` is set (``PeerLinks``).
    var links: PeerLinks?
    /// What went over the links (``peerLinkStatistics``).
    var peerCounters = PeerLinkStatistics()
    public var onPeerLinkLost: (() -> Void)?
    private var leaseTimer: LoopTimer?
    private var retryTimer: LoopTimer?
    let encoder = FrameEncoder(configuration: StoreFormat.compression)
    public var onFailure: ((StoreError) -> Void)?
    /// The advisory lock key that serialises the tables' creation between nodes.
    static let schemaLock: Int64 = 0x466C_6F77_5379_6E63  // "FlowSync"

    /// A store that connects when ``recover(_:)`` is called. Loop thread.
    public init(options: Options, loop: EventLoop, logger: Logger) {
        self.options = options
        self.loop = loop
        self.logger = logger
        self.state = .connecting(Reconnection(since: loop.now))
    }

    /// The lists this node owns now (for tests and stats).
    public var ownedLists: [String: ClusterLog.Ownership] { lists.owned }

    // MARK: ListStore

    /// Reads nothing (every list loads on first use): starts connecting, creates the
    /// tables if missing, takes the lease and starts renewing it.
    public func recover(_ options: RecoveryOptions) throws(StoreError) -> RecoveryReport {
        recoveryOptions = options
        // The links' listener first: its address goes into the lease.
        try startPeerLinks()
        connect(initial: true)
        logger.info("cluster: lists load from PostgreSQL on first use", metadata: ["node": "\(self.options.node)"])
        return RecoveryReport()
    }

    /// Encodes and stores a snapshot (the server hands this store encoded snapshots
    /// built off the loop instead: ``compact(list:at:encoded:)``).
    public func compact(_ snapshot: StoredSnapshot) throws(StoreError) {
        compact(list: snapshot.listName, at: snapshot.position, encoded: StoreFormat.encode(snapshot, encoder: encoder))
    }

    /// Refused: a new epoch in cluster mode is not built yet (a list loaded from
    /// PostgreSQL never needs one: its log is the truth).
    public func startEpoch(_ snapshot: StoredSnapshot) throws(StoreError) {
        throw .unusable("cluster mode cannot start a new epoch of \"\(snapshot.listName)\" yet")
    }

    public func close() throws(StoreError) {
        shutDown()
    }

    public func abandon() {
        shutDown()
    }

    private func shutDown() {
        leaseTimer?.close()
        leaseTimer = nil
        retryTimer?.close()
        retryTimer = nil
        links?.stop()
        links = nil
        if case .ready(let log) = state { log.connection.close() }
        state = .closed
        waiting = []
    }

    // MARK: Connection and lease

    private func connect(initial: Bool) {
        PostgresConnection.connect(loop: loop, conninfo: options.conninfo) { [weak self] result in
            guard let self else { return }
            guard case .connecting = state else {
                if case .success(let connection) = result { connection.close() }
                return
            }
            switch result {
            case .failure(let error):
                retry(error)
            case .success(let connection):
                let log = ClusterLog(connection: connection, node: options.node)
                connection.onLost = { [weak self] error in self?.connectionLost(error) }
                connection.onNotification = { [weak self] channel, payload in self?.notified(channel, payload) }
                // Schema and lease before anything else (pipelined, so in this order).
                // No NOTICE on stderr for tables that already exist.
                connection.send("SET client_min_messages = warning") { _ in }
                // Two nodes starting at once would race CREATE TABLE IF NOT EXISTS
                // (PostgreSQL then fails one with a unique violation in its catalog):
                // a session-level advisory lock serialises the creation.
                connection.send("SELECT pg_advisory_lock(\(Self.schemaLock))") { _ in }
                log.createSchema { [weak self] result in
                    if case .failure(let error) = result {
                        self?.fail(.unusable("PostgreSQL: creating the cluster tables failed: \(error)"))
                    }
                }
                connection.send("SELECT pg_advisory_unlock(\(Self.schemaLock))") { _ in }
                // Before the lease: every notification of a commit after this point
                // reaches this session (what replicas and forwarded writes follow).
                log.listen { [weak self] result in
                    if case .failure(let error) = result, !error.outcomeUnknown {
                        self?.fail(.unusable("PostgreSQL: LISTEN failed: \(error)"))
                    }
                }
                log.renewLease(milliseconds: options.leaseMilliseconds, peer: links?.advertisedAddress) {
                    [weak self] result in
                    guard let self else { return }
                    switch result {
                    case .failure(let error) where !error.outcomeUnknown:
                        fail(.unusable("PostgreSQL: taking the lease failed: \(error)"))
                    case .failure(let error):
                        // Lost before it was ready (connectionLost ignores that state):
                        // try again.
                        guard case .connecting = state else { return }
                        connection.close()
                        retry(error)
                    case .success:
                        // Placement needs the live nodes before the first load.
                        log.livePeers { [weak self] result in
                            guard let self else { return }
                            if case .success(let nodes) = result { livePeersRead(nodes) }
                            ready(log, initial: initial)
                        }
                    }
                }
            }
        }
    }

    /// PostgreSQL answered with the lease taken: the waiting work runs, in order —
    /// first the appends whose outcome is unknown are resolved.
    private func ready(_ log: ClusterLog, initial: Bool) {
        guard case .connecting(let reconnection) = state else { return }
        state = .ready(log)
        retryTimer?.close()
        retryTimer = nil
        if initial {
            logger.info(
                "cluster: connected", metadata: ["node": "\(options.node)", "lease_ms": "\(options.leaseMilliseconds)"])
        } else {
            logger.info(
                "cluster: reconnected",
                metadata: [
                    "node": "\(options.node)", "unresolved": "\(unresolved.count)",
                    "down_ms": "\(loop.now - reconnection.since)",
                ])
        }
        if leaseTimer == nil {
            let timer = LoopTimer(loop: loop)
            let every = UInt64(max(100, options.leaseMilliseconds / 3))
            timer.start(after: every, repeat: every) { [weak self] in self?.renewLease() }
            leaseTimer = timer
        }
        let toResolve = unresolved
        unresolved = []
        for append in toResolve { resolve(append, with: log) }
        perform(announcements.sessionReady())
        let work = waiting
        waiting = []
        for job in work { job(log) }
        // Notifications sent while this node had no session are lost: read what they
        // would have said (also at the first connection, for answers posted to a node
        // of this name before it restarted — nobody waits for those now).
        resynchronise(log)
        // Then tell the others this node is here (they read the live nodes again), and
        // claim the lists whose forwarded writes waited for it (issue #33).
        arrived(log)
        onSessionStarted?()
    }

    private func renewLease() {
        guard case .ready(let log) = state else { return }
        log.renewLease(milliseconds: options.leaseMilliseconds, peer: links?.advertisedAddress) { [weak self] result in
            if case .failure(let error) = result, !error.outcomeUnknown {
                self?.logger.error("cluster: lease renewal failed", metadata: ["error": "\(error)"])
            }
        }
        refreshLiveNodes(log)
    }

    func refreshLiveNodes(_ log: ClusterLog) {
        log.livePeers { [weak self] result in
            guard let self, case .success(let nodes) = result else { return }
            livePeersRead(nodes)
        }
    }

    /// Whether placement prefers this node for `name` among the live nodes.
    public func isPreferredOwner(of name: String) -> Bool {
        Placement.owner(of: name, among: liveNodes.union([options.node])) == options.node
    }

    private func connectionLost(_ error: PostgresError) {
        guard case .ready = state else { return }
        logger.warning(
            "cluster: PostgreSQL connection lost, reconnecting; writes wait unacknowledged meanwhile",
            metadata: ["error": "\(error)"])
        state = .connecting(Reconnection(since: loop.now))
        announcements.sessionLost()
        connect(initial: false)
    }

    /// An attempt failed: the next one comes after the machine's wait, however long
    /// PostgreSQL stays away (``Reconnection``, rules 1–3).
    private func retry(_ error: PostgresError) {
        guard case .connecting(var reconnection) = state else { return }
        let (delay, report) = reconnection.failed(
            now: loop.now, leaseMilliseconds: options.leaseMilliseconds, random: Double.random(in: 0..<1))
        state = .connecting(reconnection)
        switch report {
        case .none: break
        case .leaseLapsed(let down):
            logger.warning(
                "cluster: PostgreSQL unreachable for longer than the lease; still reconnecting. Writes wait unacknowledged, subscribers are served what this node has, other nodes may claim its lists",
                metadata: ["down_ms": "\(down)", "lease_ms": "\(options.leaseMilliseconds)", "error": "\(error)"])
        case .stillUnreachable(let down):
            logger.warning(
                "cluster: PostgreSQL still unreachable; reconnecting",
                metadata: ["down_ms": "\(down)", "attempts": "\(reconnection.attempts)", "error": "\(error)"])
        }
        let timer = retryTimer ?? LoopTimer(loop: loop)
        retryTimer = timer
        timer.start(after: delay) { [weak self] in
            guard let self, case .connecting = state else { return }
            connect(initial: false)
        }
    }

    private func fail(_ error: StoreError) {
        if case .closed = state { return }
        logger.critical("cluster: store failed", metadata: ["error": "\(error)"])
        shutDown()
        onFailure?(error)
    }

    /// Runs `job` with the log now, or once a connection is back.
    func withLog(_ job: @escaping (ClusterLog) -> Void) {
        switch state {
        case .ready(let log): job(log)
        case .connecting: waiting.append(job)
        case .closed: break
        }
    }
}
