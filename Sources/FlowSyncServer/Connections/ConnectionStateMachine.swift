import FlowSyncCore
import FlowSyncProtocol

/// The lifecycle of one client connection, as a pure state machine: awaiting Hello →
/// verifying its token → ready → closing. The I/O shell (``Connection`` driven by
/// ``Server``) feeds it events and carries out the returned action; it decides no
/// protocol question itself.
///
/// **State in the state** (swift-nio-http2's `ConnectionStateMachine`): each case carries
/// the data that only means something in it — the handshake deadline while waiting for
/// Hello, the client's identity and grant once ready, the time and reason of the close
/// once closing. One exception, measured (issue #20): the ready state's subscriptions
/// and their ``SubscriptionFlow``s are a stored property beside the enum, emptied by
/// every move out of ready, so that the fan-out changes a flow in place; a closing
/// connection still has no subscriptions. The shell keeps only the socket and its
/// outbound queue.
///
/// **Work the machine cannot do is an action answered by an event**: it never verifies a
/// token or reads a clock. ``Action/verifyToken(_:)`` is answered by
/// ``tokenVerified(_:now:)``; ``Action/subscribe(_:)`` by ``subscriptionStarted(_:flow:)``
/// or ``listNotFound(_:)``; the loop time and the token clock come in as arguments.
struct ConnectionStateMachine {
    /// What the machine is configured with (from `[limits]` and `[auth]`).
    struct Configuration: Equatable {
        var maxListsPerConnection: Int
        var maxListNameBytes: Int
        /// Whether Hello and RefreshToken tokens are verified (`false` with
        /// `[auth] mode = "off"`: every client gets ``AccessGrant/unrestricted``).
        var verifiesTokens: Bool
        /// The heartbeat announced in the Welcome (`[limits] heartbeat_ms`, issue #19), 0
        /// for none: a ready peer silent for twice this is closed with
        /// `heartbeat-timeout` (a phone that lost its network sends no FIN).
        var heartbeatMilliseconds: UInt64 = 0
    }

    /// Protocol versions this server speaks.
    static let supportedVersions: ClosedRange<UInt16> = 1...1

    private var state: State
    /// The ready state's subscriptions with their flows. The one part of the ready
    /// state kept beside the enum instead of in its payload, for the fan-out (issue
    /// #20): changing a flow in the payload meant taking the whole `Ready` out of the
    /// enum and back per subscriber per batch — a copy of the session, its grant and the
    /// table, with a retain and a release of each of their references, which `perf`
    /// showed at about 5 % of the daemon's time. It follows the ready state exactly:
    /// empty until it, emptied when it ends (``close(_:_:now:)``, ``peerClosed(now:)``),
    /// so a closing connection still has no subscription.
    private var subscriptions = SubscriptionTable()
    /// Whether the state is closing, kept with each move to closing: asked once or twice
    /// per delivery, and testing the enum's case copied the whole state each time
    /// (another `memcpy` in the profile).
    private(set) var isClosing = false
    /// The configuration; a reload changes it for the machines of new connections only.
    let configuration: Configuration

    /// A connection accepted at loop time `now` (ms) that must say Hello within
    /// `handshakeTimeout` ms.
    init(now: UInt64, handshakeTimeout: UInt64, configuration: Configuration) {
        state = .awaitingHello(AwaitingHello(deadline: now + handshakeTimeout))
        self.configuration = configuration
    }

    // MARK: Reading the state

    /// The session, once the handshake completed (not while closing).
    var session: Session? {
        if case .ready(let ready) = state { return ready.session }
        return nil
    }

    var isReady: Bool { session != nil }

    /// Whether the handshake has not completed yet (the server caps such connections).
    var isHandshaking: Bool {
        switch state {
        case .awaitingHello, .verifyingHello: return true
        case .ready, .closing: return false
        case .modifying: preconditionFailure("Internal inconsistency in ConnectionStateMachine: read while modifying")
        }
    }

