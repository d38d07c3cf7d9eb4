/// Why the gateway closes a WebSocket, with its close code and what the client should do
/// (docs/GATEWAY.md, "Close codes"). The JS client reads the code to decide between
/// resuming and giving up.
public enum WebSocketCloseReason: Hashable, Sendable {
    /// 1009: a message over `maxMessageBytes`. Give up on that message; reconnecting is fine.
    case messageTooLarge
    /// 4001: the daemon refused the socket's token. Get a new token before reconnecting.
    case unauthorized
    /// 4008: more than the outbound queue's limits were waiting for this browser. Reconnect
    /// and resume with `after`: the daemon's catch-up coalesces what was missed.
    case tooSlow
    /// 4502: the gateway's link to the daemon ended (a daemon restart or failover).
    /// Reconnect with backoff and resume with `after`.
    case daemonLinkLost
    /// 1013: more streams than `limits.max_streams`. Retry later, with backoff.
    case tooManyStreams

    /// The WebSocket close code.
    public var code: UInt16 {
        switch self {
        case .messageTooLarge: return 1009
        case .unauthorized: return 4001
        case .tooSlow: return 4008
        case .daemonLinkLost: return 4502
        case .tooManyStreams: return 1013
        }
    }

    /// The close frame's reason text (at most 123 bytes, as RFC 6455 allows).
    public var text: String {
        switch self {
        case .messageTooLarge: return "message too large"
        case .unauthorized: return "the daemon refused the token"
        case .tooSlow: return "too slow: reconnect and resume with after"
        case .daemonLinkLost: return "daemon link lost: reconnect and resume with after"
        case .tooManyStreams: return "too many streams: retry later"
        }
    }
}
