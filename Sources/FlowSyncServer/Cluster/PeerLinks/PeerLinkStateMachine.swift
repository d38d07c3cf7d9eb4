/// One peer link's lifecycle (issue #33; docs/CLUSTER.md, "Peer links"), as a pure
/// machine: the shell (``PeerLink``) holds the socket and a timer and carries out the
/// actions; nonces and the jitter's random draw come in with the events. Tested event by
/// event without a socket (`PeerLinkStateMachineTests`).
///
/// ```
///  dialer:   idle ──start──▶ connecting ──connected(nonce)──▶ awaitingChallenge ──challenge ok──▶ awaitingAccepted
///               ▲               │ connectFailed                                                        │ accepted
///               │               ▼                                                                      ▼
///               └──timer── backingOff ◀──────────────closed (any state)────────────────────────────── ready
///  acceptor: awaitingHello ──hello──▶ awaitingProof ──proof ok──▶ ready ──closed──▶ stopped
/// ```
///
/// Rules, each with its reason:
/// 1. **Nothing but the handshake before `ready`**, and no handshake frame after it: a
///    peer that has not proved the credential gets nothing and can ask for nothing.
/// 2. **A failed proof closes the link** and says so (`.close` carries the reason, the
///    shell logs it): the node refuses that peer and keeps using PostgreSQL for it.
/// 3. **The handshake has a deadline** (``handshakeMilliseconds``): a peer that
///    connects and says nothing holds a socket only that long.
/// 4. **Only the dialer reconnects**, after a backoff of 100 ms doubling to 2 s, each
///    drawn between 3/4 and all of it, reset once a link was ready: the lower-named node
///    of each pair dials (``PeerLinks``), so one link per pair, and nodes that lost a
///    peer together do not knock in step.
/// 5. **`ready` carries what only it means**: the peer's name and the lists it follows
///    (the owner pushes a list's batches only to the peers that follow it). Both are
///    forgotten with the link: a new link starts with an empty set, and the follower
///    sends its follows again when it is ready.
///
/// 6. **A refused peer is dialed ever more slowly**: after the dialer refused the
///    peer's challenge (a different secret), it waits 2 s doubling to 30 s (drawn as in
///    rule 4) instead of rule 4's 2 s at most. A wrong secret is an operator's mistake
///    that retrying will not mend; each refusal is logged once by the shell, so the
///    warning comes once per step of this backoff (2, 4, 8, 16, then every 30 s), not
///    every 2 s.
///
/// 7. **A ready link has a heartbeat**: both ends send a `ping` every
///    ``heartbeatMilliseconds``, and an end that heard nothing from its peer for
///    ``silentBeatsAllowed`` beats in a row closes the link. A peer gone without a FIN or
///    RST (a partition, a frozen host) leaves a socket that looks ready for as long as
///    TCP retransmits — minutes — while forwards, answers and pushes sent on it are
///    lost; closed, the link is lost like any other, and PostgreSQL carries its traffic
///    (waiting writes sent again, heads announced, followers reading their gaps).
///
/// Not guaranteed: anything about frames sent before a close — a link gives no
/// delivery promise; PostgreSQL stays the log, and the callers fall back to it.
struct PeerLinkStateMachine {
    /// What the shell does, in order.
    enum Action: Equatable {
        /// Dial the peer's current address (the dialer only).
        case connect
        case send(PeerFrame)
        /// (Re)arm the one timer: the handshake's deadline, or the backoff's wait.
        case startTimer(milliseconds: Int)
        case stopTimer
        /// Close the socket; the shell then reports ``closed(random:)``.
        case close(reason: String)
        /// The link is authenticated both ways: the node may use it.
        case ready(peer: String)
        /// A ready link ended: the node falls back to PostgreSQL for this peer.
        case lost(peer: String)
        /// A frame for the node (a push, a forwarded write, an answer).
        case deliver(PeerFrame)
    }

