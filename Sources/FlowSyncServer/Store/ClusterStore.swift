import FlowSyncCore
import FlowSyncLoop
import FlowSyncPostgres
import FlowSyncProtocol
import Logging

/// A store that loads lists on the loop thread, asynchronously, one at a time on first
/// use (cluster mode: a claim, then the log read from PostgreSQL).
public protocol LoopLoadingStore: DirectorStore {
    /// Loads `name` for this node; `completion` runs once on the loop thread with the
    /// list, `nil` when the store holds nothing under that name and `create` is false,
    /// or an error (the list is refused now and tried again at its next use).
    func load(_ name: String, create: Bool, completion: @escaping (Result<RecoveredList?, StoreError>) -> Void)

    /// Set by the server: called on the loop thread when the store fails for good
    /// (PostgreSQL unreachable for longer than the lease). The server takes the
    /// storage-failure path.
    var onFailure: ((StoreError) -> Void)? { get set }
}

/// Cluster mode's store on PostgreSQL (`[cluster]`, docs/CLUSTER.md), over
/// ``ClusterLog``: a node claims a list when it is first used and appends its batches
/// with the fence; a batch commits when its append returns. Loop-confined.
///
/// - **Lease.** At open, and then every third of `lease_ms`, the node renews its lease
///   on PostgreSQL's clock. A claim works only while it is alive.
/// - **Load** (``load(_:create:completion:)``): `claim` (the next term, if nobody else
///   holds a live lease on the list), then the list's batches at its epoch, replayed
///   from version 0 — the record bodies are the Diff frames the file store writes.
/// - **Commit** (``submit(_:completion:)``): the fenced append. `appended` is
///   ``CommitOutcome/committed``; zero rows (another node claimed the list, or the
///   version is not next) is ``CommitOutcome/fenced``: the list is no longer this
///   node's, and every later batch of it fails the same way.
/// - **Unknown outcome.** A lost connection leaves the appends in flight unknown. The
///   store reconnects (every 250 ms, for up to `lease_ms`; then it fails for good) and
///   reads each list's row back: `head` at or past the version, under this node and
///   term, is committed; anything else is fenced. Statements asked for meanwhile wait
///   for the new connection.
///
/// Not built yet (docs/CLUSTER.md): snapshots in PostgreSQL (a load replays the whole
/// log of the epoch, and ``compact(_:)`` keeps nothing), new epochs, unloading idle
/// lists (releasing them), replicas and forwarding.
public final class ClusterStore: CommittingStore, ReplicatingStore {
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

