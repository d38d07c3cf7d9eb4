import Testing

@testable import FlowSyncServer

/// A peer link's lifecycle and handshake (issue #33), event by event, without a socket:
/// two machines exchange their `.send` frames by hand. A good secret makes both ready;
/// a wrong one, a forged or replayed or reflected proof, garbage or a frame out of
/// place closes the link with a reason; the deadline and the dialer's backoff are the
/// timer's; a lost ready link says so once.
@Suite(.timeLimit(.minutes(1))) struct PeerLinkStateMachineTests {
    typealias Machine = PeerLinkStateMachine
    static let secret = PeerCredential(secret: Array("0123456789abcdef0123456789abcdef".utf8))
    static let otherSecret = PeerCredential(secret: Array("fedcba9876543210fedcba9876543210".utf8))
    static let nonceA = Array(repeating: UInt8(1), count: 32)
    static let nonceB = Array(repeating: UInt8(2), count: 32)

    static func sent(_ actions: [Machine.Action]) -> [PeerFrame] {
        actions.compactMap { if case .send(let frame) = $0 { return frame } else { return nil } }
    }

    static func closes(_ actions: [Machine.Action]) -> String? {
        for action in actions { if case .close(let reason) = action { return reason } }
        return nil
    }

    /// Runs the handshake between a dialer "a" and an acceptor "b"; returns both
    /// machines and every action each took.
    static func handshake(
        dialer: PeerCredential = secret, acceptor: PeerCredential = secret
    ) -> (Machine, Machine, [Machine.Action], [Machine.Action]) {
        var a = Machine(role: .dialer(peer: "b"), node: "a", credential: dialer)
        var b = Machine(role: .acceptor, node: "b", credential: acceptor)
        var aActions = a.start()
        aActions += a.connected(nonce: nonceA)
        var bActions = b.accepted(nonce: nonceB)
        var toB = sent(aActions)
        var toA: [PeerFrame] = []
        var rounds = 0
        while (!toB.isEmpty || !toA.isEmpty) && rounds < 10 {
            rounds += 1
            for frame in toB {
                let out = b.received(frame)
                bActions += out
                toA += sent(out)
            }
            toB = []
            for frame in toA {
                let out = a.received(frame)
                aActions += out
                toB += sent(out)
            }
            toA = []
            if closes(aActions) != nil || closes(bActions) != nil { break }
        }
        return (a, b, aActions, bActions)
    }

    @Test func aGoodSecretMakesBothSidesReadyAndTheSecretNeverCrossesTheWire() {
        let (a, b, aActions, bActions) = Self.handshake()
        #expect(a.ready?.peer == "b" && b.ready?.peer == "a")
        #expect(aActions.contains(.ready(peer: "b")) && bActions.contains(.ready(peer: "a")))
        #expect(
            aActions.contains(.startTimer(milliseconds: Machine.heartbeatMilliseconds))
                && bActions.contains(.startTimer(milliseconds: Machine.heartbeatMilliseconds)),
            "the handshake's deadline becomes the heartbeat")
        let wire = (Self.sent(aActions) + Self.sent(bActions)).flatMap { $0.encoded() }
        let secret = Array("0123456789abcdef0123456789abcdef".utf8)
        #expect(
            !(0...(wire.count - secret.count)).contains { Array(wire[$0..<($0 + secret.count)]) == secret },
            "the secret is not in any frame")
    }

    @Test func aWrongSecretIsRefusedByWhicheverSideChecksFirst() {
        // The dialer holds the wrong secret: the acceptor's proof fails on its side.
        let (a, b, aActions, _) = Self.handshake(dialer: Self.otherSecret)
        #expect(a.ready == nil && b.ready == nil)
        #expect(Self.closes(aActions)?.contains("failed authentication") == true)
        // The acceptor holds the wrong one: the same, the dialer refuses it.
        let (c, d, cActions, _) = Self.handshake(acceptor: Self.otherSecret)
        #expect(c.ready == nil && d.ready == nil)
        #expect(Self.closes(cActions)?.contains("failed authentication") == true)
    }

    @Test func aForgedProofIsRefusedByTheAcceptor() {
        var b = Machine(role: .acceptor, node: "b", credential: Self.secret)
        _ = b.accepted(nonce: Self.nonceB)
        _ = b.received(.hello(node: "a", nonce: Self.nonceA))
        let out = b.received(.proof(Array(repeating: 0, count: 32)))
        #expect(Self.closes(out)?.contains("peer \"a\" failed authentication") == true)
        #expect(b.ready == nil)
    }

    @Test func aRecordedProofIsRefusedOnANewConnection() {
        // A good handshake is recorded...
        let (_, _, aActions, _) = Self.handshake()
        let recorded = Self.sent(aActions)
        #expect(recorded.count == 2)
        // ...and replayed to an acceptor that draws a new nonce.
        var b = Machine(role: .acceptor, node: "b", credential: Self.secret)
        _ = b.accepted(nonce: Array(repeating: 9, count: 32))
        _ = b.received(recorded[0])
        let out = b.received(recorded[1])
        #expect(Self.closes(out)?.contains("failed authentication") == true)
        #expect(b.ready == nil)
    }

    @Test func theAcceptorsOwnProofReflectedBackIsRefused() {
        var b = Machine(role: .acceptor, node: "b", credential: Self.secret)
        _ = b.accepted(nonce: Self.nonceB)
        let challenge = Self.sent(b.received(.hello(node: "a", nonce: Self.nonceA)))
        guard case .challenge(_, _, let proof)? = challenge.first else {
            Issue.record("no challenge")
            return
        }
        #expect(Self.closes(b.received(.proof(proof))) != nil, "the acceptor's proof is not a dialer's")
    }

    @Test func garbageAndFramesOutOfPlaceCloseTheLink() {
        var b = Machine(role: .acceptor, node: "b", credential: Self.secret)
        _ = b.accepted(nonce: Self.nonceB)
        #expect(
            Self.closes(b.received(.push(list: "l", epoch: 1, term: 1, version: 1, frame: []))) != nil,
            "nothing but the handshake before ready")
        var c = Machine(role: .acceptor, node: "b", credential: Self.secret)
        _ = c.accepted(nonce: Self.nonceB)
        #expect(Self.closes(c.received(.hello(node: "a", nonce: [1, 2, 3]))) != nil, "a short nonce")
        var d = Machine(role: .acceptor, node: "b", credential: Self.secret)
        _ = d.accepted(nonce: Self.nonceB)
        #expect(Self.closes(d.received(.hello(node: "b", nonce: Self.nonceA))) != nil, "its own name")
        var e = Machine(role: .acceptor, node: "b", credential: Self.secret)
        _ = e.accepted(nonce: Self.nonceB)
        #expect(Self.closes(e.receivedGarbage(PeerFrameError(reason: .unknownType(77)))) != nil)
        // The dialer refuses a challenge from a node it did not dial.
        var a = Machine(role: .dialer(peer: "b"), node: "a", credential: Self.secret)
        _ = a.start()
        _ = a.connected(nonce: Self.nonceA)
        #expect(
            Self.closes(a.received(.challenge(node: "z", nonce: Self.nonceB, proof: Array(repeating: 0, count: 32))))
                != nil)
        // A handshake frame on a ready link.
        var (ready, _, _, _) = Self.handshake()
        #expect(Self.closes(ready.received(.hello(node: "b", nonce: Self.nonceB))) != nil)
    }

    @Test func aReadyLinkKeepsItsPeersFollowsAndDeliversTheRest() {
        var (_, b, _, _) = Self.handshake()
        #expect(b.received(.follow(list: "x")) == [.deliver(.follow(list: "x"))], "kept, then told to the store")
        #expect(b.received(.follow(list: "y")) == [.deliver(.follow(list: "y"))])
        #expect(b.received(.unfollow(list: "x")) == [])
        #expect(b.ready?.follows == ["y"])
        let push = PeerFrame.push(list: "y", epoch: 1, term: 2, version: 3, frame: [1])
        #expect(b.received(push) == [.deliver(push)])
        #expect(b.received(.forward(mutate: [1])) == [.deliver(.forward(mutate: [1]))])
        // Lost: said once; an acceptor stops, and its follows go with it.
        #expect(b.closed(random: 0.5) == [.lost(peer: "a"), .stopTimer])
        #expect(b.isStopped && b.ready == nil)
        #expect(b.closed(random: 0.5) == [], "a late report changes nothing")
    }

    @Test func theHandshakeHasADeadline() {
        var b = Machine(role: .acceptor, node: "b", credential: Self.secret)
        #expect(b.accepted(nonce: Self.nonceB) == [.startTimer(milliseconds: Machine.handshakeMilliseconds)])
        #expect(Self.closes(b.timerFired())?.contains("handshake") == true)
        #expect(b.closed(random: 0) == [.stopTimer])
        #expect(b.isStopped)
    }

    @Test func theDialerBacksOffWithJitterDoublingToTwoSecondsAndResetsOnceReady() {
        var a = Machine(role: .dialer(peer: "b"), node: "a", credential: Self.secret)
        #expect(a.start() == [.connect])
        var waits: [Int] = []
        for _ in 0..<7 {
            let out = a.connectFailed(random: 1)
            guard case .startTimer(let ms)? = out.first else {
                Issue.record("no backoff: \(out)")
                return
            }
            waits.append(ms)
            #expect(a.timerFired() == [.connect])
        }
        #expect(waits == [100, 200, 400, 800, 1_600, 2_000, 2_000])
        #expect(a.connectFailed(random: 0) == [.startTimer(milliseconds: 1_500)], "3/4 of 2 s at the low end")
        // Ready, then lost: it says so, and the backoff starts over.
        var (ready, _, _, _) = Self.handshake()
        #expect(ready.closed(random: 1) == [.lost(peer: "b"), .startTimer(milliseconds: 100)])
        #expect(ready.phase == "backingOff")
        #expect(ready.timerFired() == [.connect])
        #expect(ready.connected(nonce: Self.nonceA).first == .send(.hello(node: "a", nonce: Self.nonceA)))
    }

    /// Rule 7: a ready link pings every beat; any frame from the peer resets its
    /// silence; three silent beats in a row close the link (a half-open socket looks
    /// ready for minutes), and the close is a loss like any other.
    @Test func aSilentLinkIsClosedAfterThreeBeatsAndAnyFrameKeepsItOpen() {
        var (a, _, _, _) = Self.handshake()
        let beat: [Machine.Action] = [.send(.ping), .startTimer(milliseconds: Machine.heartbeatMilliseconds)]
        // Heard from every beat: open however long it runs.
        for k in 0..<100 {
            #expect(a.timerFired() == beat)
            #expect(
                a.received(k % 2 == 0 ? .ping : .push(list: "l", epoch: 1, term: 1, version: 1, frame: [1])).count <= 1)
        }
        #expect(a.ready?.peer == "b")
        // Two silent beats ping; the third closes, naming the silence.
        #expect(a.timerFired() == beat)
        #expect(a.timerFired() == beat)
        let reason = Self.closes(a.timerFired())
        #expect(reason?.contains("nothing heard from \"b\" for 3000 ms") == true, "\(String(describing: reason))")
        #expect(a.closed(random: 1) == [.lost(peer: "b"), .startTimer(milliseconds: 100)])
        // A ping is no frame for the node.
        var (c, _, _, _) = Self.handshake()
        #expect(c.received(.ping) == [])
    }

    /// Rule 6: a peer refused for a wrong secret is dialed after 2 s doubling to 30 s,
    /// and each dial says the refusal once (one close per dial: one warning per step).
    @Test func aRefusedPeerIsDialedEverMoreSlowlyAndEachRefusalIsSaidOnce() {
        var a = Machine(role: .dialer(peer: "b"), node: "a", credential: Self.otherSecret)
        #expect(a.start() == [.connect])
        var waits: [Int] = []
        for dial in 0..<7 {
            #expect(a.connected(nonce: Self.nonceA).first == .send(.hello(node: "a", nonce: Self.nonceA)))
            var b = Machine(role: .acceptor, node: "b", credential: Self.secret)
            _ = b.accepted(nonce: Self.nonceB)
            let challenge = Self.sent(b.received(.hello(node: "a", nonce: Self.nonceA)))
            #expect(challenge.count == 1)
            let out = a.received(challenge[0])
            #expect(out.count == 1 && Self.closes(out)?.contains("failed authentication") == true, "dial \(dial)")
            #expect(a.phase == "refused")
            #expect(a.received(.accepted) == [], "nothing is read once refused")
            #expect(a.timerFired() == [], "the deadline changes nothing once refused")
            let closed = a.closed(random: 1)
            guard case .startTimer(let ms)? = closed.first, closed.count == 1 else {
                Issue.record("no backoff: \(closed)")
                return
            }
            waits.append(ms)
            #expect(a.timerFired() == [.connect])
        }
        #expect(waits == [2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000])
        // A connection that fails between refusals does not shorten the wait.
        #expect(
            a.connectFailed(random: 1) == [.startTimer(milliseconds: 2_000)],
            "a dial that fails to connect backs off as rule 4 says")
    }

    @Test func stopEndsEveryPhaseAndNeverDialsAgain() {
        var (a, _, _, _) = Self.handshake()
        #expect(a.stop() == [.lost(peer: "b"), .stopTimer, .close(reason: "this node stops the link")])
        #expect(a.closed(random: 0) == [])
        #expect(a.timerFired() == [])
        var idle = Machine(role: .dialer(peer: "b"), node: "a", credential: Self.secret)
        #expect(idle.stop() == [.stopTimer])
    }
}