    enum Role: Equatable {
        /// Dials `peer` (this node's name sorts before the peer's).
        case dialer(peer: String)
        /// Accepted a connection; the peer names itself in its hello.
        case acceptor
    }

    struct Ready: Equatable {
        var peer: String
        /// The lists the peer follows (rule 5).
        var follows: Set<String> = []
        /// Beats in a row without a frame from the peer (rule 7).
        var silentBeats = 0
    }

    private enum State: Equatable {
        case idle
        case connecting(failures: Int)
        case backingOff(failures: Int)
        case awaitingChallenge(failures: Int, nonce: [UInt8])
        case awaitingAccepted(failures: Int)
        /// The dialer refused the peer's challenge; the close it asked for is under way
        /// (rule 6).
        case refused(failures: Int)
        case awaitingHello(nonce: [UInt8])
        case awaitingProof(peer: String, peerNonce: [UInt8], nonce: [UInt8])
        case ready(Ready)
        /// Ended for good: an acceptor's link closed, or ``stop()``.
        case stopped
    }

    static let handshakeMilliseconds = 5_000
    static let firstBackoffMilliseconds = 100
    static let maximumBackoffMilliseconds = 2_000
    /// Rule 6: the backoff after a refusal.
    static let firstRefusalBackoffMilliseconds = 2_000
    static let maximumRefusalBackoffMilliseconds = 30_000
    /// Rule 7: a ping every second; a link silent for three beats is closed. Short
    /// against the lease (a forwarded write waits at most this long before PostgreSQL
    /// carries it), long against a busy loop turn.
    static let heartbeatMilliseconds = 1_000
    static let silentBeatsAllowed = 3

    let role: Role
    let node: String
    let credential: PeerCredential
    private var state: State

    /// A dialer starts `idle` (``start()`` dials); an acceptor starts waiting for the
    /// hello once ``accepted(nonce:)`` is called.
    init(role: Role, node: String, credential: PeerCredential) {
        self.role = role
        self.node = node
        self.credential = credential
        self.state = .idle
    }

    // MARK: What the state says

    /// The peer's name and follows, while ready.
    var ready: Ready? {
        if case .ready(let ready) = state { return ready }
        return nil
    }

    var isStopped: Bool { state == .stopped }

    /// The phase's name, for logs and tests.
    var phase: String {
        switch state {
        case .idle: return "idle"
        case .connecting: return "connecting"
        case .backingOff: return "backingOff"
        case .awaitingChallenge, .awaitingAccepted, .awaitingHello, .awaitingProof: return "authenticating"
        case .refused: return "refused"
        case .ready: return "ready"
        case .stopped: return "stopped"
        }
    }

    // MARK: Events

    /// A dialer starts dialing.
    mutating func start() -> [Action] {
        guard case .dialer = role, state == .idle else {
            preconditionFailure("Internal inconsistency in PeerLinkStateMachine: start as \(role) in \(phase)")
        }
        state = .connecting(failures: 0)
        return [.connect]
    }

    /// The dialer's connection is up: it says hello with a fresh `nonce`.
    mutating func connected(nonce: [UInt8]) -> [Action] {
        guard case .connecting(let failures) = state else {
            preconditionFailure("Internal inconsistency in PeerLinkStateMachine: connected in \(phase)")
        }
        state = .awaitingChallenge(failures: failures, nonce: nonce)
        return [.send(.hello(node: node, nonce: nonce)), .startTimer(milliseconds: Self.handshakeMilliseconds)]
    }

    /// The dialer's connection attempt failed (rule 4).
    mutating func connectFailed(random: Double) -> [Action] {
        guard case .connecting(let failures) = state else {
            preconditionFailure("Internal inconsistency in PeerLinkStateMachine: connect failed in \(phase)")
        }
        return backOff(failures: failures + 1, random: random)
    }

    /// An acceptor's connection came in; `nonce` is its own fresh one (rule 3).
    mutating func accepted(nonce: [UInt8]) -> [Action] {
        guard role == .acceptor, state == .idle else {
            preconditionFailure("Internal inconsistency in PeerLinkStateMachine: accepted as \(role) in \(phase)")
        }
        state = .awaitingHello(nonce: nonce)
        return [.startTimer(milliseconds: Self.handshakeMilliseconds)]
    }

