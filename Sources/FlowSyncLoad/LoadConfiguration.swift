/// TLS settings of a load run (`--tls`, `--cacert`, `--server-name`, `--tls-cert`,
/// `--tls-key`). Every client connection does a full handshake (no resumption), as the
/// SDK does.
public struct LoadTLS: Hashable, Sendable, Codable {
    /// PEM file of CAs to trust besides the system's. With ``LoadConfiguration/spawn``
    /// and no ``daemonCertificate``: the generated certificate, trusted as its own CA.
    public var caFile: String?
    /// The name checked against the daemon's certificate (and sent as SNI). Default
    /// `localhost`.
    public var serverName: String?
    /// With ``LoadConfiguration/spawn``: the daemon's certificate chain and key (PEM);
    /// `nil`: a throw-away self-signed ECDSA P-256 pair made with `openssl` for the run.
    public var daemonCertificate: String?
    public var daemonKey: String?

    public init(
        caFile: String? = nil, serverName: String? = nil, daemonCertificate: String? = nil, daemonKey: String? = nil
    ) {
        self.caFile = caFile
        self.serverName = serverName
        self.daemonCertificate = daemonCertificate
        self.daemonKey = daemonKey
    }
}

/// Everything one load run does: the daemon to reach, the clients to open, the writes
/// to make and the events to inject. A ``Scenario`` fills it in; command-line options
/// override single fields.
public struct LoadConfiguration: Hashable, Sendable, Codable {
    // MARK: Daemon
    /// Daemon host (numeric, or `localhost`). Ignored with ``spawn``.
    public var host = "127.0.0.1"
    /// Daemon port. Ignored with ``spawn``.
    public var port = 7400
    /// Several daemons (`host:port` each, numeric hosts), the nodes of one cluster:
    /// subscribers and writers are spread over them round robin (subscriber `k` of list
    /// `l` on endpoint `(k + l) % n`, so every list has subscribers on every endpoint;
    /// writer `w` on `w % n`); the lists are set up, and the final
    /// check asks, through the first. `nil` or empty: ``host`` and ``port``. Ignored with
    /// ``spawn``. The endpoints must share their lists (a cluster): separate daemons
    /// would each hold their own copy and the final check would find divergences.
    public var endpoints: [String]? = nil
    /// Start a `flowsyncd` on a free loopback port with a temporary data directory, and
    /// stop it at the end.
    public var spawn = false
    /// The daemon binary for ``spawn``.
    public var daemonPath = ".build/release/flowsyncd"
    /// With ``spawn``: the daemon's `[storage] engine` ("file" or "memory"); nil: its default.
    public var daemonStorage: String? = nil
    /// With ``spawn``: the daemon's `[storage] fsync` ("always", "interval", "never"); nil: its default.
    public var daemonFsync: String? = nil
    /// With ``spawn``: the daemon's `[server] write_path` ("libuv", "io_uring", "auto");
    /// nil: its default.
    public var daemonWritePath: String? = nil
    /// With ``spawn``: the daemon's `[server] flush_slice_us` (0: unsliced); nil: its
    /// default.
    public var daemonFlushSliceMicroseconds: Int? = nil
    /// With ``spawn``: the daemon's `[server] seal_wait_us`; nil: its default.
    public var daemonSealWaitMicroseconds: Int? = nil

    /// TLS to the daemon (issue #32); `nil`: plain TCP (`--tls` turns it on).
    public var tls: LoadTLS? = nil

    // MARK: Clients
    /// Lists written and subscribed (`load-0` … `load-(n-1)`).
    public var lists = 1
    /// Subscribers per list (one connection each).
    public var subscribersPerList = 100
    /// Subscribers per list that keep a full replica (apply every Snapshot and Diff and
    /// check the digest); the others check version contiguity and the server's digest
    /// only. `nil`: all of them.
    public var fullReplicasPerList: Int? = nil
    /// Writer connections in total; writer `w` writes the lists `l` with `l % writers == w`
    /// (or, with more writers than lists, list `w % lists`).
    public var writers = 1
    /// Loopback source addresses to spread client connections over (127.0.0.1 …
    /// 127.0.0.n); more than one only matters past one address's ephemeral ports.
    public var sourceAddresses = 1

