/// The numbered catalog of wire error codes, each with the reaction a client should take.
///
/// A struct over a `UInt16` (not a closed enum) on purpose: a client must be able to
/// decode a code added by a newer server. An unknown code still has a sensible
/// ``reaction``, derived from its range:
///
/// | range | family | default reaction for unknown codes |
/// | --- | --- | --- |
/// | 1000–1999 | protocol (framing, handshake, state) | give up |
/// | 2000–2999 | authentication and authorization | refresh token |
/// | 3000–3999 | limits and flow control | give up |
/// | 4000–4999 | mutations, conflicts, ordering, subscriptions | resync |
/// | 5000–5999 | server state | back off 1 s |
///
/// The same table, with every code, is in `docs/PROTOCOL.md` ("Error codes"); a test
/// keeps the two in step.
public struct ErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The number sent on the wire (big-endian `u16`).
    public let rawValue: UInt16

    /// Wraps any number, including codes this build does not know.
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    // MARK: 1xxx — protocol

    /// The frame or message body does not follow the format (bad varint, truncated
    /// field, trailing bytes, reserved flag set, invalid UTF-8, count beyond the bytes left).
    public static let malformedFrame = ErrorCode(rawValue: 1000)
    /// The frame's message type byte is not defined in the negotiated version.
    public static let unknownMessageType = ErrorCode(rawValue: 1001)
    /// No protocol version in the client's range is supported (or the Hello magic is wrong).
    public static let unsupportedProtocolVersion = ErrorCode(rawValue: 1002)
    /// A compressed body is not a valid zlib stream (corrupt data, truncated stream,
    /// bytes after its end, unknown preset dictionary).
    public static let badCompression = ErrorCode(rawValue: 1003)
    /// A message other than Hello arrived before the handshake completed.
    public static let handshakeRequired = ErrorCode(rawValue: 1004)
    /// The client did not complete the handshake in time.
    public static let handshakeTimeout = ErrorCode(rawValue: 1005)
    /// The message is valid but not allowed in the connection's state or direction
    /// (a second Hello, a Snapshot sent by a client…).
    public static let unexpectedMessage = ErrorCode(rawValue: 1006)
    /// A compressed frame arrived before the handshake completed.
    public static let compressionNotAllowed = ErrorCode(rawValue: 1007)
    /// Nothing arrived from the peer for twice the Welcome's `heartbeatMilliseconds`:
    /// the path is presumed dead (a phone that lost its network sends no FIN).
    public static let heartbeatTimeout = ErrorCode(rawValue: 1008)

    // MARK: 2xxx — auth

    /// The server requires a token and the Hello carried none.
    public static let authRequired = ErrorCode(rawValue: 2000)
    /// The token is not valid (bad signature, wrong issuer, unparsable).
    public static let invalidToken = ErrorCode(rawValue: 2001)
    /// The token has expired.
    public static let tokenExpired = ErrorCode(rawValue: 2002)
    /// The token is valid but does not grant this operation or list.
    public static let forbidden = ErrorCode(rawValue: 2003)

    // MARK: 3xxx — limits

    /// A frame's length prefix exceeds the receiver's maximum frame size.
    public static let frameTooLarge = ErrorCode(rawValue: 3000)
    /// A compressed body inflates past the receiver's maximum inflated size.
    public static let inflatedTooLarge = ErrorCode(rawValue: 3001)
    /// Subscribing would exceed the lists allowed per connection.
    public static let tooManyLists = ErrorCode(rawValue: 3002)
    /// A Mutate carries more operations than allowed.
    public static let tooManyOps = ErrorCode(rawValue: 3003)
    /// An identifier (list name, section or row ID, client ID, kind) is too long.
    public static let idTooLong = ErrorCode(rawValue: 3004)
    /// A director limit (sections, rows, payload size) would be exceeded by a mutation.
    public static let limitExceeded = ErrorCode(rawValue: 3005)
    /// A message holds more elements (sections, rows, changes, stages, entries) than allowed.
    public static let tooManyElements = ErrorCode(rawValue: 3006)
    /// A payload, header, footer, token or text field is too large.
    public static let payloadTooLarge = ErrorCode(rawValue: 3007)
    /// The client sends faster than its budget allows.
    public static let rateLimited = ErrorCode(rawValue: 3008)
    /// The connection's outbound queue passed its hard limit (or its soft limit for too long).
    public static let slowConsumer = ErrorCode(rawValue: 3009)
    /// A write to the client did not complete before the write deadline.
    public static let writeTimeout = ErrorCode(rawValue: 3010)

    // MARK: 4xxx — mutations, conflicts, ordering, subscriptions

    /// An index or index path does not exist (``MutationError/Reason/indexOutOfRange``).
    public static let indexOutOfRange = ErrorCode(rawValue: 4000)
    /// An ID is already used (``MutationError/Reason/duplicateID``).
    public static let duplicateID = ErrorCode(rawValue: 4001)
    /// No section has the ID (``MutationError/Reason/unknownSection``).
    public static let unknownSection = ErrorCode(rawValue: 4002)
    /// No row has the ID (``MutationError/Reason/unknownRow``).
    public static let unknownRow = ErrorCode(rawValue: 4003)
    /// An ID is empty or otherwise invalid (``MutationError/Reason/invalidID``).
    public static let invalidID = ErrorCode(rawValue: 4004)
    /// The mutation's intention cannot survive a concurrent edit (its target was removed
    /// or moved by a batch committed after its base version).
    public static let conflict = ErrorCode(rawValue: 4010)
    /// The base version is older than the server's history, or of another epoch.
    public static let staleBaseVersion = ErrorCode(rawValue: 4011)
    /// No list has that name.
    public static let unknownList = ErrorCode(rawValue: 4012)
    /// The connection already has a subscription to that list.
    public static let alreadySubscribed = ErrorCode(rawValue: 4013)
    /// The connection has no subscription to that list.
    public static let notSubscribed = ErrorCode(rawValue: 4014)

    // MARK: 5xxx — server state

    /// The server is shutting down; reconnect after a pause.
    public static let serverShuttingDown = ErrorCode(rawValue: 5000)
    /// The server is draining connections (a deploy); reconnect, possibly elsewhere.
    public static let serverDraining = ErrorCode(rawValue: 5001)
    /// The server failed internally (a bug or a storage error); the request may be retried later.
    public static let internalError = ErrorCode(rawValue: 5002)
    /// The server is over capacity (connections, memory).
    public static let overloaded = ErrorCode(rawValue: 5003)
    /// A backup was not taken: its directory is not absolute, not empty, or inside the
    /// data directory, or a write failed (the message says which). Nothing in the server
    /// changed; fix the cause and ask again.
    public static let backupRefused = ErrorCode(rawValue: 5004)

    /// Every code this build knows, in numeric order.
    public static let allKnown: [ErrorCode] = [
        .malformedFrame, .unknownMessageType, .unsupportedProtocolVersion, .badCompression,
        .handshakeRequired, .handshakeTimeout, .unexpectedMessage, .compressionNotAllowed, .heartbeatTimeout,
        .authRequired, .invalidToken, .tokenExpired, .forbidden,
        .frameTooLarge, .inflatedTooLarge, .tooManyLists, .tooManyOps, .idTooLong, .limitExceeded,
        .tooManyElements, .payloadTooLarge, .rateLimited, .slowConsumer, .writeTimeout,
        .indexOutOfRange, .duplicateID, .unknownSection, .unknownRow, .invalidID, .conflict,
        .staleBaseVersion, .unknownList, .alreadySubscribed, .notSubscribed,
        .serverShuttingDown, .serverDraining, .internalError, .overloaded, .backupRefused,
    ]

    /// A short stable name (used in logs, metrics and the spec), or `code-N` when unknown.
    public var name: String {
        switch rawValue {
        case 1000: return "malformed-frame"
        case 1001: return "unknown-message-type"
        case 1002: return "unsupported-protocol-version"
        case 1003: return "bad-compression"
        case 1004: return "handshake-required"
        case 1005: return "handshake-timeout"
        case 1006: return "unexpected-message"
        case 1007: return "compression-not-allowed"
        case 1008: return "heartbeat-timeout"
        case 2000: return "auth-required"
        case 2001: return "invalid-token"
        case 2002: return "token-expired"
        case 2003: return "forbidden"
        case 3000: return "frame-too-large"
        case 3001: return "inflated-too-large"
        case 3002: return "too-many-lists"
        case 3003: return "too-many-ops"
        case 3004: return "id-too-long"
        case 3005: return "limit-exceeded"
        case 3006: return "too-many-elements"
        case 3007: return "payload-too-large"
        case 3008: return "rate-limited"
        case 3009: return "slow-consumer"
        case 3010: return "write-timeout"
        case 4000: return "index-out-of-range"
        case 4001: return "duplicate-id"
        case 4002: return "unknown-section"
        case 4003: return "unknown-row"
        case 4004: return "invalid-id"
        case 4010: return "conflict"
        case 4011: return "stale-base-version"
        case 4012: return "unknown-list"
        case 4013: return "already-subscribed"
        case 4014: return "not-subscribed"
        case 5000: return "server-shutting-down"
        case 5001: return "server-draining"
        case 5002: return "internal-error"
        case 5003: return "overloaded"
        case 5004: return "backup-refused"
        default: return "code-\(rawValue)"
        }
    }

    /// What a client should do when it receives this code.
    ///
    /// Why these choices: protocol and limit errors are bugs or misconfiguration that a
    /// retry would repeat (give up); auth errors are fixed by a new token; mutation
    /// errors mean the writer's view of the list is behind the server's, so it must
    /// catch up before deciding whether the edit still makes sense (resync); server
    /// state errors pass with time (back off). Back-off delays are defaults; the server
    /// may send another in ``ErrorMessage/reaction``.
    public var reaction: ClientReaction {
        switch self {
        case .handshakeTimeout, .heartbeatTimeout: return .retry
        case .rateLimited: return .backoff(milliseconds: 1_000)
        case .slowConsumer, .writeTimeout: return .backoff(milliseconds: 1_000)
        case .duplicateID, .invalidID: return .giveUp
        case .unknownList, .alreadySubscribed, .notSubscribed: return .giveUp
        case .forbidden: return .giveUp
        case .serverDraining: return .retry
        case .serverShuttingDown: return .backoff(milliseconds: 1_000)
        case .internalError: return .backoff(milliseconds: 1_000)
        case .overloaded: return .backoff(milliseconds: 5_000)
        case .backupRefused: return .giveUp
        default:
            switch rawValue {
            case 2000..<3000: return .refreshToken
            case 4000..<5000: return .resync
            case 5000..<6000: return .backoff(milliseconds: 1_000)
            default: return .giveUp
            }
        }
    }

    public var description: String { "\(rawValue) \(name)" }
}
