import FlowSyncCore
import FlowSyncProtocol

/// Everything `flowsyncd` can be configured with, with the documented defaults.
/// `config/flowsyncd.toml` documents every key (unit and default); keep the two in step.
public struct ServerConfiguration: Hashable, Sendable {
    /// Where the daemon listens (`[server]` `host`, `port`, `unix_socket`,
    /// `unix_socket_mode`). Restart-only: the listeners are bound at start, so a reload
    /// keeps this whole group (``ServerConfiguration+Reload.swift``).
    public struct Listen: Hashable, Sendable {
        /// Address to listen on (numeric IPv4/IPv6, or `localhost`). Default `127.0.0.1`.
        public var host = "127.0.0.1"
        /// TCP port; 0 lets the OS choose (tests). Default 7400.
        public var port = 7400
        /// Also listen on this Unix-domain socket path (`unix_socket`). Default none.
        public var unixSocketPath: String?
        /// The socket file's permissions, set before `listen` (`unix_socket_mode`, octal
        /// string). Default 0660: the daemon's user and group.
        public var unixSocketMode = 0o660

        public init() {}
    }

    /// Where and how committed batches are kept (`server.data_dir`, `[storage]`,
    /// `lists.on_demand`). Restart-only: the store is open, so a reload keeps this
    /// whole group.
    public struct Storage: Hashable, Sendable {
        /// Directory for durable data: the file store's logs and snapshots
        /// (docs/STORAGE.md). Default `/var/lib/flowsyncd`.
        public var dataDirectory = "/var/lib/flowsyncd"
        // Defaults are the store's own (`FileStore.Options`), stated there once.
        /// Where committed batches are kept. Default `.file`.
        public var engine = StorageEngine.file
        /// When batches reach the disk. Default `.always`.
        public var fsyncPolicy = FileStore.Options().fsync
        /// Under `fsync = "interval"`: how often, ms. Default 1000.
        public var fsyncIntervalMilliseconds = 1_000
        /// A list's log is compacted into a snapshot after this many batches (0: never by
        /// count). Default 10000.
        public var snapshotEveryBatches = FileStore.Options().snapshotEveryBatches
        /// … or after this many log bytes (0: never by size). Default 64 MiB.
        public var snapshotEveryBytes = FileStore.Options().snapshotEveryBytes
        /// Sync the files of several lists written in one turn concurrently. Default true.
        public var parallelSync = FileStore.Options().parallelSync
        /// Most log files held open at once (least recently written closed first). Default 1024.
        public var maxOpenLogs = FileStore.Options().maxOpenLogs
        /// When lists are read from the store (`lists.on_demand`, docs/STORAGE.md, "Lists
        /// on demand"): all at start, each on first use (a subscribe, a write, a stats
        /// request by name) on a worker thread, or — the default, ``ListLoading/auto`` —
        /// at start while the store holds at most ``eagerMaxLists`` lists and on demand
        /// beyond (issue #33). File store only: the memory store keeps its lists. Needs a
        /// restart.
        public var listLoading = ListLoading.auto
        /// Under ``ListLoading/auto``: the most stored lists read at start
        /// (`lists.eager_max_lists`). Default 5000.
        public var eagerMaxLists = 5_000
        /// With lists on demand, check every stored list in the background after the start
        /// (`lists.check_stored`; ``StoredListCheck``): damage is logged, counted and its
        /// list refused before anyone asks for it. Default true.
        public var checkStoredLists = true

        public init() {}
    }

    /// When the stored lists are read (`lists.on_demand`).
    public enum ListLoading: String, Hashable, Sendable {
        /// Every list before the listener opens (`false`): damage anywhere refuses the
        /// start; time and memory grow with the stored lists.
        case atStart
        /// Each list on first use (`true`): the start reads no list.
        case onDemand
        /// At start while the store holds at most `lists.eager_max_lists` lists, on
        /// demand beyond (`"auto"`).
        case auto
    }

