import FlowSyncCore
import FlowSyncProtocol

/// The client's connection as a state machine: connect, handshake, ready, back off,
/// pause, close — with the data each phase needs kept inside that phase.
///
/// Pure: inputs (the transport opened or closed, a message arrived, a timer fired, the
/// app paused) in, connection-level ``SessionAction``s or a small verdict out. It knows
/// nothing of lists; ``ClientSession`` routes the list-level consequences of each
/// verdict (resubscribe after a Welcome, fail the writes when closed for good).
struct ClientConnection: Sendable {
    /// Connection phases, as the shell and tests see them.
    enum Phase: Sendable, Equatable {
        case idle
        case connecting
        /// Hello sent, Welcome awaited.
        case handshaking
        case ready
        /// Ready, but this node refused a list the client needs: the connection is being
        /// closed to move to the next endpoint; nothing more is sent or handled on it.
        case leaving
        /// Waiting for the reconnect timer.
        case backingOff
        /// Put in the background by the app: no connection until ``ClientConnection/resume(now:)``.
        case paused
        case closed
    }

    /// A connection that is open (handshaking or ready): when the phase began, when
    /// anything was last received, when the last Ping left.
    private struct Link: Sendable {
        var since: UInt64
        var lastReceived: UInt64
        var lastPing: UInt64
    }

    /// The state, each case with its own data: a timestamp cannot outlive its phase.
    private enum State: Sendable {
        case idle
        case connecting(since: UInt64)
        case handshaking(Link)
        case ready(Link)
        case leaving
        case backingOff
        case paused
        case closed
    }

    /// What a lost connection means (``transportClosed(reason:now:)``).
    enum Loss: Sendable, Equatable {
        /// Nothing was open (or the client is closed, paused or already waiting).
        case ignored
        /// The server refused this client for good, or the reconnect policy gave up.
        case closedForGood(FlowSyncError)
        /// Try again after `milliseconds` (the shell schedules the timer).
        case retry(milliseconds: UInt64)
    }

    let settings: ClientSession.Settings
    private var state: State = .idle

    // Data that spans connections (so not inside a phase):
    /// Which endpoint is in use and which is next; the backoff per round.
    private var rotation: EndpointRotation
    /// The token the next Hello carries (the shell replaces it before each connect when
    /// a token provider is configured).
    private(set) var token: String?
    /// "Refresh token" closes since the last Welcome.
    private var tokenRefusals = 0
    /// A delay the server asked for (an Error's back-off, a Notice).
    private var serverDelay: UInt64 = 0
    /// Set when the server refused the connection for good.
    private(set) var refusal: FlowSyncError?
    /// Set when this machine dropped a connection it found dead: the reconnect then
    /// starts at once, without a backoff (the server is fine; the path was not).
    private var reconnectAtOnce = false
    private var pingNonce: UInt64 = 0
    /// The heartbeat in force (the smaller of this client's and the server's), ms; 0 none.
    private(set) var heartbeatMilliseconds: UInt64
    /// The last server's limits: edits are checked against them while offline too.
    private(set) var serverLimits: ServerLimits?
    private var random: SplitMix64

    init(settings: ClientSession.Settings) {
        self.settings = settings
        self.token = settings.token
        self.heartbeatMilliseconds = settings.pingIntervalMilliseconds
        self.random = SplitMix64(seed: settings.randomSeed)
        let count = settings.endpoints.count
        precondition(count > 0, "Internal inconsistency in ClientConnection: no endpoint")
        // The first endpoint comes from its own draw of the seed, so the jitter sequence
        // of a single-endpoint client is the one it always was.
        var firstDraw = SplitMix64(seed: settings.randomSeed ^ 0x9E37_79B9_7F4A_7C15)
        let first = settings.endpointOrder == .randomStart && count > 1 ? Int(firstDraw.next() % UInt64(count)) : 0
        self.rotation = EndpointRotation(count: count, first: first)
    }

    /// The endpoint in use, or tried next.
    var endpoint: Endpoint { settings.endpoints[rotation.current] }

