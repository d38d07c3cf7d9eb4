import FlowSyncCore
import FlowSyncLoop
import FlowSyncProtocol
import Logging

/// The daemon's hub: it accepts connections, hosts lists by name, seals each list's
/// mutations once per loop turn into one batch, encodes that batch once and queues the
/// same bytes to every subscriber, and enforces back-pressure. Loop-confined: create
/// and use it on the loop thread.
///
/// The server *routes*; the decisions live in pure machines it drives:
/// ``ServerLifecycle`` (created → recovered → running → shutting down → stopped, or
/// failed), one ``ConnectionStateMachine`` per connection (handshake, grant,
/// subscriptions and their ``SubscriptionFlow``s, close) and each list's `Sequencer`
/// (inside ``ListHost``). Its work is split by concept, one file each:
///
/// | file | concern |
/// | --- | --- |
/// | `Server+Lifecycle.swift` | start, reload, graceful shutdown |
/// | `Server+Connections.swift` | accept, decode, the connection machine's actions, close, the sweep |
/// | `Server+FanOut.swift` | end of turn: seal → store → fan-out → acks, catch-ups, the flush |
/// | `Server+RingFlush.swift` | the flush through io_uring (`write_path`), libuv for the rest |
/// | `Server+FirstFrames.swift` | a subscriber's first frame, inline or off the loop |
/// | `Server+Storage.swift` | recovery, syncs, a storage failure |
/// | `Server+Loading.swift` | lists on demand: load on first use, idle unload, the history budget |
/// | `Server+Replicas.swift` | cluster mode: replica lists, forwarded writes, take-over |
/// | `Server+Compaction.swift` | snapshots of the log, off the loop |
/// | `Server+Stats.swift` | the StatsReply and the read-only accessors |
/// | `Server+TLS.swift` | TLS on the listener: the certificate, a channel per connection, the read side |
///
/// Per loop turn (libuv: timers → I/O poll → **check** → close callbacks):
/// 1. during poll, reads are decoded and their actions carried out; mutations are only
///    queued in their list's sequencer, replies only queued in the connection;
/// 2. in the check hook, every list with pending mutations is sealed (one version, one
///    changeset, one encoded diff frame), the frame is queued to each live subscriber,
///    then acks and rejects; lagging subscribers whose queue drained get a catch-up;
/// 3. still in the hook, each connection with queued frames is written **once** — for at
///    most `flush_slice_us`; the rest is written in the next turns, which come at once
///    (``flushIdle``), and lists are then paced (`seal_wait_us`) — and connections
///    marked for closing are shut down, never in the middle of their own callbacks.
public final class Server {
    public internal(set) var configuration: ServerConfiguration {
        // The pacer's budgets follow every change (a reload, a test's).
        didSet { outbox.pacer.budgets = configuration.flushBudgets }
    }
    public let loop: EventLoop
    public var logger: Logger
    /// What the server counts: statistics and metrics, updated together
    /// (``ServerEvents``).
    var events = ServerEvents()
    /// Where the server is in its life; every transition is logged.
    var lifecycle = ServerLifecycle()

    // MARK: Handles (closed at the end of a shutdown)

    /// The listeners, the end-of-turn hook and the timers (``ServerHandles``).
    var handles = ServerHandles()
    /// What the sweep remembers between runs (``Housekeeping``).
    var housekeeping = Housekeeping()

    // MARK: Connections

    /// Open connections by ID.
    var connections: [Int: Connection] = [:]
    var nextConnectionID = 1
    /// Connections that have not completed the handshake (capped by
    /// `auth.max_pending_handshakes`: excess connections are closed at accept).
    var pendingHandshakes: Set<Int> = []
    /// The end of the turn: this turn's connections to write and their lifetime rule,
    /// the write route, the dirty lists and the pacer (``Outbox``).
    let outbox: Outbox
    /// Connections with at least one lagging subscription. The end of every turn looks
    /// only at these: scanning every connection's flows per turn would cost
    /// O(connections) even when nobody lags.
    var laggingConnections: Set<Int> = []
    /// The token verifier new connections get; `nil` with `[auth] mode = "off"`
    /// (docs/SECURITY.md). A reload replaces it; accepted connections keep theirs.
    var verifier: TokenVerifier?
    /// Encodes every frame the server sends (compression from the configuration).
    var encoder: FrameEncoder
    /// TLS on the TCP listener (`[tls]`, `Server+TLS.swift`); `nil` when it is plaintext.
    var tls: ServerTLS?

    // MARK: Lists

    /// Every list by name, one ``ListSlot`` each: loading, refused or hosted, with the
    /// per-list flags in the hosted entry (``ListTable``).
    var lists = ListTable()
    /// Work handed to the thread pool whose completion has not run: snapshot builds and
    /// compactions. A shutdown completes only at 0 — the completions touch the server
    /// and the store, which must still be open.
    var offloadsOutstanding = 0
    /// Writes that cross nodes in cluster mode (``ClusterRelay``).
    var relay = ClusterRelay()
    /// The backup being written off the loop, if any (`Server+Backup.swift`).
    var backups = Backups()

    /// The next ``PendingFrame`` ID.
    var nextPendingFrameID: UInt64 = 1

    /// Called once per change of the listener port, connections or lists (for
    /// `STATUS=` lines in systemd); optional.
    public var onStatusChange: (() -> Void)?