    /// When and why the close began, once closing.
    var closing: Closing? {
        if case .closing(let closing) = state { return closing }
        return nil
    }

    /// The flow of the subscription to `list`, if subscribed.
    func flow(of list: String) -> SubscriptionFlow? {
        subscriptions[list]
    }

    /// The lists this connection subscribes to (none unless ready).
    var subscribedLists: [String] {
        subscriptions.names
    }

    /// The lists whose subscription is lagging (waiting for a catch-up).
    var laggingLists: [String] {
        subscriptions.names(where: { $0.state == .lagging })
    }

    // MARK: Events

    /// The transport authenticated the client before its Hello: a verified client
    /// certificate mapped to a principal (`[[tls.principals]]`, issue #32). The Hello
    /// then needs no token and the connection gets `grant`. Only while awaiting Hello (the
    /// TLS handshake completes before any frame can be read); ignored once closing.
    mutating func transportAuthenticated(_ grant: AccessGrant) {
        switch state {
        case .awaitingHello(var awaiting):
            awaiting.transportGrant = grant
            state = .awaitingHello(awaiting)
        case .closing:
            return
        case .verifyingHello, .ready, .modifying:
            preconditionFailure(
                "Internal inconsistency in ConnectionStateMachine: a transport authenticated after the Hello")
        }
    }

    /// A message arrived at loop time `now` (ms).
    mutating func receivedMessage(_ message: Message, now: UInt64) -> Action {
        switch state {
        case .closing:
            return .none
        case .verifyingHello:
            preconditionFailure(
                "Internal inconsistency in ConnectionStateMachine: a message arrived while the Hello's token was being verified"
            )
        case .modifying:
            preconditionFailure("Internal inconsistency in ConnectionStateMachine: a message arrived while modifying")
        case .awaitingHello(let awaiting):
            guard case .hello(let hello) = message else {
                return close(.handshakeRequired, "the first message must be Hello, got \(message.type)", now: now)
            }
            let low = max(hello.minVersion, Self.supportedVersions.lowerBound)
            let high = min(hello.maxVersion, Self.supportedVersions.upperBound)
            guard low <= high else {
                return close(
                    .unsupportedProtocolVersion,
                    "client speaks \(hello.minVersion)…\(hello.maxVersion), server \(Self.supportedVersions.lowerBound)…\(Self.supportedVersions.upperBound)",
                    now: now)
            }
            guard !hello.clientID.isEmpty else {
                return close(
                    .malformedFrame, "Hello needs a non-empty client ID (it makes retried writes idempotent)", now: now)
            }
            var session = Session(clientID: hello.clientID, clientName: hello.clientName, protocolVersion: high)
            if let grant = awaiting.transportGrant {
                // Authenticated by its certificate (mTLS): the token, if any, is not used.
                session.grant = grant
                session.isTransportAuthenticated = true
                state = .ready(Ready(session: session, lastReceivedAt: now))
                return .welcome(version: high)
            }
            guard configuration.verifiesTokens else {
                state = .ready(Ready(session: session, lastReceivedAt: now))
                return .welcome(version: high)
            }
            // Verified before any claim is used (TokenVerifier's order of checks).
            state = .verifyingHello(VerifyingHello(deadline: awaiting.deadline, session: session))
            return .verifyToken(hello.authToken)
        case .ready:
            let configuration = configuration
            let action =
                withReady { ready, subscriptions in
                    Self.receivedWhenReady(message, &ready, &subscriptions, configuration)
                } ?? .none
            // A protocol violation ends the ready state (and its subscriptions) here.
            if case .close(let error, _) = action { return close(error.code, error.message, now: now) }
            return action
        }
    }