    var phase: Phase {
        switch state {
        case .idle: .idle
        case .connecting: .connecting
        case .handshaking: .handshaking
        case .ready: .ready
        case .leaving: .leaving
        case .backingOff: .backingOff
        case .paused: .paused
        case .closed: .closed
        }
    }

    var isReady: Bool { phase == .ready }

    // MARK: App inputs

    mutating func start(now: UInt64) -> [SessionAction] {
        guard case .idle = state else { return [] }
        return beginConnect(now: now)
    }

    /// Background: `nil` when nothing changes; otherwise whether a connection was open
    /// (the shell must then close it; stats requests and live lists are affected).
    mutating func pause() -> Bool? {
        switch state {
        case .closed, .paused, .idle:
            return nil
        case .backingOff:
            state = .paused
            return false
        case .connecting, .handshaking, .ready, .leaving:
            state = .paused
            return true
        }
    }

    mutating func resume(now: UInt64) -> [SessionAction] {
        guard case .paused = state else { return [] }
        rotation.restart()
        return beginConnect(now: now)
    }

    mutating func reconnectNow(now: UInt64) -> [SessionAction] {
        switch state {
        case .backingOff:
            rotation.restart()
            return beginConnect(now: now)
        case .paused:
            return resume(now: now)
        case .idle, .connecting, .handshaking, .ready, .leaving, .closed:
            return []
        }
    }

    /// Stops for good: `nil` when already closed; otherwise whether a connection (or an
    /// attempt) was open and must be closed.
    mutating func close() -> Bool? {
        switch state {
        case .closed: return nil
        case .idle, .backingOff, .paused:
            state = .closed
            return false
        case .connecting, .handshaking, .ready, .leaving:
            state = .closed
            return true
        }
    }

    mutating func useToken(_ token: String?) {
        self.token = token
    }

    /// Replaces the token: sent at once in a RefreshToken when ready (in-band refresh).
    mutating func refresh(token: String) -> [SessionAction] {
        self.token = token
        guard isReady else { return [] }
        return [.send(.refreshToken(RefreshToken(token: token)))]
    }

    // MARK: Transport inputs

    /// The connection is open: say Hello.
    mutating func connected(now: UInt64) -> [SessionAction] {
        guard case .connecting = state else { return [] }
        state = .handshaking(Link(since: now, lastReceived: now, lastPing: now))
        return [
            .send(
                .hello(
                    Hello(
                        minVersion: 1, maxVersion: 1, clientName: settings.clientName,
                        clientID: settings.clientID, authToken: token)))
        ]
    }

    /// The connection closed (or never opened).
    mutating func transportClosed(reason: String, now: UInt64) -> Loss {
        let outcome: EndpointRotation.Outcome
        switch state {
        case .closed, .idle, .backingOff, .paused: return .ignored
        case .connecting, .handshaking, .leaving: outcome = .failed  // a node that refused a list did not serve
        case .ready: outcome = .served
        }
        if let refusal {
            state = .closed
            return .closedForGood(refusal)
        }
        let next = rotation.attemptEnded(
            outcome, policy: settings.reconnect, minimumMilliseconds: serverDelay,
            skipBackoff: reconnectAtOnce, unit: random.nextUnit())
        reconnectAtOnce = false
        serverDelay = 0
        switch next {
        case .giveUp(let rounds):
            state = .closed
            let tried =
                settings.endpoints.count == 1
                ? "\(rounds) attempts" : "\(rounds) rounds of \(settings.endpoints.count) endpoints"
            return .closedForGood(
                .connectionRefused(code: .internalError, message: "gave up after \(tried): \(reason)"))
        case .connect(_, let delay, _):
            state = .backingOff
            return .retry(milliseconds: delay)
        }
    }

    /// This node refused a list with a "cannot serve it here" error (a cluster node
    /// that does not own it). With more than one endpoint: returns the disconnect, and
    /// the phase is ``Phase/leaving`` until the close, after which the next endpoint is
    /// tried (the attempt counts as failed, not served, for the backoff). `nil` with one
    /// endpoint or when not ready: the caller handles the error as before.
    mutating func leaveForNextEndpoint(reason: String) -> [SessionAction]? {
        guard settings.endpoints.count > 1, case .ready = state else { return nil }
        state = .leaving
        return [.disconnect(reason: "\(endpoint) cannot serve a list, trying the next endpoint: \(reason)")]
    }