    /// A whole frame arrived (rules 1, 2, 5).
    mutating func received(_ frame: PeerFrame) -> [Action] {
        switch (state, frame) {
        case (.awaitingHello(let nonce), .hello(let peer, let peerNonce)):
            guard !peer.isEmpty, peer != node, peerNonce.count == PeerCredential.nonceBytes else {
                return refuse("a hello from \"\(peer)\" with a nonce of \(peerNonce.count) bytes")
            }
            state = .awaitingProof(peer: peer, peerNonce: peerNonce, nonce: nonce)
            let proof = credential.proof(
                .acceptor, dialer: peer, acceptor: node, dialerNonce: peerNonce, acceptorNonce: nonce)
            return [.send(.challenge(node: node, nonce: nonce, proof: proof))]
        case (.awaitingProof(let peer, let peerNonce, let nonce), .proof(let proof)):
            guard
                credential.verify(
                    proof, .dialer, dialer: peer, acceptor: node, dialerNonce: peerNonce, acceptorNonce: nonce)
            else {
                return refuse(
                    "peer \"\(peer)\" failed authentication (its proof does not match the cluster credential)")
            }
            state = .ready(Ready(peer: peer))
            // The handshake's deadline becomes the heartbeat (rule 7).
            return [.startTimer(milliseconds: Self.heartbeatMilliseconds), .send(.accepted), .ready(peer: peer)]
        case (.awaitingChallenge(let failures, let nonce), .challenge(let peer, let peerNonce, let proof)):
            guard case .dialer(let expected) = role, peer == expected, peerNonce.count == PeerCredential.nonceBytes
            else {
                return refuse("a challenge from \"\(peer)\" (dialed \(role)) with a nonce of \(peerNonce.count) bytes")
            }
            guard
                credential.verify(
                    proof, .acceptor, dialer: node, acceptor: peer, dialerNonce: nonce, acceptorNonce: peerNonce)
            else {
                // Rule 6: the close that follows backs off as a refusal.
                state = .refused(failures: failures)
                return refuse(
                    "peer \"\(peer)\" failed authentication (its proof does not match the cluster credential)")
            }
            state = .awaitingAccepted(failures: failures)
            let mine = credential.proof(
                .dialer, dialer: node, acceptor: peer, dialerNonce: nonce, acceptorNonce: peerNonce)
            return [.send(.proof(mine))]
        case (.awaitingAccepted, .accepted):
            guard case .dialer(let peer) = role else {
                preconditionFailure("Internal inconsistency in PeerLinkStateMachine: an acceptor awaited accepted")
            }
            state = .ready(Ready(peer: peer))
            return [.startTimer(milliseconds: Self.heartbeatMilliseconds), .ready(peer: peer)]
        case (.ready(var ready), _):
            // Any frame shows the peer alive (rule 7).
            ready.silentBeats = 0
            state = .ready(ready)
            switch frame {
            case .ping:
                return []
            case .follow(let list):
                // Kept before it is delivered: the store announces the list's head on a
                // follow, and every commit after that must find the follow to be pushed.
                ready.follows.insert(list)
                state = .ready(ready)
                return [.deliver(frame)]
            case .unfollow(let list):
                ready.follows.remove(list)
                state = .ready(ready)
                return []
            case .push, .forward, .answer:
                return [.deliver(frame)]
            case .hello, .challenge, .proof, .accepted:
                return refuse("a handshake frame (\(frame.kind)) on a ready link")
            }
        case (.awaitingHello, _), (.awaitingProof, _), (.awaitingChallenge, _), (.awaitingAccepted, _):
            return refuse("a \(frame.kind) frame during the handshake")
        case (.refused, _):
            // The close is under way: nothing more is read from this peer.
            return []
        case (.idle, _), (.connecting, _), (.backingOff, _), (.stopped, _):
            // No socket in these states: a frame cannot arrive.
            preconditionFailure("Internal inconsistency in PeerLinkStateMachine: a frame in \(phase)")
        }
    }