    /// The token of the Hello or of a RefreshToken was verified (the answer to
    /// ``Action/verifyToken(_:)``).
    mutating func tokenVerified(_ result: Result<AccessGrant, TokenVerifier.Rejection>, now: UInt64) -> Action {
        switch state {
        case .verifyingHello(var verifying):
            switch result {
            case .failure(let rejection):
                return close(rejection.code, rejection.message, now: now)
            case .success(let grant):
                verifying.session.grant = grant
                state = .ready(Ready(session: verifying.session, lastReceivedAt: now))
                return .welcome(version: verifying.session.protocolVersion)
            }
        case .ready(let ready) where ready.refreshing:
            // In-band refresh: verified exactly like a Hello's token. A bad one ends the
            // connection (reaction "refresh token": the client reconnects).
            switch result {
            case .failure(let rejection):
                return close(rejection.code, "refresh refused: \(rejection.message)", now: now)
            case .success(let grant):
                guard grant.subject == ready.session.grant.subject else {
                    return close(
                        .forbidden,
                        "a refreshed token must have the same sub (\"\(grant.subject)\" is not \"\(ready.session.grant.subject)\")",
                        now: now)
                }
                return withReady { ready, subscriptions in
                    ready.refreshing = false
                    let dropped = subscriptions.names.filter { !grant.mayRead($0) }.sorted()
                    for name in dropped { subscriptions[name] = nil }
                    ready.session.grant = grant
                    return .refreshed(dropped: dropped)
                }!
            }
        case .closing:
            return .none
        case .awaitingHello, .ready, .modifying:
            preconditionFailure(
                "Internal inconsistency in ConnectionStateMachine: a token verified that nobody asked for")
        }
    }

    /// The list of a ``Action/subscribe(_:)`` is hosted: the subscription starts with
    /// `flow`. Returns its slot (``SubscriptionTable``): the list's subscriber entry
    /// keeps it for ``updateFlow(inSlot:of:_:)``, valid until the subscription ends.
    @discardableResult
    mutating func subscriptionStarted(_ list: String, flow: SubscriptionFlow) -> Int {
        let slot: Int? = withReady { _, subscriptions in
            precondition(
                subscriptions[list] == nil,
                "Internal inconsistency in ConnectionStateMachine: \"\(list)\" subscribed twice")
            return subscriptions.insert(flow, for: list)
        }
        guard let slot else {
            preconditionFailure(
                "Internal inconsistency in ConnectionStateMachine: a subscription started on a connection that is not ready"
            )
        }
        return slot
    }

    /// The list of a ``Action/subscribe(_:)`` is not hosted (and may not be created):
    /// no subscription; the client gets a non-fatal `unknownList`.
    mutating func listNotFound(_ list: String) -> Action {
        guard isReady else { return .none }
        return .sendError(
            ErrorMessage(code: .unknownList, message: "no list \"\(list)\"", listName: list, closesConnection: false))
    }

    /// Changes the flow of the subscription to `list` in place; `nil` when not subscribed.
    mutating func updateFlow<R>(of list: String, _ body: (inout SubscriptionFlow) -> R) -> R? {
        guard let slot = subscriptions.slot(of: list) else { return nil }
        return subscriptions.updateFlow(inSlot: slot, of: list, body)
    }

    /// Changes the flow in `slot` (returned by ``subscriptionStarted(_:flow:)`` for
    /// `list`) in place: the fan-out's path, no lookup by name. `nil` when the
    /// connection is not ready (closing: its subscriptions ended with the ready state).
    /// - Precondition: the subscription of that slot has not ended (its list's entry is
    ///   dropped when it ends); debug builds check that the slot still holds `list`.
    /// - Complexity: O(1).
    @inline(__always)
    mutating func updateFlow<R>(inSlot slot: Int, of list: String, _ body: (inout SubscriptionFlow) -> R) -> R? {
        // Only a ready machine has subscriptions, and closing is the only way out of
        // ready: a slot handed out is valid unless the machine is closing.
        guard !isClosing else { return nil }
        return subscriptions.updateFlow(inSlot: slot, of: list, body)
    }