    /// How batches are stored and lists come back, decided once at init
    /// (``StorageMode``: appending, on demand, committing later, or cluster).
    let storage: StorageMode
    /// Batches whose asynchronous commit has not returned, and their frames
    /// (``PendingCommits``).
    var commits = PendingCommits()
    /// Set once the store failed a write or an fsync: from then on nothing is sent.
    public var storageFailure: StoreError? { lifecycle.storageFailure }
    /// Called once, on the loop thread, when the store fails a write or an fsync. The
    /// batch in flight is never acknowledged, and the in-memory state is ahead of the
    /// disk, so the only safe continuation is a restart: `flowsyncd` exits with
    /// `EX_IOERR` (74) and systemd restarts it; tests observe it instead. Without a
    /// handler the server just stops serving (every connection is closed).
    public var onFatalStorageError: ((StoreError) -> Void)?

    /// A server over `store`, or over the store `configuration` names (`[storage]`:
    /// a ``FileStore`` in the data directory by default).
    ///
    /// `clock` (monotonic nanoseconds) times the flush's slices and the seals' pacing;
    /// tests may drive it.
    public init(
        configuration: ServerConfiguration, loop: EventLoop, logger: Logger, store: ListStore? = nil,
        clock: @escaping () -> UInt64 = MonotonicClock.nanoseconds
    ) {
        self.configuration = configuration
        self.outbox = Outbox(budgets: configuration.flushBudgets, clock: clock)
        self.loop = loop
        self.logger = logger
        self.encoder = FrameEncoder(configuration: configuration.frameCompression)
        self.storage = StorageMode(
            store: store ?? configuration.makeStore(loop: loop, logger: logger), configuration: configuration)
    }

    /// Where committed batches go (docs/STORAGE.md), behind its protocol.
    public var store: ListStore { storage.store }
    /// The store when it commits later (a committing store, cluster mode), else `nil`:
    /// then ``commitGate`` stays idle and frames go straight to connections.
    var committingStore: CommittingStore? { storage.committing }
    /// The store when lists load on demand, on workers (`lists.on_demand`).
    var onDemandStore: OnDemandStore? { storage.onDemand?.store }
    /// The cluster node (cluster mode): replicas, forwarded writes, take-overs
    /// (`Server+Replicas.swift`).
    var clusterNode: ClusterNode? { storage.node }

    // MARK: The registries

    /// The list named `name`: hosted, or created (with a fresh random epoch) when
    /// `create` allows it. `declared` lists (from the config) are never dropped.
    func host(for name: String, create: Bool, declared: Bool = false) -> ListHost? {
        if let list = lists[name] {
            if declared { list.declared = true }
            return list
        }
        // A list loading or refused is never created over (the shell waits for the
        // load, or answers the refusal, before it asks).
        guard create, lists.slot(name) == nil else { return nil }
        // A fresh random epoch: a list that is not in the store is a new history, and a
        // client holding a position of an older list of that name must resync.
        defer { recordListGauges() }
        let list = ListHost(
            name: name, epoch: UInt64.random(in: 1...UInt64.max), limits: configuration.director,
            history: configuration.historyLimits,
            dedupe: configuration.dedupeLimits, declared: declared)
        lists.host(list)
        logger.debug("list created", metadata: ["flowsync.list": "\(name)"])
        return list
    }

    /// Forgets a list nobody needs any more (``ListHost/isDisposable``).
    func dropIfDisposable(_ list: ListHost) {
        lists.drop(list)
        recordListGauges()
    }

    /// O(1): called on every subscribe, load and drop. The subscriptions gauge is a sum
    /// over every list, so it is sampled once a second instead (``sampleListGauges()``):
    /// summed here it made each subscribe O(lists loaded) — a millisecond per subscribe
    /// with 100,000 lists loaded, found with `perf` in the lists-on-demand bench.
    func recordListGauges() {
        metrics.lists.record(lists.hostedCount)
    }

    /// Subscriptions over all lists. O(lists loaded): for the once-a-second sample and
    /// stats requests, never per subscribe.
    var subscriptionCount: Int { lists.hosts.reduce(0) { $0 + $1.subscribers.count } }
}

// MARK: The outbox's state under the names the end of the turn's tests use

extension Server {
    /// The commit gate (``PendingCommits/gate``).
    var commitGate: CommitGate<Int, [UInt8]> {
        get { commits.gate }
        _modify { yield &commits.gate }
    }

    /// Lists a backup reads from disk per worker job (``Backups/chunkSize``).
    var backupChunkSize: Int {
        get { backups.chunkSize }
        set { backups.chunkSize = newValue }
    }

    /// The server's counters (``ServerEvents/statistics``).
    public var statistics: ServerStatistics { events.statistics }
    /// The swift-metrics handles, for the gauges the sweep samples.
    var metrics: ServerMetrics { events.metrics }

    /// Lists with mutations queued this turn (``Outbox/dirtyLists``).
    var dirtyLists: Set<String> {
        get { outbox.dirtyLists }
        _modify { yield &outbox.dirtyLists }
    }

    /// Whether the last outermost flush stopped at its slice (``FlushPacer``).
    var flushUnfinished: Bool {
        get { outbox.pacer.lastFlushUnfinished }
        set { outbox.pacer.lastFlushUnfinished = newValue }
    }

    /// The idle handle the outbox keeps on while work waits.
    var flushIdle: LoopIdle? { outbox.idle }

    /// This turn's connections to write (``Outbox/queued``).
    var toFlush: [Unmanaged<Connection>] { outbox.queued }

    /// The io_uring's size, before ``start(adoptingDescriptor:)``.
    var ringSize: (sends: Int, buffers: Int) {
        get { outbox.ringSize }
        set { outbox.ringSize = newValue }
    }

    /// Creates the ring `write_path` asks for (``Outbox/startWritePath(_:logger:)``).
    func startWritePath() {
        outbox.startWritePath(configuration.writePath, logger: logger)
    }

    /// The write path in use: `io_uring` once its ring exists, else `libuv`.
    public var activeWritePath: WritePath { outbox.ring == nil ? .libuv : .ioUring }
}
