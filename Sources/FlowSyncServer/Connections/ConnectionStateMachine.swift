import FlowSyncCore
import FlowSyncProtocol

/// The lifecycle of one client connection, as a pure state machine: handshake →
/// ready → closing. The I/O shell (`Connection`) feeds it events and carries out the
/// returned action; it never decides protocol questions itself.
struct ConnectionStateMachine {
    /// What a ready connection knows about its client.
    struct Session: Equatable {
        var clientID: String
        var clientName: String
        var protocolVersion: UInt16
        var subscriptions: Set<String> = []
        /// What the client's token grants (``AccessGrant/unrestricted`` with auth off).
        var grant: AccessGrant = .unrestricted
    }

    private enum State {
        /// Waiting for `Hello` until `deadline` (loop time, ms).
        case awaitingHello(deadline: UInt64)
        case ready(Session)
        case closing
    }

    /// What the shell must do.
    enum Action: Equatable {
        case none
        /// Send `Welcome` (with the server limits) for this protocol version.
        case welcome(version: UInt16)
        case subscribe(Subscribe)
        /// Refuse a write (the token does not grant it); nothing else happens.
        case reject(Reject)
        /// A RefreshToken was accepted: end these subscriptions (the new token does not
        /// grant them) with a non-fatal `forbidden` each.
        case refreshed(dropped: [String])
        case unsubscribe(listName: String)
        case mutate(Mutate)
        case pong(nonce: UInt64)
        case stats(StatsRequest)
        /// Reply with a non-fatal error (the connection stays open).
        case sendError(ErrorMessage)
        /// Send this error, flush, close.
        case close(ErrorMessage)
    }

    struct Limits {
        var maxListsPerConnection: Int
        var maxListNameBytes: Int
    }

    /// Checks the Hello's token; `nil` when `[auth] mode = "off"` (every client gets
    /// ``AccessGrant/unrestricted``).
    let verifier: TokenVerifier?

    /// Protocol versions this server speaks.
    static let supportedVersions: ClosedRange<UInt16> = 1...1

    private var state: State
    let limits: Limits

    init(now: UInt64, handshakeTimeout: UInt64, limits: Limits, verifier: TokenVerifier? = nil) {
        state = .awaitingHello(deadline: now + handshakeTimeout)
        self.limits = limits
        self.verifier = verifier
    }

    /// The session, once the handshake completed.
    var session: Session? {
        if case .ready(let s) = state { return s }
        return nil
    }

    var isReady: Bool { session != nil }
    var isClosing: Bool { if case .closing = state { return true } else { return false } }

    // MARK: Events