    /// The decoder refused the byte stream: the connection cannot be resynchronised.
    mutating func decodeFailed(_ error: ProtocolError, now: UInt64) -> Action {
        close(error.code, error.message, now: now)
    }

    /// Called periodically with the loop time (ms) and, when tokens are verified, the
    /// token clock (seconds since 1970, ``TokenVerifier/now``) for the grant's expiry.
    mutating func tick(now: UInt64, tokenClock: Double?) -> Action {
        switch state {
        case .awaitingHello(let awaiting) where now >= awaiting.deadline:
            return close(.handshakeTimeout, "no Hello within the handshake timeout", now: now)
        case .verifyingHello(let verifying) where now >= verifying.deadline:
            // The handshake's deadline holds while its token is checked, too.
            return close(.handshakeTimeout, "no Hello within the handshake timeout", now: now)
        case .ready(let ready):
            if let expiresAt = ready.session.grant.expiresAt, let tokenClock, tokenClock >= expiresAt {
                // Reaction "refresh token": the SDK fetches a new token and reconnects.
                return close(.tokenExpired, "the token expired", now: now)
            }
            let heartbeat = configuration.heartbeatMilliseconds
            if heartbeat > 0, now &- ready.lastReceivedAt > 2 * heartbeat {
                return close(
                    .heartbeatTimeout,
                    "nothing received for \(now &- ready.lastReceivedAt) ms (heartbeat \(heartbeat) ms)", now: now)
            }
            return .none
        default:
            return .none
        }
    }

    /// The peer sent bytes at loop time `now` (any bytes: a Ping, a write, a partial
    /// frame). Only the ready state keeps it; the handshake has its own deadline.
    mutating func bytesReceived(now: UInt64) {
        guard case .ready(var ready) = state else { return }
        state = .modifying
        ready.lastReceivedAt = now
        state = .ready(ready)
    }

    /// The server closes this connection for a reason of its own (slow consumer,
    /// shutdown): ``Action/close(_:leaving:)``, or ``Action/none`` when already closing.
    mutating func serverCloses(_ code: ErrorCode, _ message: String, now: UInt64) -> Action {
        close(code, message, now: now)
    }

    /// The peer went away at loop time `now`; nothing more is sent. Returns the lists to
    /// leave (none when the server had already closed it).
    mutating func peerClosed(now: UInt64) -> [String] {
        if case .closing = state { return [] }
        let leaving = subscribedLists
        state = .closing(Closing(since: now, reason: nil))
        subscriptions = SubscriptionTable()
        isClosing = true
        return leaving
    }

    // MARK: Helpers