    /// What one connection and one frame may do (`[limits]`). Reloadable: a reload
    /// applies it to connections accepted afterwards.
    public struct Limits: Hashable, Sendable {
        // Defaults are read from the layer that enforces each limit (`DecoderLimits`,
        // `ServerLimits`, `DirectorLimits`), never restated here; the documented values
        // (config/flowsyncd.toml) are those layers' defaults.
        /// Largest frame accepted after the handshake, bytes. Default 4 MiB (client frames
        /// are mutations; snapshots only flow the other way).
        public var maxFrameBytes = DecoderLimits.server.maxFrameBytes
        /// Largest inflated body accepted, bytes. Default 16 MiB.
        public var maxInflatedBytes = DecoderLimits.server.maxInflatedBytes
        /// Largest frame accepted before the handshake completes, bytes. Default 16 KiB.
        public var preAuthMaxFrameBytes = DecoderLimits.preAuth.maxFrameBytes
        /// Time allowed from connect to a valid Hello, ms. Default 5000.
        public var handshakeTimeoutMilliseconds = 5_000
        /// The heartbeat interval announced in the Welcome, ms: clients send a frame (a Ping
        /// when idle) at least this often, and a ready connection silent for twice as long
        /// is closed with `heartbeat-timeout` (1008). 0: none required, never closed for
        /// silence. Default 20000.
        public var heartbeatMilliseconds = 20_000
        /// TCP keepalive on client connections: first probe after this many idle seconds
        /// (a second line behind heartbeats, for peers that vanish). 0 turns it off. Default 60.
        public var tcpKeepaliveSeconds = 60
        /// Most lists one connection may subscribe to. Default 64.
        public var maxListsPerConnection = Int(ServerLimits().maxListsPerConnection)
        /// Longest list name, UTF-8 bytes. Default 256.
        public var maxListNameBytes = DecoderLimits.server.maxListNameBytes
        /// Most connections held at once; further ones are closed at accept. Default 10000.
        public var maxConnections = 10_000
        /// Per-list director limits (IDs, payloads, counts, ops per mutation).
        public var director = DirectorLimits.default

        public init() {}
    }

    /// The Prometheus admin listener (`[metrics]`). Restart-only: bound at start.
    public struct Metrics: Hashable, Sendable {
        /// Serve Prometheus metrics (`GET /metrics`) on an admin listener. Default true.
        public var enabled = true
        /// Admin listener address. Default `127.0.0.1`: metrics are for the host's scraper.
        public var host = "127.0.0.1"
        /// Admin listener port; 0 lets the OS choose. Default 7401.
        public var port = 7401

        public init() {}
    }

    /// Cluster mode on PostgreSQL (`[cluster]`, docs/CLUSTER.md). Off unless
    /// ``postgres`` is set; then it replaces `[storage]` (no data directory is used).
    /// Restart-only: the store is opened at start.
    public struct Cluster: Hashable, Sendable {
        /// The libpq connection string (`"host=… port=… dbname=… user=…"`). Default
        /// unset: cluster mode off.
        public var postgres: String?
        /// This node's name in `fs_leases` and `fs_lists.owner`: unique in the cluster,
        /// stable across restarts (a restarted node takes its own lists back at once).
        /// Required with ``postgres``; 1…200 bytes.
        public var node = ""
        /// How long a lease lasts, in milliseconds, on PostgreSQL's clock; renewed every
        /// third of it. Another node may claim this node's lists once it lapses.
        /// Default 5000; 300…600000.
        public var leaseMilliseconds = 5_000
        /// Peer links (issue #33, docs/CLUSTER.md "Peer links"): a file holding the
        /// cluster credential, a shared secret of at least 32 bytes (a trailing newline
        /// is not part of it), the same on every node. Default unset: no peer links,
        /// every message between nodes goes through PostgreSQL.
        public var peerSecretFile: String?
        /// The peer listener's address. Default unset: the server's `host`.
        public var peerHost: String?
        /// The peer listener's port; 0 lets the OS choose (the bound port is what the
        /// lease advertises). Default 0.
        public var peerPort = 0
        /// Bytes one link may have queued before it is dropped (its traffic then goes
        /// through PostgreSQL). Default 8 MiB; 65536…1073741824.
        public var peerMaxQueuedBytes = 8 << 20

        public init() {}

        /// Whether cluster mode is on.
        public var isEnabled: Bool { postgres != nil }
    }

