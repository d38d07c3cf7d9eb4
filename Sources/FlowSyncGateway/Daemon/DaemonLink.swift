import FlowSyncClient
import FlowSyncCore
import FlowSyncGatewayCore
import FlowSyncProtocol
import Foundation
import NIOCore

/// One protocol connection from the gateway to a daemon, on FlowSyncClient's transport
/// contract (``NIOClientTransport``) and wire codec: Hello with the caller's bearer token
/// and a client ID, then Mutates answered by Acks and Rejects, and Subscribes whose
/// Snapshots and Diffs go to ``onMessage``.
///
/// Why the gateway speaks the protocol itself rather than through `ListDirector`: the SDK
/// keeps a replica and chooses each write's base and `(clientID, seq)` itself, while the
/// gateway must pass the HTTP caller's base, Idempotency-Key and resume position through
/// verbatim, and must hold no list state. What it shares with the SDK is the transport
/// contract, the endpoints (``Endpoint``) and the codec (FrameEncoder/FrameDecoder).
///
/// Lifetime: opened by ``open(_:eventLoop:)`` (tries each endpoint in turn), closed by
/// ``close()`` or by the daemon; after either, every waiting call fails with
/// ``LinkError`` and ``onClose`` runs once. Threading: transport events arrive on one NIO
/// event loop; the state is behind a lock and no callback runs under it.
final class DaemonLink: Sendable {
    /// How to reach the daemons and who to be.
    struct Options: Sendable {
        var endpoints: [Endpoint]
        var token: String?
        var clientID: String
        var clientName = "flowsync-gateway"
        /// Longest wait for the Welcome and for each answer.
        var timeoutMilliseconds = 10_000
    }

    /// A Mutate's answer.
    enum MutationAnswer: Sendable {
        case committed(ListVersion)
        case rejected(code: ErrorCode, message: String)
    }

    /// What a call waits for on this link: a Mutate's Ack or Reject (by list and seq), or a
    /// Ping's Pong (by nonce).
    private enum Awaited: Hashable {
        case answer(list: String, seq: UInt64)
        case pong(nonce: UInt64)
    }

    /// What arrived for an ``Awaited``.
    private enum Reply: Sendable {
        case answer(MutationAnswer)
        case pong
    }

    private enum Phase {
        case connecting
        case greeting
        case ready(Welcome)
        case closed(LinkError)
    }

    private struct State {
        var phase: Phase = .connecting
        var decoder = FrameDecoder(limits: .client)
        var encoder = FrameEncoder()
        var readyWaiter: CheckedContinuation<Welcome, any Error>?
        /// Calls waiting for their reply (``mutate(_:)``, ``roundTrip()``): one table, so a
        /// reply, a deadline and the link's close each find a waiter in one place.
        var waiters: [Awaited: CheckedContinuation<Reply, any Error>] = [:]
        var onMessage: (@Sendable (Message) -> Void)?
        /// When the daemon last sent anything (the heartbeat's silence check).
        var lastReceived = ContinuousClock.now
        var onClose: (@Sendable (LinkError) -> Void)?
        /// The pool's own close handler, beside the request's (``setPoolCloseHandler(_:)``).
        var onPoolClose: (@Sendable () -> Void)?
        /// The last seq this link's client ID used (pooled links write with their own ID).
        var lastSeq: UInt64 = 0
    }

    let options: Options
    let endpoint: Endpoint
    private let transport: NIOClientTransport
    private let state = Locked(State())

    private init(options: Options, endpoint: Endpoint, transport: NIOClientTransport) {
        self.options = options
        self.endpoint = endpoint
        self.transport = transport
    }

    /// Connects to the first endpoint that answers (starting at a rotating index, so
    /// several gateways spread over a cluster) and completes the handshake.
    /// - Throws: ``LinkError`` — `.refused` when the daemon turned the Hello away (a bad
    ///   token), `.unavailable` when no endpoint could be reached.
    static func open(_ options: Options, eventLoop: any EventLoop) async throws(LinkError) -> DaemonLink {
        precondition(!options.endpoints.isEmpty, "Internal inconsistency in DaemonLink: no endpoints")
        let start = Int(
            startCounter.withLock { counter -> Int in
                counter &+= 1
                return counter
            } % options.endpoints.count)
        var lastError = LinkError.unavailable("no endpoint")
        for i in 0..<options.endpoints.count {
            let endpoint = options.endpoints[(start + i) % options.endpoints.count]
            let link = DaemonLink(
                options: options, endpoint: endpoint, transport: NIOClientTransport(eventLoop: eventLoop))
            do {
                try await link.handshake()
                return link
            } catch let error as LinkError {
                if case .refused = error { throw error }  // the daemon decided: no point asking another
                lastError = error
            } catch {
                lastError = .unavailable("\(error)")
            }
        }
        throw lastError
    }