    /// The bytes did not decode (rule 2): the link closes.
    mutating func receivedGarbage(_ error: PeerFrameError) -> [Action] {
        refuse("undecodable bytes: \(error)")
    }

    /// The timer fired: the handshake's deadline (rule 3), the backoff's end (rule 4), or
    /// a heartbeat (rule 7).
    mutating func timerFired() -> [Action] {
        switch state {
        case .ready(var ready):
            ready.silentBeats += 1
            guard ready.silentBeats < Self.silentBeatsAllowed else {
                return [
                    .close(
                        reason:
                            "nothing heard from \"\(ready.peer)\" for \(Self.silentBeatsAllowed * Self.heartbeatMilliseconds) ms"
                    )
                ]
            }
            state = .ready(ready)
            return [.send(.ping), .startTimer(milliseconds: Self.heartbeatMilliseconds)]
        case .awaitingHello, .awaitingProof, .awaitingChallenge, .awaitingAccepted:
            return [.close(reason: "the handshake did not finish within \(Self.handshakeMilliseconds) ms")]
        case .backingOff(let failures):
            state = .connecting(failures: failures)
            return [.connect]
        case .idle, .connecting, .refused, .stopped:
            return []
        }
    }

    /// The socket is gone (the peer closed it, it failed, or the shell closed it after
    /// a `.close`): a dialer backs off and dials again, an acceptor stops (rule 4).
    mutating func closed(random: Double) -> [Action] {
        var actions: [Action] = []
        var failures = 0
        switch state {
        case .ready(let ready):
            actions.append(.lost(peer: ready.peer))
        case .refused(let count):
            // Rule 6 (only a dialer refuses a challenge).
            return backOff(failures: count + 1, random: random, refused: true)
        case .awaitingChallenge(let count, _), .awaitingAccepted(let count), .connecting(let count):
            failures = count
        case .awaitingHello, .awaitingProof:
            break
        case .idle, .backingOff, .stopped:
            // No socket in these states (a late report of one already handled).
            return []
        }
        guard case .dialer = role else {
            state = .stopped
            return actions + [.stopTimer]
        }
        return actions + backOff(failures: failures + 1, random: random)
    }

    /// This node stops (or forgets the peer): no more dialing.
    mutating func stop() -> [Action] {
        let hadSocket: Bool
        switch state {
        case .connecting, .awaitingChallenge, .awaitingAccepted, .awaitingHello, .awaitingProof, .ready, .refused:
            hadSocket = true
        case .idle, .backingOff, .stopped:
            hadSocket = false
        }
        let lost: [Action] = ready.map { [.lost(peer: $0.peer)] } ?? []
        state = .stopped
        return lost + [.stopTimer] + (hadSocket ? [.close(reason: "this node stops the link")] : [])
    }

    // MARK: Helpers

    private mutating func refuse(_ reason: String) -> [Action] {
        [.close(reason: reason)]
    }

    /// The wait before dial number `failures + 1` (rule 4): 100 ms doubling to 2 s, or
    /// after a refusal 2 s doubling to 30 s (rule 6); drawn in [3/4, 1] of it.
    private mutating func backOff(failures: Int, random: Double, refused: Bool = false) -> [Action] {
        state = .backingOff(failures: failures)
        let (first, maximum) =
            refused
            ? (Self.firstRefusalBackoffMilliseconds, Self.maximumRefusalBackoffMilliseconds)
            : (Self.firstBackoffMilliseconds, Self.maximumBackoffMilliseconds)
        let base = min(maximum, first << min(max(failures - 1, 0), 10))
        let drawn = Int(Double(base) * (0.75 + 0.25 * min(max(random, 0), 1)))
        return [.startTimer(milliseconds: max(1, drawn))]
    }
}