    public var listen = Listen()
    public var storage = Storage()
    public var limits = Limits()
    public var metrics = Metrics()
    public var cluster = Cluster()

    // MARK: [server] (the keys outside `listen` and `storage`)
    /// Lists that exist from the start, even before a write.
    public var declaredLists: [String] = []
    /// Whether subscribing or writing to an undeclared list creates it. Default true.
    public var autoCreateLists = true
    /// How long a graceful shutdown waits for queued frames to flush, ms. Default 5000.
    public var shutdownGraceMilliseconds = 5_000
    /// Name the server reports in its handshake.
    public var serverName = "flowsyncd"
    /// How the end-of-turn flush writes queued frames to sockets (`write_path`).
    /// Restart-only (the ring is created at start). Default ``WritePath/libuv``; see
    /// docs/BENCHMARKS.md, "The daemon's write path: libuv vs io_uring", for why.
    public var writePath = WritePath.libuv
    /// How long one loop turn may spend writing queued frames before the loop reads
    /// again, µs (`flush_slice_us`); the connections left are written in the next
    /// turns, in order, each with every frame queued for it by then (one write call).
    /// 0: no limit (every queued frame is written in the turn it was queued).
    /// Default 1000: a batch's fan-out to thousands of subscribers no longer holds
    /// every other client's request for its whole length (docs/BENCHMARKS.md,
    /// "Sliced flush").
    public var flushSliceMicroseconds = 1_000
    /// While a sliced flush still has connections to write, how long a list's first
    /// waiting mutation may wait for others to join its batch, µs (`seal_wait_us`;
    /// ``Server/sealDirtyLists(force:)``). 0: every turn seals what it read.
    public var sealWaitMicroseconds = 2_000
    // MARK: [backpressure]
    /// Below this many queued bytes, a lagging subscriber is caught up. Default 256 KiB.
    public var lowWatermarkBytes = 256 << 10
    /// Above this many queued bytes, a subscriber stops getting per-batch frames. Default 4 MiB.
    public var highWatermarkBytes = 4 << 20
    /// Above this many queued bytes, the connection is closed (slow consumer). Default 32 MiB.
    public var hardLimitBytes = 32 << 20
    /// A connection whose queue has not drained for this long is closed, ms. Default 30000.
    public var writeDeadlineMilliseconds = 30_000

    // MARK: [lists]
    /// On demand: a list with no subscriber and no write for this long is unloaded, ms.
    /// 0: never. Default 300000 (5 min).
    public var idleUnloadMilliseconds = 300_000
    /// On demand: requests (subscribes, writes, stats) that may wait for one list's load;
    /// more are refused with `overloaded` (5003). Default 1024.
    public var maxWaitingPerList = 1_024

    // MARK: [history]
    /// Batches kept per list for resume and catch-up. Default 10000.
    public var historyMaxBatches = 10_000
    /// Bytes kept per list for resume and catch-up. Default 64 MiB.
    public var historyMaxBytes = 64 << 20
    /// History bytes kept over all lists in memory, enforced every second by dropping the
    /// oldest history of the least recently active lists first; a catch-up older than
    /// memory holds is then read from the log (file store). 0: no daemon-wide budget.
    /// Default 0.
    public var historyTotalMaxBytes = 0

    // MARK: [ordering]
    /// Committed sequence numbers remembered per client and list, for idempotent
    /// retries. Default 1,024.
    public var dedupePerClient = 1_024
    /// Clients remembered per list (least recently active forgotten first). Default 100,000.
    public var dedupeClients = 100_000

    // MARK: [compression]
    /// zlib level, 1 (fast) to 9 (small), or 0 for no compression. Default 6.
    public var compressionLevel = 6
    /// Frames with bodies smaller than this are sent uncompressed, bytes. Default 64
    /// (with the preset dictionary even a one-row frame shrinks, see docs/BENCHMARKS.md).
    public var compressionThresholdBytes = 64
    /// Snapshots of lists with at least this many rows (plus sections) are encoded and
    /// deflated on a worker thread, not on the loop (docs/ARCHITECTURE.md, "Event loop",
    /// rule 12); smaller ones stay inline, where they cost less than the hand-off's
    /// extra loop turn. Default 2,000 (about 0.5–2 ms inline). 0 offloads every snapshot.
    public var offloadSnapshotRows = 2_000