    private static let startCounter = Locked(Int.random(in: 0..<1_000))

    private func handshake() async throws {
        let timeout = UInt64(options.timeoutMilliseconds)
        _ = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Welcome, any Error>) in
            state.withLock { $0.readyWaiter = continuation }
            transport.connect(host: endpoint.host, port: endpoint.port) { [self] event in handle(event) }
            transport.schedule(after: timeout) { [self] in
                // The handshake's deadline only: this timer is not cancelled, and a link
                // that got its Welcome must outlive it (it once closed every SSE stream and
                // WebSocket subscription link `daemon_timeout_ms` after it opened).
                let handshaking = state.withLock { state -> Bool in
                    switch state.phase {
                    case .connecting, .greeting: return true
                    case .ready, .closed: return false
                    }
                }
                if handshaking { fail(.timeout("no Welcome from \(endpoint) within \(timeout) ms")) }
            }
        }
        schedulePing()
    }

    /// The Welcome's limits and heartbeat; nil unless ready.
    var welcome: Welcome? {
        state.withLock { state in
            if case .ready(let welcome) = state.phase { return welcome }
            return nil
        }
    }

    var isOpen: Bool { welcome != nil }

    /// Receives every Snapshot, Diff, non-fatal Error and Notice, on the link's event loop.
    func setMessageHandler(_ handler: (@Sendable (Message) -> Void)?) {
        state.withLock { $0.onMessage = handler }
    }

    /// Runs once when the link closes (at once if it already has).
    func setCloseHandler(_ handler: @escaping @Sendable (LinkError) -> Void) {
        let closedAlready: LinkError? = state.withLock { state in
            if case .closed(let error) = state.phase { return error }
            state.onClose = handler
            return nil
        }
        if let closedAlready { handler(closedAlready) }
    }

    /// Forgets the close handler a request set (a pooled link outlives its requests).
    func removeCloseHandler() {
        state.withLock { $0.onClose = nil }
    }

    /// Runs once when the link closes, at once if it already has; unlike
    /// ``setCloseHandler(_:)``, a request's handler does not replace it (``DaemonLinkPool``).
    func setPoolCloseHandler(_ handler: @escaping @Sendable () -> Void) {
        let closedAlready: Bool = state.withLock { state in
            if case .closed = state.phase { return true }
            state.onPoolClose = handler
            return false
        }
        if closedAlready { handler() }
    }

    /// The next seq for a Mutate under this link's own client ID: 1, 2, 3, … A pooled
    /// link writes un-keyed POSTs with its own client ID, and the daemon's dedupe window
    /// wants each client's seqs to grow (ORDERING.md, "Idempotency window").
    func nextSequenceNumber() -> UInt64 {
        state.withLock { state in
            state.lastSeq += 1
            return state.lastSeq
        }
    }

    /// Sends a Ping and waits for its Pong. The daemon answers in order, so once it
    /// returns, every message the daemon sent before reading the Ping has been delivered:
    /// after an Unsubscribe, no Diff of that subscription is still on its way.
    func roundTrip() async throws(LinkError) {
        let nonce = UInt64.random(in: 0...UInt64.max)
        let reply = try await send(.ping(Ping(nonce: nonce)), awaiting: .pong(nonce: nonce), timeoutDetail: "no Pong")
        guard case .pong = reply else {
            preconditionFailure("Internal inconsistency in DaemonLink: a Ping answered by \(reply)")
        }
    }

    /// Sends a message (Subscribe, Unsubscribe, …) that needs no matched answer.
    func send(_ message: Message) {
        let frame: [UInt8]? = state.withLock { state in
            guard case .ready = state.phase else { return nil }
            return state.encoder.encode(message)
        }
        if let frame { transport.send([frame]) }
    }

    /// Sends a Mutate and waits for its Ack or Reject.
    func mutate(_ mutate: Mutate) async throws(LinkError) -> MutationAnswer {
        let reply = try await send(
            .mutate(mutate), awaiting: .answer(list: mutate.listName, seq: mutate.seq),
            timeoutDetail: "no answer to \(mutate.listName)#\(mutate.seq)")
        guard case .answer(let answer) = reply else {
            preconditionFailure("Internal inconsistency in DaemonLink: a Mutate answered by \(reply)")
        }
        return answer
    }

    /// Sends `message` and waits for the reply `awaited` names: the one pattern behind
    /// ``mutate(_:)`` and ``roundTrip()``. The waiter is registered under the lock with the
    /// frame's encoding, so a reply cannot arrive before it; it ends exactly once, by
    /// whichever comes first of the reply, the link's close (``fail(_:)``) and the deadline
    /// (`timeoutMilliseconds`: `.timeout("<timeoutDetail> within N ms")`). A link that is
    /// not ready fails the call at once with its close error.
    private func send(
        _ message: Message, awaiting awaited: Awaited, timeoutDetail: String
    ) async throws(LinkError)
        -> Reply
    {
        let timeout = UInt64(options.timeoutMilliseconds)
        do {
            return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Reply, any Error>) in
                let frame: [UInt8]? = state.withLock { state in
                    guard case .ready = state.phase else { return nil }
                    state.waiters[awaited] = continuation
                    return state.encoder.encode(message)
                }
                guard let frame else {
                    continuation.resume(throwing: closedError ?? LinkError.closed("not ready"))
                    return
                }
                transport.send([frame])
                transport.schedule(after: timeout) { [self] in
                    let waiter = state.withLock { $0.waiters.removeValue(forKey: awaited) }
                    waiter?.resume(throwing: LinkError.timeout("\(timeoutDetail) within \(timeout) ms"))
                }
            }
        } catch let error as LinkError {
            throw error
        } catch {
            throw .closed("\(error)")
        }
    }

    private var closedError: LinkError? {
        state.withLock { state in
            if case .closed(let error) = state.phase { return error }
            return nil
        }
    }

    /// Closes the connection; waiting calls fail.
    func close() {
        fail(.closed("closed by the gateway"))
    }

    // MARK: Transport events (on the link's event loop)

    private func handle(_ event: TransportEvent) {
        switch event {
        case .connected:
            let hello = Message.hello(
                Hello(clientName: options.clientName, clientID: options.clientID, authToken: options.token))
            let frame: [UInt8] = state.withLock { state in
                state.phase = .greeting
                return state.encoder.encode(hello)
            }
            transport.send([frame])
        case .received(let bytes):
            receive(bytes)
        case .closed(let reason):
            fail(.unavailable(reason))
        }
    }

    private func receive(_ bytes: [UInt8]) {
        var messages: [Message] = []
        var failure: LinkError?
        state.withLock { state in
            state.lastReceived = .now
            state.decoder.feed(bytes)
            do {
                while let message = try state.decoder.next() {
                    // A Welcome changes how the frames after it are decoded (its
                    // dictionary), so it takes effect before the next is read.
                    if case .welcome(let welcome) = message {
                        let dictionary = CompressionDictionary(welcomeBytes: welcome.dictionary)
                        state.encoder.configuration.dictionary = dictionary
                        state.decoder.dictionary = dictionary
                    }
                    messages.append(message)
                }
            } catch {
                failure = .protocolFault("\(error)")
            }
        }
        for message in messages { dispatch(message) }
        if let failure { fail(failure) }
    }

    private func dispatch(_ message: Message) {
        switch message {
        case .welcome(let welcome):
            let waiter: CheckedContinuation<Welcome, any Error>? = state.withLock { state in
                guard case .greeting = state.phase else { return nil }
                state.phase = .ready(welcome)
                defer { state.readyWaiter = nil }
                return state.readyWaiter
            }
            waiter?.resume(returning: welcome)
        case .ack(let ack):
            reply(.answer(list: ack.listName, seq: ack.seq), .answer(.committed(ack.committed)))
        case .reject(let reject):
            reply(
                .answer(list: reject.listName, seq: reject.seq),
                .answer(.rejected(code: reject.code, message: reject.message)))
        case .error(let error) where error.closesConnection:
            fail(.refused(code: error.code, message: error.message))
        case .error(let error) where error.listName != nil && !error.code.isSubscriptionAnswer:
            // Checks 1–2 of a Mutate (PROTOCOL.md): answered without a seq; fail that list's writes.
            let waiters: [CheckedContinuation<Reply, any Error>] = state.withLock { state in
                let keys = state.waiters.keys.filter {
                    if case .answer(let list, _) = $0 { return list == error.listName }
                    return false
                }
                return keys.compactMap { state.waiters.removeValue(forKey: $0) }
            }
            for waiter in waiters {
                waiter.resume(returning: .answer(.rejected(code: error.code, message: error.message)))
            }
            deliver(message)
        case .ping(let ping):
            send(.pong(Pong(nonce: ping.nonce)))
        case .pong(let pong):
            reply(.pong(nonce: pong.nonce), .pong)
        default:
            deliver(message)
        }
    }

    private func deliver(_ message: Message) {
        let handler = state.withLock { $0.onMessage }
        handler?(message)
    }

    private func reply(_ awaited: Awaited, _ reply: Reply) {
        let waiter = state.withLock { $0.waiters.removeValue(forKey: awaited) }
        waiter?.resume(returning: reply)
    }

    /// Keeps the daemon's heartbeat (PROTOCOL.md, Welcome): a Ping every half interval,
    /// and a link that received nothing for twice the interval is failed as dead — the
    /// SDK's rule (`ClientConnection.tick`). Every Ping is answered by a Pong, so a live
    /// daemon is never silent that long; a frozen or partitioned one (no FIN, no RST)
    /// would otherwise hold the link — a webhook's subscription, a browser's stream —
    /// for as long as TCP retransmits.
    private func schedulePing() {
        guard let welcome, welcome.heartbeatMilliseconds > 0 else { return }
        let heartbeat = Duration.milliseconds(welcome.heartbeatMilliseconds)
        transport.schedule(after: UInt64(welcome.heartbeatMilliseconds / 2)) { [self] in
            guard isOpen else { return }
            let silent = ContinuousClock.now - state.withLock { $0.lastReceived }
            guard silent < heartbeat * 2 else {
                fail(
                    .unavailable(
                        "nothing received from \(endpoint) for \(silent) (heartbeat \(welcome.heartbeatMilliseconds) ms): dead connection"
                    ))
                return
            }
            send(.ping(Ping(nonce: UInt64.random(in: 0...UInt64.max))))
            schedulePing()
        }
    }

    private func fail(_ error: LinkError) {
        let (readyWaiter, waiters, onClose, onPoolClose, wasOpen):
            (
                CheckedContinuation<Welcome, any Error>?, [CheckedContinuation<Reply, any Error>],
                (@Sendable (LinkError) -> Void)?, (@Sendable () -> Void)?, Bool
            ) =
                state.withLock { state in
                    if case .closed = state.phase { return (nil, [], nil, nil, false) }
                    state.phase = .closed(error)
                    defer {
                        state.readyWaiter = nil
                        state.waiters = [:]
                        state.onClose = nil
                        state.onPoolClose = nil
                        state.onMessage = nil
                    }
                    return (state.readyWaiter, Array(state.waiters.values), state.onClose, state.onPoolClose, true)
                }
        guard wasOpen else { return }
        transport.disconnect()
        readyWaiter?.resume(throwing: error)
        for waiter in waiters { waiter.resume(throwing: error) }
        onClose?(error)
        onPoolClose?()
    }
}