    mutating func receivedMessage(_ message: Message) -> Action {
        switch state {
        case .closing:
            return .none
        case .awaitingHello:
            guard case .hello(let hello) = message else {
                return close(.handshakeRequired, "the first message must be Hello, got \(message.type)")
            }
            let low = max(hello.minVersion, Self.supportedVersions.lowerBound)
            let high = min(hello.maxVersion, Self.supportedVersions.upperBound)
            guard low <= high else {
                return close(.unsupportedProtocolVersion, "client speaks \(hello.minVersion)…\(hello.maxVersion), server \(Self.supportedVersions.lowerBound)…\(Self.supportedVersions.upperBound)")
            }
            guard !hello.clientID.isEmpty else {
                return close(.malformedFrame, "Hello needs a non-empty client ID (it makes retried writes idempotent)")
            }
            var grant = AccessGrant.unrestricted
            if let verifier {
                // Verified before any claim is used (TokenVerifier's order of checks).
                switch verifier.verify(hello.authToken) {
                case .success(let verified): grant = verified
                case .failure(let rejection): return close(rejection.code, rejection.message)
                }
            }
            state = .ready(Session(clientID: hello.clientID, clientName: hello.clientName, protocolVersion: high, grant: grant))
            return .welcome(version: high)
        case .ready(var session):
            switch message {
            case .subscribe(let request):
                if let problem = checkListName(request.listName) { return .sendError(problem) }
                // Deny by default, and before anything else is learnt about the list.
                guard session.grant.mayRead(request.listName) else {
                    return .sendError(ErrorMessage(code: .forbidden, message: "the token does not grant reading \"\(request.listName)\"", listName: request.listName, closesConnection: false))
                }
                if session.subscriptions.contains(request.listName) {
                    return .sendError(ErrorMessage(code: .alreadySubscribed, message: "already subscribed to \"\(request.listName)\"", listName: request.listName, closesConnection: false))
                }
                if session.subscriptions.count >= limits.maxListsPerConnection {
                    return .sendError(ErrorMessage(code: .tooManyLists, message: "at most \(limits.maxListsPerConnection) lists per connection", listName: request.listName, closesConnection: false))
                }
                session.subscriptions.insert(request.listName)
                state = .ready(session)
                return .subscribe(request)
            case .unsubscribe(let request):
                guard session.subscriptions.remove(request.listName) != nil else {
                    return .sendError(ErrorMessage(code: .notSubscribed, message: "not subscribed to \"\(request.listName)\"", listName: request.listName, closesConnection: false))
                }
                state = .ready(session)
                return .unsubscribe(listName: request.listName)
            case .mutate(let mutate):
                if let problem = checkListName(mutate.listName) { return .sendError(problem) }
                guard mutate.clientID == session.clientID else {
                    return .sendError(ErrorMessage(code: .forbidden, message: "mutation client ID \"\(mutate.clientID)\" differs from the handshake's \"\(session.clientID)\"", listName: mutate.listName, closesConnection: false))
                }
                guard session.grant.mayWrite(mutate.listName) else {
                    // A Reject (not an Error) so the writer learns which write failed.
                    return .reject(Reject(listName: mutate.listName, seq: mutate.seq, code: .forbidden, message: "the token does not grant writing \"\(mutate.listName)\""))
                }
                return .mutate(mutate)
            case .ping(let ping):
                return .pong(nonce: ping.nonce)
            case .pong:
                return .none
            case .refreshToken(let refresh):
                // In-band refresh: verified exactly like a Hello's token. A bad one ends
                // the connection (reaction "refresh token": the client reconnects).
                guard let verifier else { return .none }   // auth off: nothing to refresh
                switch verifier.verify(refresh.token) {
                case .failure(let rejection):
                    return close(rejection.code, "refresh refused: \(rejection.message)")
                case .success(let grant):
                    guard grant.subject == session.grant.subject else {
                        return close(.forbidden, "a refreshed token must have the same sub (\"\(grant.subject)\" is not \"\(session.grant.subject)\")")
                    }
                    let dropped = session.subscriptions.filter { !grant.mayRead($0) }.sorted()
                    session.subscriptions.subtract(dropped)
                    session.grant = grant
                    state = .ready(session)
                    return .refreshed(dropped: dropped)
                }
            case .statsRequest(let request):
                if let name = request.listName, !session.grant.mayRead(name) {
                    return .sendError(ErrorMessage(code: .forbidden, message: "the token does not grant reading \"\(name)\"", listName: name, closesConnection: false))
                }
                return .stats(request)
            case .hello:
                return close(.unexpectedMessage, "Hello after the handshake")
            case .welcome, .snapshot, .diff, .ack, .reject, .notice, .statsReply, .error:
                return close(.unexpectedMessage, "\(message.type) is sent by servers, not clients")
            }
        }
    }

    /// The decoder refused the byte stream: the connection cannot be resynchronised.
    mutating func decodeFailed(_ error: ProtocolError) -> Action {
        guard !isClosing else { return .none }
        return close(error.code, error.message)
    }

    /// Called periodically with the loop time.
    mutating func tick(now: UInt64) -> Action {
        if case .awaitingHello(let deadline) = state, now >= deadline {
            return close(.handshakeTimeout, "no Hello within the handshake timeout")
        }
        if case .ready(let session) = state, let expiresAt = session.grant.expiresAt, let verifier, verifier.now >= expiresAt {
            // Reaction "refresh token": the SDK fetches a new token and reconnects.
            return close(.tokenExpired, "the token expired")
        }
        return .none
    }

    /// The server closes this connection for a reason of its own (slow consumer,
    /// shutdown); returns the error to send, or `nil` when already closing.
    mutating func serverCloses(_ code: ErrorCode, _ message: String) -> ErrorMessage? {
        guard case .close(let error) = close(code, message) else { return nil }
        return error
    }

    /// The peer went away; nothing more is sent.
    mutating func peerClosed() {
        state = .closing
    }

    // MARK: Helpers

    private mutating func close(_ code: ErrorCode, _ message: String) -> Action {
        if case .closing = state { return .none }
        state = .closing
        return .close(ErrorMessage(code: code, message: message))
    }

    private func checkListName(_ name: String) -> ErrorMessage? {
        if name.isEmpty || name.utf8.count > limits.maxListNameBytes {
            return ErrorMessage(code: .limitExceeded, message: "list name must be 1…\(limits.maxListNameBytes) bytes", listName: name, closesConnection: false)
        }
        return nil
    }
}
