/// What a client should do after an error, a reject or a close.
///
/// Every ``ErrorCode`` has a default reaction (``ErrorCode/reaction``), and an
/// ``ErrorMessage`` carries the reaction the server chose on the wire, so a server can
/// tune a back-off without a new protocol version.
///
/// Wire form (`docs/PROTOCOL.md`, "Reactions"): one byte tag, followed for
/// ``backoff(milliseconds:)`` only by a varint delay.
public enum ClientReaction: Hashable, Sendable, CustomStringConvertible {
    /// Retry at once: reconnect, or resend the same request (a transient condition).
    case retry
    /// Drop the local replica of the list and subscribe again without a resume position.
    case resync
    /// Do not retry: the request (or the client) is wrong; report it.
    case giveUp
    /// Retry after waiting this long (plus jitter chosen by the client).
    case backoff(milliseconds: UInt32)
    /// Obtain a new auth token, then reconnect.
    case refreshToken

    /// The one-byte wire tag.
    var tag: UInt8 {
        switch self {
        case .retry: return 0
        case .resync: return 1
        case .giveUp: return 2
        case .backoff: return 3
        case .refreshToken: return 4
        }
    }

    public var description: String {
        switch self {
        case .retry: return "retry"
        case .resync: return "resync"
        case .giveUp: return "give up"
        case .backoff(let ms): return "back off \(ms) ms"
        case .refreshToken: return "refresh token"
        }
    }
}