extension ErrorCode {
    /// Errors that answer a Subscribe or Unsubscribe (not a Mutate's checks 1–2).
    var isSubscriptionAnswer: Bool {
        [ErrorCode.alreadySubscribed, .notSubscribed, .tooManyLists, .unknownList].contains(self)
            || self == .forbidden || self == .limitExceeded
    }
}

/// Why a daemon link failed. Recoverable: the HTTP layer turns each into a problem
/// document (``GatewayProblem``).
enum LinkError: Error, Sendable, CustomStringConvertible {
    /// The daemon refused the connection with this code (a bad token: 2000–2002).
    case refused(code: ErrorCode, message: String)
    /// No endpoint could be reached, or the connection dropped.
    case unavailable(String)
    /// No answer in time.
    case timeout(String)
    /// The daemon sent something the codec refused.
    case protocolFault(String)
    /// Closed by the gateway.
    case closed(String)

    var description: String {
        switch self {
        case .refused(let code, let message): return "refused: \(code.name) (\(code.rawValue)): \(message)"
        case .unavailable(let detail): return "daemon unavailable: \(detail)"
        case .timeout(let detail): return "timeout: \(detail)"
        case .protocolFault(let detail): return "protocol fault: \(detail)"
        case .closed(let detail): return "closed: \(detail)"
        }
    }

    /// The HTTP answer for this failure.
    var problem: Problem {
        switch self {
        case .refused(let code, let message): return .daemon(code: code, message: message)
        case .unavailable(let detail): return Problem(RequestError(.daemonUnavailable, detail))
        case .timeout(let detail): return Problem(RequestError(.daemonTimeout, detail))
        case .protocolFault(let detail), .closed(let detail):
            return Problem(status: 502, name: "bad-gateway", title: "Bad gateway", detail: detail, code: nil)
        }
    }
}
