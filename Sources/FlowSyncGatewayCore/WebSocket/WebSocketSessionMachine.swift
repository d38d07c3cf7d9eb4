import FlowSyncCore
import FlowSyncProtocol

/// One browser's WebSocket session, as decisions without a socket (STYLE.md rule 2): the
/// Hummingbird handler feeds it events and carries out the actions it returns.
///
/// ```
///          receivedText/Binary, subscriptionRefused, writeAnswered, enqueue, dequeued
///        ┌───────┐
///        ▼       │
///     ┌──────┐───┘   sendThenClose, tooSlow, daemonLinkLost   ┌────────┐
///     │ open │ ────────────────────────────────────────────▶ │ closed │
///     └──────┘                                                └────────┘
/// ```
///
/// Rules:
/// 1. The token is fixed by the first message: `auth` there, or the upgrade request's
///    `Authorization` header; an `auth` later is refused (`auth-not-first`). It is passed
///    to the daemon unchanged; the daemon decides.
/// 2. A socket follows at most `maxSubscriptions` lists, and has at most
///    `maxWritesInFlight` writes waiting for the daemon. Past either the message is
///    refused and the socket stays open: one bad message costs one `error`.
/// 3. Every message queued toward the browser passes ``enqueue(byteCount:)``, replies and
///    the daemon's batches alike. Past `maxQueuedMessages` or `maxQueuedBytes` the socket
///    is closed with 4008 and nothing more is queued: a slow browser costs bounded memory.
/// 4. A refused token (the daemon's 401) closes the socket with 4001: every later message
///    would be refused the same way. Other daemon refusals end only that subscription.
/// 5. When the subscription link to the daemon ends, the socket is closed with 4502 so the
///    browser resumes from its position; a write's own link failing is that write's reject.
///    A shared feed's link ending is that rule's too (every member is closed with 4502).
/// 6. A `subscribe` without `after` joins the shared feed of (list, token)
///    (``WebSocketFeedMachine``): one daemon subscription and one JSON encoding per
///    message for every such socket. A `subscribe` with `after` (a resume) keeps a
///    subscription of its own on the socket's link: the daemon answers it from its history
///    with the socket's own catch-up (a Diff from `after`, or a snapshot with its reason),
///    which a feed at another position cannot give.
///
/// Not guaranteed: the order of an `ack` and the `diff` carrying the same write.
public struct WebSocketSessionMachine: Sendable {
    /// What the handler must do.
    public enum Action: Sendable {
        /// Nothing.
        case none
        /// Queue this message toward the browser (through ``enqueue(byteCount:)``).
        case send([UInt8])
        /// Resume `list` from `after` on the socket's own subscription link, opening it
        /// with `token` first if none is open (rule 6).
        case subscribe(list: String, after: ListVersion?, token: String?)
        /// Join the shared feed of (`list`, `token`): a fresh subscribe (rule 6).
        case joinFeed(list: String, token: String?)
        /// End the subscription to `list`.
        case unsubscribe(list: String)
        /// Commit `body` on a link of its own with `mutationID`'s client ID, then answer
        /// with ``writeAnswered(list:id:result:)``.
        case mutate(list: String, id: String, mutationID: MutationID, body: MutationBody, token: String?)
        /// Queue this message, then close with this reason.
        case sendThenClose([UInt8], WebSocketCloseReason)
        /// Close with this reason.
        case close(WebSocketCloseReason)
    }

    /// What to do with a message about to be queued toward the browser.
    public enum QueueDecision: Hashable, Sendable {
        /// Queue it.
        case write
        /// Too slow: drop it and close with this reason (rule 3).
        case close(WebSocketCloseReason)
        /// The socket is closing: drop it.
        case drop
    }

    private struct Open: Sendable {
        var token: String?
        var acceptsAuth = true
        var subscriptions: Set<String> = []
        var writesInFlight = 0
        var queuedMessages = 0
        var queuedBytes = 0
    }

    private enum State: Sendable {
        case open(Open)
        case closed(WebSocketCloseReason?)
    }

    private var state: State
    private let limits: GatewayLimits
    private let webSocket: WebSocketLimits

    /// A session whose upgrade request carried `headerToken` (nil: none).
    public init(headerToken: String?, limits: GatewayLimits, webSocket: WebSocketLimits) {
        self.state = .open(Open(token: headerToken))
        self.limits = limits
        self.webSocket = webSocket
    }

    /// Lists this socket follows (for tests and metrics).
    public var subscriptions: Set<String> {
        if case .open(let open) = state { return open.subscriptions }
        return []
    }

    /// Messages queued toward the browser and not yet written.
    public var queuedMessages: Int {
        if case .open(let open) = state { return open.queuedMessages }
        return 0
    }

    /// Why the socket was closed, once it is.
    public var closeReason: WebSocketCloseReason? {
        if case .closed(let reason) = state { return reason }
        return nil
    }

