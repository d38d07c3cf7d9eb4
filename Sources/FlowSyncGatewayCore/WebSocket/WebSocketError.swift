/// The WebSocket's own refusals, beside the HTTP API's (``RequestError``) and the
/// daemon's (``Problem/daemon(code:message:)``): each becomes the `problem` of an `error`
/// or `reject` message (docs/GATEWAY.md, "WebSocket errors"), and ``closeReason`` says
/// whether the socket closes after it (``GatewayRefusal``). A struct over a kind, so
/// kinds can be added (STYLE.md rule 10).
public struct WebSocketError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What was wrong, with the reaction the client should take.
    public enum Kind: String, Hashable, Sendable, CaseIterable {
        /// A message over `maxMessageBytes` (413; the socket is closed with 1009). Give up.
        case messageTooLarge = "message-too-large"
        /// A binary frame: messages are JSON text (400). Fix the client.
        case binaryMessage = "binary-message"
        /// A `type` the gateway does not know (400). Fix the client.
        case unknownType = "unknown-type"
        /// `auth` after another message (400): the token is fixed by the first message.
        case authNotFirst = "auth-not-first"
        /// More lists than `maxSubscriptions` (429). Unsubscribe from one first.
        case tooManySubscriptions = "too-many-subscriptions"
        /// `subscribe` to a list this socket already follows (409). Nothing to do.
        case alreadySubscribed = "already-subscribed"
        /// `unsubscribe` from a list this socket does not follow (404). Nothing to do.
        case notSubscribed = "not-subscribed"
        /// More writes in flight than `maxWritesInFlight` (429). Retry with the same `id`.
        case tooManyWrites = "too-many-writes"
    }

    /// What was wrong.
    public let kind: Kind
    /// A human-readable detail.
    public let detail: String

    /// A refusal of `kind`.
    public init(_ kind: Kind, _ detail: String) {
        self.kind = kind
        self.detail = detail
    }

    /// The status the problem document carries (as an HTTP answer would).
    public var status: Int {
        switch kind {
        case .messageTooLarge: return 413
        case .binaryMessage, .unknownType, .authNotFirst: return 400
        case .tooManySubscriptions, .tooManyWrites: return 429
        case .alreadySubscribed: return 409
        case .notSubscribed: return 404
        }
    }

    public var description: String { "\(kind.rawValue): \(detail)" }
}