        public init(conninfo: String, node: String, leaseMilliseconds: Int = 5_000,
                    snapshotEveryBatches: Int = FileStore.Options().snapshotEveryBatches, snapshotEveryBytes: Int = FileStore.Options().snapshotEveryBytes) {
            self.conninfo = conninfo
            self.node = node
            self.leaseMilliseconds = leaseMilliseconds
            self.snapshotEveryBatches = snapshotEveryBatches
            self.snapshotEveryBytes = snapshotEveryBytes
        }
    }

    private enum State {
        /// Opening or reopening the connection; the work waits.
        case connecting(since: UInt64)
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
    private var state: State
    /// The log while a connection is up, else `nil` (for `ClusterStore+Replicas`).
    var readyLog: ClusterLog? {
        if case .ready(let log) = state { return log }
        return nil
    }
    /// Work that waits for a connection, in order.
    private var waiting: [(ClusterLog) -> Void] = []
    var unresolved: [Unresolved] = []
    /// The lists this node owns, at the term it claimed them with, and their last
    /// committed version.
    var owned: [String: ClusterLog.Ownership] = [:]
    /// A list this node follows as a replica: the owner's epoch, the last version
    /// delivered, and whether a read of newer batches is in flight (`again`: notified
    /// meanwhile, read once more after it).
    struct Replica {
        var epoch: Int64
        var head: Int64
        var fetching = false
        var again = false
    }
    var replicas: [String: Replica] = [:]
    /// Per owned list: batches and bytes appended since its newest snapshot in
    /// PostgreSQL (what makes the next one due), and whether one is being written.
    struct SinceSnapshot {
        var batches = 0
        var bytes = 0
        var writing = false
    }
    var sinceSnapshot: [String: SinceSnapshot] = [:]
    /// The nodes with a live lease at the last look (every lease renewal): placement's
    /// candidates. Always holds this node.
    var liveNodes: Set<String> = []
    /// What waits for the live nodes to be read again (``withFreshLiveNodes(_:)``).
    var afterLiveNodes: [() -> Void] = []
    public var onReplicated: ((String, [ReplicatedBatch]) -> Void)?
    public var onForwarded: ((String, [ForwardedWrite]) -> Void)?
    public var onAnswers: (([WriteAnswer]) -> Void)?
    public var onReplicaBroken: ((String) -> Void)?
    public var onInboxForUnloadedList: ((String) -> Void)?
    public var onOrphanedList: ((String) -> Void)?
    var recoveryOptions = RecoveryOptions()
    private var leaseTimer: LoopTimer?
    private var retryTimer: LoopTimer?
    let encoder = FrameEncoder(configuration: StoreFormat.compression)
    public var onFailure: ((StoreError) -> Void)?
    /// The advisory lock key that serialises the tables' creation between nodes.
    static let schemaLock: Int64 = 0x466C_6F77_5379_6E63   // "FlowSync"

    /// A store that connects when ``recover(_:)`` is called. Loop thread.
    public init(options: Options, loop: EventLoop, logger: Logger) {
        self.options = options
        self.loop = loop
        self.logger = logger
        self.state = .connecting(since: loop.now)
    }

    /// The lists this node owns now (for tests and stats).
    public var ownedLists: [String: ClusterLog.Ownership] { owned }

    // MARK: DirectorStore

    /// Reads nothing (every list loads on first use): starts connecting, creates the
    /// tables if missing, takes the lease and starts renewing it.
    public func recover(_ options: RecoveryOptions) throws(StoreError) -> RecoveryReport {
        recoveryOptions = options
        connect(initial: true)
        logger.info("cluster: lists load from PostgreSQL on first use", metadata: ["node": "\(self.options.node)"])
        return RecoveryReport()
    }

    /// Not used: the server appends through ``submit(_:completion:)``.
    public func append(_ batch: StoredBatch) throws(StoreError) -> Bool {
        preconditionFailure("Internal inconsistency in ClusterStore: append(_:) called; a CommittingStore is appended through submit")
    }

    public var hasUnsyncedWrites: Bool { false }

    /// Nothing to do: a batch is durable when its append returns.
    public func sync() throws(StoreError) {}

    /// Encodes and stores a snapshot (the server hands this store encoded snapshots
    /// built off the loop instead: ``compact(list:at:encoded:)``).
    public func compact(_ snapshot: StoredSnapshot) throws(StoreError) {
        compact(list: snapshot.listName, at: snapshot.position, encoded: StoreFormat.encode(snapshot, encoder: encoder))
    }

    /// Refused: a new epoch in cluster mode is not built yet.
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
        if case .ready(let log) = state { log.connection.close() }
        state = .closed
        waiting = []
    }

    // MARK: Connection and lease

    private func connect(initial: Bool) {
        PostgresConnection.connect(loop: loop, conninfo: options.conninfo) { [weak self] result in
            guard let self else { return }
            guard case .connecting(let since) = state else {
                if case .success(let connection) = result { connection.close() }
                return
            }
            switch result {
            case .failure(let error):
                retry(since: since, error)
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
                    if case .failure(let error) = result { self?.fail(.unusable("PostgreSQL: creating the cluster tables failed: \(error)")) }
                }
                connection.send("SELECT pg_advisory_unlock(\(Self.schemaLock))") { _ in }
                // Before the lease: every notification of a commit after this point
                // reaches this session (what replicas and forwarded writes follow).
                log.listen { [weak self] result in
                    if case .failure(let error) = result, !error.outcomeUnknown { self?.fail(.unusable("PostgreSQL: LISTEN failed: \(error)")) }
                }
                log.renewLease(milliseconds: options.leaseMilliseconds) { [weak self] result in
                    guard let self else { return }
                    switch result {
                    case .failure(let error) where !error.outcomeUnknown:
                        fail(.unusable("PostgreSQL: taking the lease failed: \(error)"))
                    case .failure(let error):
                        // Lost before it was ready (connectionLost ignores that state):
                        // try again, within the same deadline.
                        guard case .connecting(let since) = state else { return }
                        connection.close()
                        retry(since: since, error)
                    case .success:
                        // Placement needs the live nodes before the first load.
                        log.liveNodes { [weak self] result in
                            guard let self else { return }
                            if case .success(let nodes) = result { liveNodes = Set(nodes).union([options.node]) }
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
        guard case .connecting = state else { return }
        state = .ready(log)
        retryTimer?.close()
        retryTimer = nil
        if initial {
            logger.info("cluster: connected", metadata: ["node": "\(options.node)", "lease_ms": "\(options.leaseMilliseconds)"])
        } else {
            logger.info("cluster: reconnected", metadata: ["node": "\(options.node)", "unresolved": "\(unresolved.count)"])
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
        let work = waiting
        waiting = []
        for job in work { job(log) }
        // Notifications sent while this node had no session are lost: read what they
        // would have said (also at the first connection, for answers posted to a node
        // of this name before it restarted — nobody waits for those now).
        resynchronise(log)
    }

    private func renewLease() {
        guard case .ready(let log) = state else { return }
        log.renewLease(milliseconds: options.leaseMilliseconds) { [weak self] result in
            if case .failure(let error) = result, !error.outcomeUnknown {
                self?.logger.error("cluster: lease renewal failed", metadata: ["error": "\(error)"])
            }
        }
        refreshLiveNodes(log)
    }

    func refreshLiveNodes(_ log: ClusterLog) {
        log.liveNodes { [weak self] result in
            guard let self, case .success(let nodes) = result else { return }
            liveNodes = Set(nodes).union([options.node])
        }
    }

    /// Whether placement prefers this node for `name` among the live nodes.
    public func isPreferredOwner(of name: String) -> Bool {
        Placement.owner(of: name, among: liveNodes.union([options.node])) == options.node
    }

    private func connectionLost(_ error: PostgresError) {
        guard case .ready = state else { return }
        logger.warning("cluster: PostgreSQL connection lost, reconnecting", metadata: ["error": "\(error)"])
        state = .connecting(since: loop.now)
        connect(initial: false)
    }

    private func retry(since: UInt64, _ error: PostgresError) {
        guard loop.now - since < UInt64(options.leaseMilliseconds) else {
            fail(.unusable("PostgreSQL unreachable for \(options.leaseMilliseconds) ms: \(error)"))
            return
        }
        let timer = retryTimer ?? LoopTimer(loop: loop)
        retryTimer = timer
        timer.start(after: 250) { [weak self] in
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

    // MARK: Loading

    public func load(_ name: String, create: Bool, completion: @escaping (Result<RecoveredList?, StoreError>) -> Void) {
        withLog { [weak self] log in
            guard let self else { return }
            if create {
                claim(name, log, completion)
                return
            }
            log.head(list: name) { [weak self] result in
                guard let self else { return }
                switch result {
                case .failure(let error): completion(.failure(.unusable("PostgreSQL: reading list \"\(name)\": \(error)")))
                case .success(nil): completion(.success(nil))
                case .success: withLog { [weak self] log in self?.claim(name, log, completion) }
                }
            }
        }
    }

    private func claim(_ name: String, _ log: ClusterLog, _ completion: @escaping (Result<RecoveredList?, StoreError>) -> Void) {
        // A new list's epoch: random, as a single node's, within PostgreSQL's bigint.
        let epoch = Int64.random(in: 1...Int64.max)
        // A free list (new, released, or its owner's lease lapsed) is taken only by its
        // preferred owner (placement); a list this node owns is always taken back.
        log.claim(list: name, epoch: epoch, takeFree: isPreferredOwner(of: name)) { [weak self] result in
            guard let self else { return }
            switch result {
            case .failure(let error):
                completion(.failure(.unusable("PostgreSQL: claiming list \"\(name)\": \(error)")))
            case .success(nil):
                // Another live node owns it, or placement prefers another node for a
                // free list: follow it as a replica.
                loadReplica(name, log, completion)
            case .success(let ownership?):
                log.load(list: name, epoch: ownership.epoch) { [weak self] result in
                    guard let self else { return }
                    switch result {
                    case .failure(let error):
                        completion(.failure(.unusable("PostgreSQL: reading the log of \"\(name)\": \(error)")))
                    case .success(let stored):
                        let loaded = rebuild(name, ownership, stored)
                        completion(loaded)
                        // Writes forwarded to the list while it had no live owner.
                        if case .success = loaded { takeInbox(name, log) }
                    }
                }
            }
        }
    }

    /// Replays what a load read (the newest snapshot, then the batches after it) into
    /// the list; this node owns it from now on.
    private func rebuild(_ name: String, _ ownership: ClusterLog.Ownership, _ stored: ClusterLog.Stored) -> Result<RecoveredList?, StoreError> {
        let path = "postgres:fs_batches/\(name)"
        let rebuilt: (sequencer: Sequencer, head: Int64, snapshotVersion: Int64)
        do throws(StoreError) {
            rebuilt = try rebuildList(name, epoch: ownership.epoch, stored)
        } catch {
            return .failure(error)
        }
        guard rebuilt.head == ownership.head else {
            return .failure(.corrupt(path, offset: 0, "head is \(ownership.head) but the log ends at \(rebuilt.head)"))
        }
        owned[name] = ownership
        let batches = stored.batches
        sinceSnapshot[name] = SinceSnapshot(batches: batches.count, bytes: batches.reduce(0) { $0 + $1.body.count })
        logger.debug("cluster: list claimed", metadata: ["flowsync.list": "\(name)", "term": "\(ownership.term)", "head": "\(ownership.head)",
                                                         "snapshot": "\(rebuilt.snapshotVersion)", "replayed": "\(batches.count)"])
        return .success(RecoveredList(name: name, sequencer: rebuilt.sequencer))
    }

    /// The list at `epoch` from its newest snapshot (or version 0) and the batches after
    /// it, each checked to be the next Diff; its head is the last version replayed.
    func rebuildList(_ name: String, epoch: Int64, _ stored: ClusterLog.Stored) throws(StoreError) -> (sequencer: Sequencer, head: Int64, snapshotVersion: Int64) {
        let path = "postgres:fs_snapshots/\(name)"
        var rebuilder: ListRebuilder
        var from: Int64 = 0
        if let snapshot = stored.snapshot {
            let decoded: StoredSnapshot
            do { decoded = try StoreFormat.decodeSnapshot(snapshot.body) } catch {
                throw .corrupt(path, offset: Int(snapshot.version), "snapshot \(snapshot.version): \(error)")
            }
            guard decoded.listName == name, decoded.position == ListVersion(epoch: UInt64(epoch), version: UInt64(snapshot.version)) else {
                throw .corrupt(path, offset: Int(snapshot.version), "snapshot \(snapshot.version) is of \"\(decoded.listName)\" at \(decoded.position)")
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

    // MARK: Committing

    public func submit(_ batch: StoredBatch, completion: @escaping (CommitOutcome) -> Void) {
        let name = batch.listName
        guard let ownership = owned[name], batch.commit.to.epoch == UInt64(ownership.epoch) else {
            completion(.fenced)
            return
        }
        let commit = batch.commit
        let body = batch.encodedDiff ?? encoder.encode(.diff(Diff(listName: name, epoch: commit.to.epoch, fromVersion: commit.from.version,
                                                                  toVersion: commit.to.version, digest: commit.digest, changeset: commit.changeset,
                                                                  mutations: commit.mutations)))
        let version = Int64(commit.to.version)
        withLog { [weak self] log in
            log.append(list: name, ownership: ownership, version: version, body: body) { [weak self] result in
                guard let self else { return }
                switch result {
                case .success(.appended):
                    if owned[name]?.term == ownership.term {
                        owned[name]?.head = version
                        sinceSnapshot[name, default: SinceSnapshot()].batches += 1
                        sinceSnapshot[name, default: SinceSnapshot()].bytes += body.count
                    }
                    completion(.committed)
                case .success(.fenced):
                    lose(name, term: ownership.term, "the append was fenced: another node owns the list")
                    completion(.fenced)
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
    private func resolve(_ append: Unresolved, with log: ClusterLog) {
        log.head(list: append.list) { [weak self] result in
            guard let self else { return }
            switch result {
            case .success(let row?) where row.owner == options.node && row.term == append.ownership.term
                && row.epoch == append.ownership.epoch && row.head >= append.version:
                if let current = owned[append.list], current.term == append.ownership.term {
                    owned[append.list]?.head = max(current.head, append.version)
                }
                append.completion(.committed)
            case .success:
                lose(append.list, term: append.ownership.term, "an append cut off by the lost connection did not commit")
                append.completion(.fenced)
            case .failure(let error) where error.outcomeUnknown:
                unresolved.append(append)
            case .failure(let error):
                append.completion(.failed(.unusable("PostgreSQL: reading back \"\(append.list)\" failed: \(error)")))
            }
        }
    }

    /// This node no longer serves the list at `term` (a later claim of its own keeps
    /// it): the server drops it, and its next use claims and reads it again.
    private func lose(_ name: String, term: Int64, _ reason: String) {
        guard owned[name]?.term == term else { return }
        owned[name] = nil
        sinceSnapshot[name] = nil
        logger.warning("cluster: list fenced", metadata: ["flowsync.list": "\(name)", "term": "\(term)", "reason": "\(reason)"])
    }
}