    // MARK: Writes
    /// Mutations per second over all writers, open loop (sent on a schedule whatever the
    /// answers; latency counts from the scheduled time). 0: closed loop, as fast as the
    /// in-flight window allows (saturation).
    public var rate: Double = 1_000
    /// Mutations a writer may have sent and not had answered. Open loop: when the window
    /// is full the schedule slips, and the slip shows in the latency (from the intended
    /// time). Writes are "at head" with references by ID, so pipelining is safe.
    public var maxInFlightPerWriter = 32
    /// Operations per Mutate.
    public var opsPerMutation = 1
    /// What each Mutate names as its base (docs/PROTOCOL.md, "Base").
    public enum WriteBase: String, Hashable, Sendable, Codable, CaseIterable {
        /// Epoch 0, "at head": applied to the current state as written.
        case head
        /// The version of the writer's last Ack on that list (its first Mutate: at head).
        /// Other writers' commits since then make the daemon **rebase** it by identity.
        /// Needs one mutation in flight per writer (a pipelined one would refer to rows
        /// its base does not have yet).
        case acked
    }
    /// The base of every Mutate.
    public var writeBase = WriteBase.head
    /// Rows put in each list before the run (spread over ``sectionsPerList``).
    public var initialRows = 1_000
    /// Sections created in each list before the run.
    public var sectionsPerList = 10
    /// Bytes of each generated row payload (JSON-like).
    public var payloadBytes = 100
    /// Shares of the generated operation kinds.
    public var mix = OperationMix.default

    // MARK: Timing
    /// Measured seconds (after the warm-up).
    public var duration: Double = 10
    /// Seconds of load before measuring starts (figures of that time are discarded).
    public var warmup: Double = 2
    /// Seed of every random choice (same seed and configuration, same operations).
    public var seed: UInt64 = 1

    // MARK: Injected events
    /// Subscribers dropped and reconnected (with resume) in the middle of the measured
    /// time, while writes go on. 0: none.
    public var resumeStormSubscribers = 0
    /// Subscribers that stop reading for ``slowPauseMilliseconds`` every
    /// ``slowPeriodMilliseconds`` (the daemon's back-pressure then pauses them and
    /// sends a catch-up). 0: none.
    public var slowConsumers = 0
    /// How long a slow consumer stops reading.
    public var slowPauseMilliseconds = 1_500
    /// How often a slow consumer stops reading.
    public var slowPeriodMilliseconds = 3_000
    /// With slow consumers: the measured window stays open past ``duration`` until the
    /// daemon has closed at least this many subscribers (its write deadline or hard
    /// limit), for at most ``eventWaitSeconds`` more. A test of that recovery then waits
    /// for the event it checks instead of hoping a fixed time was enough. 0: off.
    public var untilSubscribersClosed = 0
    /// The bound on every wait for an event past the fixed window (``untilSubscribersClosed``,
    /// and closed subscribers coming back before the final checks).
    public var eventWaitSeconds = 60.0
    /// A slow consumer's socket receive buffer (`SO_RCVBUF`), like a constrained client;
    /// 0 keeps the kernel's autotuned one (up to 32 MB on loopback here).
    public var slowReceiveBufferBytes = 64 * 1024

    // MARK: Checks
    /// Lists whose replicas are compared row by row with a fresh verifier's Snapshot.
    public var fullCompareLists = 3
    /// Replicas per sampled list compared row by row.
    public var fullCompareReplicas = 5

    /// Creates the default configuration (the `mixed` shape at a small size).
    public init() {}

    /// Total subscriber connections.
    public var subscriberCount: Int { lists * subscribersPerList }