    /// A message on a ready connection. Static: it runs inside ``withReady(_:)``, which
    /// holds `self` exclusively.
    private static func receivedWhenReady(
        _ message: Message, _ ready: inout Ready, _ subscriptions: inout SubscriptionTable,
        _ configuration: Configuration
    ) -> Action {
        switch message {
        case .subscribe(let request):
            if let problem = checkListName(request.listName, configuration) { return .sendError(problem) }
            // Deny by default, and before anything else is learnt about the list.
            guard ready.session.grant.mayRead(request.listName) else {
                return .sendError(
                    ErrorMessage(
                        code: .forbidden, message: "the token does not grant reading \"\(request.listName)\"",
                        listName: request.listName, closesConnection: false))
            }
            if subscriptions[request.listName] != nil {
                return .sendError(
                    ErrorMessage(
                        code: .alreadySubscribed, message: "already subscribed to \"\(request.listName)\"",
                        listName: request.listName, closesConnection: false))
            }
            if subscriptions.count >= configuration.maxListsPerConnection {
                return .sendError(
                    ErrorMessage(
                        code: .tooManyLists,
                        message: "at most \(configuration.maxListsPerConnection) lists per connection",
                        listName: request.listName, closesConnection: false))
            }
            // Recorded when the shell answers with subscriptionStarted (with its flow).
            return .subscribe(request)
        case .unsubscribe(let request):
            guard subscriptions.removeValue(forKey: request.listName) != nil else {
                return .sendError(
                    ErrorMessage(
                        code: .notSubscribed, message: "not subscribed to \"\(request.listName)\"",
                        listName: request.listName, closesConnection: false))
            }
            return .unsubscribe(listName: request.listName)
        case .mutate(let mutate):
            if let problem = checkListName(mutate.listName, configuration) { return .sendError(problem) }
            guard mutate.clientID == ready.session.clientID else {
                return .sendError(
                    ErrorMessage(
                        code: .forbidden,
                        message:
                            "mutation client ID \"\(mutate.clientID)\" differs from the handshake's \"\(ready.session.clientID)\"",
                        listName: mutate.listName, closesConnection: false))
            }
            guard ready.session.grant.mayWrite(mutate.listName) else {
                // A Reject (not an Error) so the writer learns which write failed.
                return .reject(
                    Reject(
                        listName: mutate.listName, seq: mutate.seq, code: .forbidden,
                        message: "the token does not grant writing \"\(mutate.listName)\""))
            }
            return .mutate(mutate)
        case .ping(let ping):
            return .pong(nonce: ping.nonce)
        case .pong:
            return .none
        case .refreshToken(let refresh):
            // Auth off, or a certificate's grant (it lasts as long as the certificate):
            // nothing to refresh.
            guard configuration.verifiesTokens, !ready.session.isTransportAuthenticated else { return .none }
            ready.refreshing = true
            return .verifyToken(refresh.token)
        case .statsRequest(let request):
            if let name = request.listName, !ready.session.grant.mayRead(name) {
                return .sendError(
                    ErrorMessage(
                        code: .forbidden, message: "the token does not grant reading \"\(name)\"", listName: name,
                        closesConnection: false))
            }
            return .stats(request, grant: ready.session.grant)
        case .backupRequest(let request):
            // A backup holds every list, including lists created later: only a grant
            // that reads every list may take one (docs/SECURITY.md).
            guard ready.session.grant.read.contains(where: { $0.description == "*" }) else {
                return .sendBackupReply(
                    BackupReply(
                        requestID: request.requestID, failure: .forbidden,
                        message: "a backup needs a token that may read every list (read: [\"*\"])"))
            }
            return .backup(request)
        case .hello:
            return .close(ErrorMessage(code: .unexpectedMessage, message: "Hello after the handshake"), leaving: [])
        case .welcome, .snapshot, .diff, .ack, .reject, .notice, .statsReply, .backupReply, .error:
            return .close(
                ErrorMessage(code: .unexpectedMessage, message: "\(message.type) is sent by servers, not clients"),
                leaving: [])
        }
    }

    /// Runs `body` on the ready state's payload, taken out of the enum first so it is
    /// changed in place (see ``State/modifying``); `nil` when not ready.
    private mutating func withReady<R>(_ body: (inout Ready, inout SubscriptionTable) -> R) -> R? {
        guard case .ready(var ready) = state else { return nil }
        state = .modifying
        let result = body(&ready, &subscriptions)
        state = .ready(ready)
        return result
    }

    /// Moves to closing: the subscriptions end with the ready state that held them.
    private mutating func close(_ code: ErrorCode, _ message: String, now: UInt64) -> Action {
        if case .closing = state { return .none }
        let leaving = subscribedLists
        state = .closing(Closing(since: now, reason: code))
        subscriptions = SubscriptionTable()
        isClosing = true
        return .close(ErrorMessage(code: code, message: message), leaving: leaving)
    }

    private static func checkListName(_ name: String, _ configuration: Configuration) -> ErrorMessage? {
        if name.isEmpty || name.utf8.count > configuration.maxListNameBytes {
            return ErrorMessage(
                code: .limitExceeded, message: "list name must be 1…\(configuration.maxListNameBytes) bytes",
                listName: name, closesConnection: false)
        }
        return nil
    }
}
