import FlowSyncCore
import FlowSyncProtocol
import Foundation

/// A browser's message on the WebSocket (docs/GATEWAY.md, "WebSocket"): one JSON object
/// per text message, told apart by `type`.
///
/// ```
/// {"type":"auth","token":"<JWT>"}                              only as the first message
/// {"type":"subscribe","list":"inbox","after":"EPOCH:VERSION"?}
/// {"type":"unsubscribe","list":"inbox"}
/// {"type":"mutate","list":"inbox","id":"<idempotency key>","operations":[…],"base":{…}?}
/// ```
///
/// `operations` and `base` are the POST route's (``MutationBody``); `id` is its
/// `Idempotency-Key`, with the same rules and the same mapping to `(clientID, seq)`.
public enum WebSocketClientMessage: Sendable {
    /// The bearer token the daemon should judge (passed through, never verified here).
    case auth(token: String)
    /// Follow `list`: a snapshot, or the protocol's resume from `after`.
    case subscribe(list: String, after: ListVersion?)
    /// Stop following `list`.
    case unsubscribe(list: String)
    /// Apply `body` to `list` atomically; `id` makes a retry commit once.
    case mutate(list: String, id: String, body: MutationBody)

    /// Decodes one text message. Never traps: every malformed input is a
    /// ``WebSocketDecodingFailure`` carrying the message's `list` and `id` when they
    /// could be read, so the answer can name them.
    ///
    /// - Complexity: O(n) in the message's bytes; a message over `limits.maxMessageBytes`
    ///   is refused before parsing.
    public static func decode(
        _ bytes: [UInt8], limits: GatewayLimits, webSocket: WebSocketLimits
    ) throws(WebSocketDecodingFailure) -> WebSocketClientMessage {
        guard bytes.count <= webSocket.maxMessageBytes else {
            throw WebSocketDecodingFailure(
                WebSocketError(.messageTooLarge, "\(bytes.count) bytes, at most \(webSocket.maxMessageBytes)"))
        }
        let value: Any
        do {
            value = try JSONSerialization.jsonObject(with: Data(bytes), options: [])
        } catch {
            throw WebSocketDecodingFailure(RequestError(.malformedJSON, "the message is not JSON"))
        }
        guard let object = value as? [String: Any] else {
            throw WebSocketDecodingFailure(RequestError(.invalidRequest, ": a message is a JSON object"))
        }
        // Read for the answer before anything can fail, so even a refusal names them.
        let list = object["list"] as? String
        let id = object["id"] as? String
        do {
            let type = try JSONInput.string(object["type"], at: "/type")
            switch type {
            case "auth":
                return .auth(token: try JSONInput.string(object["token"], at: "/token"))
            case "subscribe":
                let name = try listName(object)
                let after = try JSONInput.optionalString(object["after"], at: "/after").map {
                    (text: String) throws(RequestError) -> ListVersion in try ListPosition.parse(text)
                }
                return .subscribe(list: name, after: after)
            case "unsubscribe":
                return .unsubscribe(list: try listName(object))
            case "mutate":
                let name = try listName(object)
                let key = try JSONInput.string(object["id"], at: "/id")
                // The key's rules are the Idempotency-Key header's: checked here, once.
                _ = try IdempotencyKey.mutationID(key: key, scope: "")
                return .mutate(list: name, id: key, body: try MutationBody.parse(object, limits: limits, at: ""))
            default:
                throw WebSocketDecodingFailure(
                    WebSocketError(.unknownType, "/type: one of auth, subscribe, unsubscribe, mutate"),
                    list: list, id: id)
            }
        } catch let error as RequestError {
            throw WebSocketDecodingFailure(error, list: list, id: id)
        } catch let failure as WebSocketDecodingFailure {
            throw failure
        } catch {
            preconditionFailure("Internal inconsistency in WebSocketClientMessage: unexpected \(error)")
        }
    }

    private static func listName(_ object: [String: Any]) throws(RequestError) -> String {
        let name = try JSONInput.string(object["list"], at: "/list")
        guard !name.isEmpty else { throw RequestError(.invalidRequest, "/list: a non-empty list name") }
        return name
    }
}

/// A message the gateway could not decode, with what it could read of it.
public struct WebSocketDecodingFailure: Error, Hashable, Sendable {
    /// Why, as the problem document the `error` message carries.
    public let problem: Problem
    /// The message's `list`, if it had a string one.
    public let list: String?
    /// The message's `id`, if it had a string one.
    public let id: String?
    /// The close after the answer, when the refusal ends the socket.
    public let closeReason: WebSocketCloseReason?

    /// A failure answered with `problem`; the socket stays open.
    public init(_ problem: Problem, list: String? = nil, id: String? = nil) {
        self.problem = problem
        self.list = list
        self.id = id
        self.closeReason = nil
    }

    /// A failure answered with `refusal`'s problem, and closed if the refusal says so.
    public init(_ refusal: some GatewayRefusal, list: String? = nil, id: String? = nil) {
        self.problem = refusal.problem
        self.list = list
        self.id = id
        self.closeReason = refusal.closeReason
    }
}