    /// The daemons to reach, in order: ``endpoints`` parsed, or ``host``:``port``;
    /// `nil` when an endpoint is malformed (``validationErrors()`` says which).
    public var resolvedEndpoints: [(host: String, port: Int)]? {
        guard let endpoints, !endpoints.isEmpty else { return [(host, port)] }
        let parsed = endpoints.map(Self.parseEndpoint)
        return parsed.contains { $0 == nil } ? nil : parsed.map { $0! }
    }

    /// `host:port` (or `[v6]:port`) with a port in 1...65535; `nil` otherwise.
    public static func parseEndpoint(_ text: String) -> (host: String, port: Int)? {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
            (1...65_535).contains(port)
        else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return host.isEmpty ? nil : (host, port)
    }

    /// Problems that make the configuration unusable, for the command line.
    public func validationErrors() -> [String] {
        var errors: [String] = []
        if lists < 1 { errors.append("--lists must be at least 1") }
        if resolvedEndpoints == nil {
            errors.append("--endpoints must be host:port,host:port,… (numeric hosts, ports 1…65535)")
        }
        if spawn, let endpoints, !endpoints.isEmpty { errors.append("--endpoints and --spawn exclude each other") }
        if subscribersPerList < 0 { errors.append("--subscribers must not be negative") }
        if writers < 0 { errors.append("--writers must not be negative") }
        if rate < 0 { errors.append("--rate must not be negative (0: closed loop)") }
        if opsPerMutation < 1 || opsPerMutation > 1_000 { errors.append("--ops-per-mutation must be within 1…1000") }
        if initialRows < 0 { errors.append("--initial-rows must not be negative") }
        if sectionsPerList < 1 { errors.append("--sections must be at least 1") }
        if payloadBytes < 2 || payloadBytes > 65_536 { errors.append("--payload-bytes must be within 2…65536") }
        if duration <= 0 { errors.append("--duration must be positive") }
        if warmup < 0 { errors.append("--warmup must not be negative") }
        if maxInFlightPerWriter < 1 { errors.append("--max-in-flight must be at least 1") }
        if writeBase == .acked, maxInFlightPerWriter != 1 {
            errors.append("--base acked needs --max-in-flight 1 (one mutation in flight per writer)")
        }
        if let daemonStorage, !["file", "memory"].contains(daemonStorage) {
            errors.append("--storage must be file or memory")
        }
        if let daemonFsync, !["always", "interval", "never"].contains(daemonFsync) {
            errors.append("--fsync must be always, interval or never")
        }
        if let daemonWritePath, !["libuv", "io_uring", "auto"].contains(daemonWritePath) {
            errors.append("--write-path must be libuv, io_uring or auto")
        }
        if let slice = daemonFlushSliceMicroseconds, !(0...1_000_000).contains(slice) {
            errors.append("--flush-slice-us must be 0…1000000")
        }
        if let wait = daemonSealWaitMicroseconds, !(0...1_000_000).contains(wait) {
            errors.append("--seal-wait-us must be 0…1000000")
        }
        if sourceAddresses < 1 || sourceAddresses > 254 { errors.append("--source-addresses must be within 1…254") }
        if resumeStormSubscribers > subscriberCount {
            errors.append("--resume-storm exceeds the subscribers (\(subscriberCount))")
        }
        if slowConsumers > subscriberCount {
            errors.append("--slow-consumers exceeds the subscribers (\(subscriberCount))")
        }
        return errors
    }

    /// The lists writer `writer` writes to (every list gets at least one writer when
    /// there are writers; a writer may write several lists).
    public func lists(ofWriter writer: Int) -> [Int] {
        guard writers > 0 else { return [] }
        if writers >= lists { return [writer % lists] }
        return Array(stride(from: writer, to: lists, by: writers))
    }

    /// The writers of list `list` (the inverse of ``lists(ofWriter:)``).
    public func writers(ofList list: Int) -> [Int] {
        guard writers > 0 else { return [] }
        if writers >= lists { return Array(stride(from: list, to: writers, by: lists)) }
        return [list % writers]
    }

    /// The name of list `index`.
    public static func listName(_ index: Int) -> String { "load-\(index)" }
}
