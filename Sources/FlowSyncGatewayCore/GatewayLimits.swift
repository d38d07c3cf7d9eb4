/// Every limit of the gateway (`[limits]` in config/flowsync-gateway.toml), each with its
/// default and what happens past it (docs/GATEWAY.md, "Limits"). A limit costs only the
/// client that reaches it: a 4xx answer or a closed connection, never a stall of others.
public struct GatewayLimits: Hashable, Sendable {
    /// Largest request body, bytes (default 1 MiB); past it: 413 `body-too-large`, and the
    /// rest of the body is not read.
    public var maxBodyBytes: Int
    /// Operations per mutation request (default 1,000; the daemon's own limit also
    /// applies); past it: 413 `too-many-operations`.
    public var maxOperations: Int
    /// Open HTTP connections (default 4,096); past it new connections wait in the listen
    /// backlog until one closes.
    public var maxConnections: Int
    /// A request's head (request line and headers) must arrive within this, counted from
    /// the connection's first byte or the end of the previous response (default 10 s).
    /// Past it the connection is closed: a slowloris holds a connection for at most this.
    /// It also closes keep-alive connections idle this long.
    public var headerTimeoutMilliseconds: Int
    /// A request's body must arrive within this after its head (default 10 s); past it:
    /// 408 `body-timeout` and close.
    public var bodyTimeoutMilliseconds: Int
    /// Open SSE and WebSocket streams (default 2,000); past it: 503 `too-many-streams`.
    public var maxStreams: Int
    /// How long a request waits for the daemon's answer (default 10 s); past it: 504.
    public var daemonTimeoutMilliseconds: Int
    /// The pool of daemon links behind GET and un-keyed POST requests: per credential,
    /// in total, and the idle expiry (``LinkPoolLimits``). A request that finds its
    /// credential's links all busy at the limit waits up to `daemonTimeoutMilliseconds`
    /// for one, then gets 504.
    public var linkPool: LinkPoolLimits

    public init(
        maxBodyBytes: Int = 1 << 20, maxOperations: Int = 1_000, maxConnections: Int = 4_096,
        headerTimeoutMilliseconds: Int = 10_000, bodyTimeoutMilliseconds: Int = 10_000, maxStreams: Int = 2_000,
        daemonTimeoutMilliseconds: Int = 10_000, linkPool: LinkPoolLimits = LinkPoolLimits()
    ) {
        self.linkPool = linkPool
        self.maxBodyBytes = maxBodyBytes
        self.maxOperations = maxOperations
        self.maxConnections = maxConnections
        self.headerTimeoutMilliseconds = headerTimeoutMilliseconds
        self.bodyTimeoutMilliseconds = bodyTimeoutMilliseconds
        self.maxStreams = maxStreams
        self.daemonTimeoutMilliseconds = daemonTimeoutMilliseconds
    }
}

extension GatewayLimits: CheckedLimits {
    /// Every HTTP limit with its flag and the values accepted (``validate()``).
    public static var settings: [LimitSetting<GatewayLimits>] {
        [
            LimitSetting("--max-body-bytes", \.maxBodyBytes, 1...LimitBounds.bytes, unit: "bytes"),
            LimitSetting("--max-operations", \.maxOperations, 1...LimitBounds.count, unit: "operations"),
            LimitSetting("--max-connections", \.maxConnections, 1...LimitBounds.count, unit: "connections"),
            LimitSetting("--max-streams", \.maxStreams, 1...LimitBounds.count, unit: "streams"),
            LimitSetting("--header-timeout-ms", \.headerTimeoutMilliseconds, 1...LimitBounds.milliseconds, unit: "ms"),
            LimitSetting("--body-timeout-ms", \.bodyTimeoutMilliseconds, 1...LimitBounds.milliseconds, unit: "ms"),
            LimitSetting("--daemon-timeout-ms", \.daemonTimeoutMilliseconds, 1...LimitBounds.milliseconds, unit: "ms"),
            LimitSetting("--pool-max-per-token", \.linkPool.maxPerCredential, 1...LimitBounds.count, unit: "links"),
            LimitSetting("--pool-max-links", \.linkPool.maxTotal, 1...LimitBounds.count, unit: "links"),
            LimitSetting("--pool-idle-ms", \.linkPool.idleMilliseconds, 1...LimitBounds.milliseconds, unit: "ms"),
        ]
    }
}
