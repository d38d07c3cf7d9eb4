/// The WebSocket's own limits (docs/GATEWAY.md, "WebSocket limits and close codes"), each
/// with its default, its `--ws-…` flag and what happens past it. A limit costs only the
/// socket that reaches it.
public struct WebSocketLimits: Hashable, Sendable {
    /// Largest message a browser may send, bytes after permessage-deflate (default 1 MiB);
    /// past it: an `error` (`message-too-large`) and close 1009.
    public var maxMessageBytes: Int
    /// Lists one socket may follow at once (default 64); past it: an `error`
    /// (`too-many-subscriptions`) for that `subscribe`; the socket stays open.
    public var maxSubscriptions: Int
    /// Writes one socket may have in flight (default 64); past it: a `reject`
    /// (`too-many-writes`) for that `mutate`; the socket stays open.
    public var maxWritesInFlight: Int
    /// Messages queued toward one browser (default 1,024) and their bytes (default 8 MiB):
    /// past either, the browser is too slow and is closed with 4008; it resumes with `after`.
    public var maxQueuedMessages: Int
    /// See ``maxQueuedMessages``.
    public var maxQueuedBytes: Int
    /// A ping goes out this often (default 30 s); a browser that has not answered the
    /// previous one by then is closed (1001). This also bounds an idle dead peer.
    public var pingMilliseconds: Int

    /// Every limit with its default.
    public init(
        maxMessageBytes: Int = 1 << 20, maxSubscriptions: Int = 64, maxWritesInFlight: Int = 64,
        maxQueuedMessages: Int = 1_024, maxQueuedBytes: Int = 8 << 20, pingMilliseconds: Int = 30_000
    ) {
        self.maxMessageBytes = maxMessageBytes
        self.maxSubscriptions = maxSubscriptions
        self.maxWritesInFlight = maxWritesInFlight
        self.maxQueuedMessages = maxQueuedMessages
        self.maxQueuedBytes = maxQueuedBytes
        self.pingMilliseconds = pingMilliseconds
    }
}

extension WebSocketLimits: CheckedLimits {
    /// Every WebSocket limit with its flag and the values accepted (``validate()``).
    ///
    /// Why the lower bounds: a message limit under 1 KiB refuses ordinary writes, a queue
    /// under 1 KiB holds hardly any snapshot (a socket is closed at its first larger
    /// message), and a ping period under 100 ms
    /// closes any browser whose pong is one busy frame late.
    public static var settings: [LimitSetting<WebSocketLimits>] {
        [
            LimitSetting("--ws-max-message-bytes", \.maxMessageBytes, 1_024...LimitBounds.bytes, unit: "bytes"),
            LimitSetting("--ws-max-subscriptions", \.maxSubscriptions, 1...LimitBounds.count, unit: "lists"),
            LimitSetting("--ws-max-writes-in-flight", \.maxWritesInFlight, 1...LimitBounds.count, unit: "writes"),
            LimitSetting("--ws-max-queued-messages", \.maxQueuedMessages, 1...LimitBounds.count, unit: "messages"),
            LimitSetting("--ws-max-queued-bytes", \.maxQueuedBytes, 1_024...LimitBounds.bytes, unit: "bytes"),
            LimitSetting("--ws-ping-ms", \.pingMilliseconds, 100...LimitBounds.milliseconds, unit: "ms"),
        ]
    }
}