    /// A text message arrived.
    public mutating func receivedText(_ bytes: [UInt8]) -> Action {
        guard case .open(var open) = state else { return .none }
        let wasFirst = open.acceptsAuth
        open.acceptsAuth = false
        defer { if case .open = state { state = .open(open) } }
        let message: WebSocketClientMessage
        do {
            message = try WebSocketClientMessage.decode(bytes, limits: limits, webSocket: webSocket)
        } catch {
            let reply = WebSocketServerMessage.error(list: error.list, id: error.id, problem: error.problem)
            if let reason = error.closeReason {
                state = .closed(reason)
                return .sendThenClose(reply, reason)
            }
            return .send(reply)
        }
        switch message {
        case .auth(let token):
            guard wasFirst else {
                return .send(
                    WebSocketServerMessage.error(
                        list: nil, id: nil,
                        problem: WebSocketError(.authNotFirst, "auth must be the first message").problem))
            }
            open.token = token
            return .none
        case .subscribe(let list, let after):
            guard !open.subscriptions.contains(list) else {
                return .send(
                    WebSocketServerMessage.error(
                        list: list, id: nil,
                        problem: WebSocketError(.alreadySubscribed, "this socket already follows \(list)").problem))
            }
            guard open.subscriptions.count < webSocket.maxSubscriptions else {
                return .send(
                    WebSocketServerMessage.error(
                        list: list, id: nil,
                        problem: WebSocketError(
                            .tooManySubscriptions, "at most \(webSocket.maxSubscriptions) lists per socket"
                        ).problem))
            }
            open.subscriptions.insert(list)
            guard let after else { return .joinFeed(list: list, token: open.token) }
            return .subscribe(list: list, after: after, token: open.token)
        case .unsubscribe(let list):
            guard open.subscriptions.remove(list) != nil else {
                return .send(
                    WebSocketServerMessage.error(
                        list: list, id: nil,
                        problem: WebSocketError(.notSubscribed, "this socket does not follow \(list)").problem))
            }
            return .unsubscribe(list: list)
        case .mutate(let list, let id, let body):
            guard open.writesInFlight < webSocket.maxWritesInFlight else {
                return .send(
                    WebSocketServerMessage.reject(
                        list: list, id: id,
                        problem: WebSocketError(
                            .tooManyWrites, "at most \(webSocket.maxWritesInFlight) writes in flight"
                        ).problem))
            }
            let mutationID: MutationID
            do {
                mutationID = try IdempotencyKey.mutationID(
                    key: id, scope: IdempotencyKey.subject(ofBearerToken: open.token))
            } catch {
                // decode() checked the key already; kept total rather than trapping.
                return .send(WebSocketServerMessage.reject(list: list, id: id, problem: Problem(error)))
            }
            open.writesInFlight += 1
            return .mutate(list: list, id: id, mutationID: mutationID, body: body, token: open.token)
        }
    }

    /// A binary message arrived: refused, the socket stays open.
    public mutating func receivedBinary() -> Action {
        guard case .open(var open) = state else { return .none }
        open.acceptsAuth = false
        state = .open(open)
        return .send(
            WebSocketServerMessage.error(
                list: nil, id: nil,
                problem: WebSocketError(.binaryMessage, "messages are JSON text; this was binary").problem))
    }

    /// The inbound stream refused a message over `maxMessageBytes` before it was whole.
    public mutating func receivedOversizedMessage() -> Action {
        guard case .open = state else { return .none }
        let refusal = WebSocketError(.messageTooLarge, "at most \(webSocket.maxMessageBytes) bytes")
        guard let reason = refusal.closeReason else {
            preconditionFailure("Internal inconsistency in WebSocketSessionMachine: message-too-large closes no socket")
        }
        state = .closed(reason)
        return .sendThenClose(WebSocketServerMessage.error(list: nil, id: nil, problem: refusal.problem), reason)
    }

    /// The daemon refused or ended the subscription to `list` (or its link could not be
    /// opened): rule 4.
    public mutating func subscriptionRefused(list: String, problem: Problem) -> Action {
        guard case .open(var open) = state else { return .none }
        open.subscriptions.remove(list)
        let reply = WebSocketServerMessage.error(list: list, id: nil, problem: problem)
        if problem.status == 401 {
            state = .closed(.unauthorized)
            return .sendThenClose(reply, .unauthorized)
        }
        state = .open(open)
        return .send(reply)
    }

    /// A write's answer came back.
    public mutating func writeAnswered(list: String, id: String, result: Result<ListVersion, Problem>) -> Action {
        guard case .open(var open) = state else { return .none }
        precondition(open.writesInFlight > 0, "Internal inconsistency in WebSocketSessionMachine: an unasked answer")
        open.writesInFlight -= 1
        state = .open(open)
        switch result {
        case .success(let version): return .send(WebSocketServerMessage.ack(list: list, id: id, committed: version))
        case .failure(let problem): return .send(WebSocketServerMessage.reject(list: list, id: id, problem: problem))
        }
    }

    /// The subscription link ended (rule 5).
    public mutating func subscriptionLinkLost() -> Action {
        guard case .open(let open) = state else { return .none }
        guard !open.subscriptions.isEmpty else { return .none }
        state = .closed(.daemonLinkLost)
        return .close(.daemonLinkLost)
    }

    /// A message of `byteCount` bytes is about to be queued (rule 3).
    public mutating func enqueue(byteCount: Int) -> QueueDecision {
        guard case .open(var open) = state else { return .drop }
        guard open.queuedMessages < webSocket.maxQueuedMessages,
            open.queuedBytes + byteCount <= webSocket.maxQueuedBytes
        else {
            state = .closed(.tooSlow)
            return .close(.tooSlow)
        }
        open.queuedMessages += 1
        open.queuedBytes += byteCount
        state = .open(open)
        return .write
    }

    /// A queued message of `byteCount` bytes was handed to the socket.
    public mutating func dequeued(byteCount: Int) {
        guard case .open(var open) = state else { return }
        precondition(
            open.queuedMessages > 0 && open.queuedBytes >= byteCount,
            "Internal inconsistency in WebSocketSessionMachine: dequeued more than was queued")
        open.queuedMessages -= 1
        open.queuedBytes -= byteCount
        state = .open(open)
    }

    /// The socket ended (either side); later events do nothing.
    public mutating func closed() {
        if case .open = state { state = .closed(nil) }
    }
}