    /// The reconnect timer fired.
    mutating func reconnectDue(now: UInt64) -> [SessionAction] {
        guard case .backingOff = state else { return [] }
        return beginConnect(now: now)
    }

    /// Periodic check: handshake deadline, heartbeat pings, dead-connection detection.
    ///
    /// A ready connection gets a Ping every heartbeat, whatever else flows: the server
    /// counts only what it *receives* (a subscriber that only reads would look silent),
    /// and the Pong proves the path both ways. Nothing received for twice the heartbeat
    /// means a dead path (a phone that lost its network sees no FIN): the connection is
    /// dropped and the reconnect starts at once, resuming every list.
    mutating func tick(now: UInt64) -> [SessionAction] {
        switch state {
        case .connecting(let since):
            return handshakeDeadline(since: since, now: now)
        case .handshaking(let link):
            return handshakeDeadline(since: link.since, now: now)
        case .ready(var link) where heartbeatMilliseconds > 0:
            let silent = now &- link.lastReceived
            if silent >= 2 * heartbeatMilliseconds {
                reconnectAtOnce = true
                return [
                    .disconnect(
                        reason:
                            "nothing received for \(silent) ms (heartbeat \(heartbeatMilliseconds) ms): dead connection"
                    )
                ]
            }
            if now &- link.lastPing >= heartbeatMilliseconds {
                link.lastPing = now
                state = .ready(link)
                pingNonce += 1
                return [.send(.ping(Ping(nonce: pingNonce)))]
            }
        default:
            break
        }
        return []
    }

    /// Something arrived on the open connection (any frame proves the path).
    mutating func heard(now: UInt64) {
        switch state {
        case .handshaking(var link):
            link.lastReceived = now
            state = .handshaking(link)
        case .ready(var link):
            link.lastReceived = now
            state = .ready(link)
        default:
            break
        }
    }

    /// The Welcome: ready, with the server's limits, heartbeat and dictionary.
    mutating func welcomed(_ welcome: Welcome) -> [SessionAction] {
        guard case .handshaking(let link) = state else { return [] }
        state = .ready(link)
        tokenRefusals = 0
        serverLimits = welcome.limits
        let serverBeat = UInt64(welcome.heartbeatMilliseconds)
        heartbeatMilliseconds = [settings.pingIntervalMilliseconds, serverBeat].filter { $0 > 0 }.min() ?? 0
        return [
            .useDictionary(CompressionDictionary(welcomeBytes: welcome.dictionary)),
            .status(.connected(server: welcome.serverName)),
        ]
    }

    /// A Notice: reconnect after the delay the server asked for (the close follows).
    mutating func serverAsked(delayMilliseconds: UInt64) {
        serverDelay = max(serverDelay, delayMilliseconds)
    }

    /// A connection-level Error: what the next reconnect does depends on its reaction.
    mutating func serverClosed(_ error: ErrorMessage) -> [SessionAction] {
        switch error.reaction {
        case .refreshToken where settings.refreshesTokens && tokenRefusals < settings.maxTokenRefreshes:
            // Expired or refused token: the shell asks the provider for a new one before
            // the reconnect (bounded: a provider that keeps handing out bad tokens ends
            // the client after maxTokenRefreshes tries).
            tokenRefusals += 1
        case .giveUp, .refreshToken:
            refusal = .connectionRefused(code: error.code, message: error.message)
        case .backoff(let ms):
            serverDelay = max(serverDelay, UInt64(ms))
        case .retry, .resync:
            break
        }
        return [.disconnect(reason: "server error \(error.code.rawValue) \(error.code): \(error.message)")]
    }

    private func handshakeDeadline(since: UInt64, now: UInt64) -> [SessionAction] {
        guard now &- since >= settings.handshakeTimeoutMilliseconds else { return [] }
        return [.disconnect(reason: "no Welcome within \(settings.handshakeTimeoutMilliseconds) ms")]
    }

    private mutating func beginConnect(now: UInt64) -> [SessionAction] {
        state = .connecting(since: now)
        return [.status(.connecting), .connect(endpoint)]
    }
}