    // MARK: [auth]
    /// Tokens, permissions and the pre-auth connection cap (docs/SECURITY.md).
    public var auth = AuthConfiguration()

    // MARK: [tls]
    /// TLS on the TCP listener: certificate, versions, client certificates (issue #32).
    public var tls = TLSConfiguration()

    // MARK: [logging]
    /// One of trace, debug, info, notice, warning, error, critical. Default info.
    public var logLevel = "info"

    public init() {}

    /// The file store's options from `[storage]`.
    public var fileStoreOptions: FileStore.Options {
        FileStore.Options(
            fsync: fsyncPolicy, snapshotEveryBatches: snapshotEveryBatches, snapshotEveryBytes: snapshotEveryBytes,
            parallelSync: parallelSync,
            maxOpenLogs: maxOpenLogs)
    }

    /// Checks cross-field rules; returns the offending key and why.
    public func validate() -> (key: String, problem: String)? {
        if port < 0 || port > 65_535 { return ("server.port", "must be 0…65535") }
        if metricsPort < 0 || metricsPort > 65_535 { return ("metrics.port", "must be 0…65535") }
        if lowWatermarkBytes > highWatermarkBytes {
            return ("backpressure.low_watermark_bytes", "must not exceed high_watermark_bytes")
        }
        if highWatermarkBytes > hardLimitBytes {
            return ("backpressure.high_watermark_bytes", "must not exceed hard_limit_bytes")
        }
        if !(0...9).contains(compressionLevel) { return ("compression.level", "must be 0…9") }
        if preAuthMaxFrameBytes > maxFrameBytes {
            return ("limits.pre_auth_max_frame_bytes", "must not exceed max_frame_bytes")
        }
        if storageEngine == .file && dataDirectory.isEmpty {
            return ("server.data_dir", "must not be empty with storage.engine = \"file\"")
        }
        if maxFrameBytes < 1_024 { return ("limits.max_frame_bytes", "must be at least 1024") }
        if !Self.logLevels.contains(logLevel) {
            return ("logging.level", "must be one of \(Self.logLevels.joined(separator: ", "))")
        }
        if let problem = auth.validate(host: host) { return problem }
        if let problem = tls.validate(host: host) { return problem }
        if cluster.postgres?.isEmpty == true {
            return ("cluster.postgres", "must not be empty (remove the key to turn cluster mode off)")
        }
        if cluster.isEnabled && cluster.node.isEmpty { return ("cluster.node", "is required with cluster.postgres") }
        if !cluster.isEnabled && !cluster.node.isEmpty { return ("cluster.node", "needs cluster.postgres") }
        if cluster.node.utf8.count > 200 { return ("cluster.node", "must be at most 200 bytes") }
        if !cluster.isEnabled && cluster.peerSecretFile != nil {
            return ("cluster.peer_secret_file", "needs cluster.postgres")
        }
        for name in declaredLists where name.isEmpty || name.utf8.count > maxListNameBytes {
            return ("server.lists", "list name \"\(name)\" is empty or longer than \(maxListNameBytes) bytes")
        }
        return nil
    }

    /// The accepted log level names.
    public static let logLevels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]
}

/// The store a server keeps its lists in (`[storage] engine`).
public enum StorageEngine: String, Hashable, Sendable, CaseIterable {
    /// ``FileStore`` in `server.data_dir`: survives restarts and crashes.
    case file
    /// ``InMemoryStore``: nothing survives the process (tests, throw-away caches).
    case memory
}

/// How the daemon writes each turn's frames (`[server] write_path`, issue #20).
public enum WritePath: String, Hashable, Sendable, CaseIterable {
    /// `uv_try_write` per connection, the rest queued with `uv_write`: one system call
    /// per connection per turn.
    case libuv
    /// One io_uring send per connection, every send of a turn submitted with one
    /// system call; libuv takes what a send leaves (a full socket). Falls back to
    /// libuv, with a warning, where the kernel lacks io_uring or forbids it.
    case ioUring = "io_uring"
    /// io_uring where the kernel offers it, libuv otherwise (the fallback logged at info).
    case auto
}
