/// A refusal the gateway decides itself, before or without the daemon: an HTTP request's
/// (``RequestError``) or a WebSocket message's (``WebSocketError``). Each is a catalog
/// name with an HTTP status, and reaches the client one way: ``problem``, an RFC 9457
/// document (docs/GATEWAY.md, "Errors"). The daemon's own refusals keep their error-code
/// names and numbers (``Problem/daemon(code:message:)``).
///
/// One protocol so that the two catalogs share the mapping to a problem document and to a
/// WebSocket close, instead of each spelling it out.
public protocol GatewayRefusal: Error, Sendable {
    /// The catalog name: `urn:flowsync:problem:NAME`.
    var name: String { get }
    /// The HTTP status of the answer (also carried in a WebSocket `error`'s problem).
    var status: Int { get }
    /// A human-readable detail.
    var detail: String { get }
    /// The close that follows the `error` on a WebSocket, if this refusal ends the socket
    /// (nil: the socket stays open).
    var closeReason: WebSocketCloseReason? { get }
}

extension GatewayRefusal {
    /// The refusal as a problem document (no daemon `code`: the gateway decided).
    public var problem: Problem {
        Problem(status: status, name: name, title: Problem.title(name), detail: detail, code: nil)
    }

    public var closeReason: WebSocketCloseReason? { nil }
}

extension RequestError: GatewayRefusal {
    public var name: String { kind.rawValue }
}

extension WebSocketError: GatewayRefusal {
    public var name: String { kind.rawValue }

    /// Only an oversized message ends the socket (1009): the stream cannot resynchronise
    /// after a message it did not read whole.
    public var closeReason: WebSocketCloseReason? { kind == .messageTooLarge ? .messageTooLarge : nil }
}
