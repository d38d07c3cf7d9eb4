import FlowSyncCore
import FlowSyncProtocol
import Testing

@testable import FlowSyncServer

/// The connection machine without a socket (issue #16): every event in every state, with
/// the exact action, the way swift-nio tests its upgrader machine without a channel. The
/// machine verifies no token and reads no clock: the test answers its `.verifyToken`
/// and hands it the times.
@Suite(.timeLimit(.minutes(2))) struct ConnectionStateMachineTests {
    typealias Machine = ConnectionStateMachine

    static let open = Machine.Configuration(maxListsPerConnection: 2, maxListNameBytes: 8, verifiesTokens: false)
    static let verifying = Machine.Configuration(maxListsPerConnection: 2, maxListNameBytes: 8, verifiesTokens: true)

    /// A grant reading `a/*`, writing `a/w`, for subject `alice`.
    static func grant(subject: String = "alice", read: String = "a/*", expiresAt: Double? = 1_000) -> AccessGrant {
        AccessGrant(subject: subject, read: [ListPattern(read)!], write: [ListPattern("a/w")!], expiresAt: expiresAt)
    }

    static let hello = Message.hello(Hello(clientName: "test", clientID: "c1", authToken: "token"))

    /// A machine accepted at t = 100 with a 50 ms handshake.
    func awaiting(_ configuration: Machine.Configuration = open) -> Machine {
        Machine(now: 100, handshakeTimeout: 50, configuration: configuration)
    }

    /// A ready machine (auth off: the unrestricted grant).
    func ready() -> Machine {
        var machine = awaiting()
        #expect(machine.receivedMessage(Self.hello, now: 110) == .welcome(version: 1))
        return machine
    }

    /// A ready machine with a verified grant (``grant(subject:read:expiresAt:)``).
    func readyWithGrant(_ grant: AccessGrant = grant()) -> Machine {
        var machine = awaiting(Self.verifying)
        #expect(machine.receivedMessage(Self.hello, now: 110) == .verifyToken("token"))
        #expect(machine.tokenVerified(.success(grant), now: 111) == .welcome(version: 1))
        return machine
    }

    func subscribed(_ machine: inout Machine, _ list: String, at version: UInt64 = 0) {
        #expect(
            machine.receivedMessage(.subscribe(Subscribe(listName: list)), now: 120)
                == .subscribe(Subscribe(listName: list)))
        machine.subscriptionStarted(
            list, flow: SubscriptionFlow(deliveredUpTo: ListVersion(epoch: 1, version: version)))
    }

    func closes(_ action: Machine.Action, _ code: ErrorCode, leaving: Set<String> = []) -> Bool {
        guard case .close(let error, let lists) = action else { return false }
        return error.code == code && Set(lists) == leaving && lists.count == leaving.count
    }

    func sendsError(_ action: Machine.Action, _ code: ErrorCode) -> Bool {
        guard case .sendError(let error) = action else { return false }
        return error.code == code && !error.closesConnection
    }

    // MARK: Heartbeats (issue #19)

    /// A ready peer silent for more than twice the heartbeat is closed with
    /// `heartbeat-timeout`, leaving its lists; any bytes reset the clock; the handshake
    /// has its own deadline; heartbeat 0 never closes for silence.
    @Test func aSilentReadyPeerIsClosedAfterTwoHeartbeats() {
        var configuration = Self.open
        configuration.heartbeatMilliseconds = 1_000
        var machine = Machine(now: 100, handshakeTimeout: 50_000, configuration: configuration)
        // Before the handshake, silence is the handshake deadline's business.
        #expect(machine.tick(now: 10_000, tokenClock: nil) == .none)
        #expect(machine.receivedMessage(Self.hello, now: 10_010) == .welcome(version: 1))
        subscribed(&machine, "a")
        #expect(machine.tick(now: 12_010, tokenClock: nil) == .none, "exactly two heartbeats is not yet too long")
        machine.bytesReceived(now: 12_000)
        #expect(machine.tick(now: 14_000, tokenClock: nil) == .none)
        #expect(closes(machine.tick(now: 14_001, tokenClock: nil), .heartbeatTimeout, leaving: ["a"]))

        var off = Self.open
        off.heartbeatMilliseconds = 0
        var quiet = Machine(now: 100, handshakeTimeout: 50, configuration: off)
        #expect(quiet.receivedMessage(Self.hello, now: 110) == .welcome(version: 1))
        #expect(quiet.tick(now: 1_000_000_000, tokenClock: nil) == .none)
    }

    // MARK: Awaiting Hello

    @Test func awaitingHelloRefusesAnythingButHello() {
        var machine = awaiting()
        #expect(closes(machine.receivedMessage(.ping(Ping(nonce: 1)), now: 101), .handshakeRequired))
        #expect(machine.closing?.since == 101 && machine.closing?.reason == .handshakeRequired)
        #expect(machine.session == nil && !machine.isHandshaking)
    }

    @Test func awaitingHelloChecksVersionAndClientID() {
        var old = awaiting()
        #expect(
            closes(
                old.receivedMessage(
                    .hello(Hello(minVersion: 7, maxVersion: 9, clientName: "x", clientID: "c")), now: 101),
                .unsupportedProtocolVersion))
        var anonymous = awaiting()
        #expect(
            closes(anonymous.receivedMessage(.hello(Hello(clientName: "x", clientID: "")), now: 101), .malformedFrame))
    }

    @Test func helloWithAuthOffWelcomesWithTheUnrestrictedGrant() {
        var machine = awaiting()
        #expect(machine.isHandshaking)
        #expect(machine.receivedMessage(Self.hello, now: 110) == .welcome(version: 1))
        #expect(
            machine.session
                == Machine.Session(clientID: "c1", clientName: "test", protocolVersion: 1, grant: .unrestricted))
        #expect(machine.isReady && !machine.isHandshaking && machine.subscribedLists.isEmpty)
    }

    @Test func helloWithAuthOnAsksForTheTokenToBeVerified() {
        var machine = awaiting(Self.verifying)
        #expect(machine.receivedMessage(Self.hello, now: 110) == .verifyToken("token"))
        #expect(machine.isHandshaking && !machine.isReady, "not ready before the answer")
        var good = machine
        #expect(good.tokenVerified(.success(Self.grant()), now: 111) == .welcome(version: 1))
        #expect(good.session?.grant == Self.grant())
        var bad = machine
        #expect(
            closes(
                bad.tokenVerified(
                    .failure(TokenVerifier.Rejection(code: .invalidToken, message: "bad signature")), now: 111),
                .invalidToken))
        #expect(bad.closing?.reason == .invalidToken)
    }

    @Test func theHandshakeDeadlineHoldsWhileWaitingAndWhileVerifying() {
        var machine = awaiting()
        #expect(machine.tick(now: 149, tokenClock: nil) == .none)
        #expect(closes(machine.tick(now: 150, tokenClock: nil), .handshakeTimeout))
        #expect(machine.closing?.since == 150)
        var verifying = awaiting(Self.verifying)
        _ = verifying.receivedMessage(Self.hello, now: 110)
        #expect(closes(verifying.tick(now: 150, tokenClock: nil), .handshakeTimeout))
    }

    @Test func decodeFailureServerCloseAndPeerCloseBeforeTheHandshake() {
        var decode = awaiting()
        #expect(
            closes(decode.decodeFailed(ProtocolError(code: .frameTooLarge, message: "big"), now: 105), .frameTooLarge))
        var server = awaiting()
        #expect(closes(server.serverCloses(.serverShuttingDown, "bye", now: 105), .serverShuttingDown))
        var peer = awaiting()
        #expect(peer.peerClosed(now: 105) == [])
        #expect(peer.closing?.since == 105 && peer.closing?.reason == nil, "no code: the peer left")
        var notFound = awaiting()
        #expect(notFound.listNotFound("a") == .none)
    }

    // MARK: Ready: subscriptions

    @Test func subscribeIsRecordedOnlyWhenTheShellStartsIt() {
        var machine = ready()
        let request = Subscribe(listName: "a")
        #expect(machine.receivedMessage(.subscribe(request), now: 120) == .subscribe(request))
        #expect(machine.flow(of: "a") == nil && machine.subscribedLists.isEmpty)
        machine.subscriptionStarted("a", flow: SubscriptionFlow(deliveredUpTo: ListVersion(epoch: 1, version: 4)))
        #expect(machine.flow(of: "a")?.delivered == ListVersion(epoch: 1, version: 4))
        #expect(sendsError(machine.receivedMessage(.subscribe(request), now: 121), .alreadySubscribed))
    }

    @Test func aListThatIsNotFoundLeavesNothingToUndo() {
        var machine = ready()
        #expect(
            machine.receivedMessage(.subscribe(Subscribe(listName: "a")), now: 120)
                == .subscribe(Subscribe(listName: "a")))
        let action = machine.listNotFound("a")
        #expect(sendsError(action, .unknownList))
        if case .sendError(let error) = action { #expect(error.listName == "a") }
        #expect(machine.subscribedLists.isEmpty)
        #expect(
            machine.receivedMessage(.subscribe(Subscribe(listName: "a")), now: 121)
                == .subscribe(Subscribe(listName: "a")), "no stale subscription")
    }

    @Test func subscribeChecksTheNameTheGrantAndTheLimit() {
        var machine = readyWithGrant()
        #expect(sendsError(machine.receivedMessage(.subscribe(Subscribe(listName: "")), now: 120), .limitExceeded))
        #expect(
            sendsError(
                machine.receivedMessage(.subscribe(Subscribe(listName: "much-too-long")), now: 120), .limitExceeded))
        #expect(sendsError(machine.receivedMessage(.subscribe(Subscribe(listName: "b")), now: 120), .forbidden))
        subscribed(&machine, "a/1")
        subscribed(&machine, "a/2")
        #expect(sendsError(machine.receivedMessage(.subscribe(Subscribe(listName: "a/3")), now: 120), .tooManyLists))
        #expect(Set(machine.subscribedLists) == ["a/1", "a/2"])
    }

    @Test func unsubscribeEndsTheSubscriptionAndItsFlow() {
        var machine = ready()
        #expect(sendsError(machine.receivedMessage(.unsubscribe(Unsubscribe(listName: "a")), now: 120), .notSubscribed))
        subscribed(&machine, "a")
        #expect(
            machine.receivedMessage(.unsubscribe(Unsubscribe(listName: "a")), now: 121) == .unsubscribe(listName: "a"))
        #expect(machine.flow(of: "a") == nil && machine.subscribedLists.isEmpty)
    }

    @Test func flowsChangeInPlaceAndReportLagging() {
        var machine = ready()
        subscribed(&machine, "a", at: 1)
        subscribed(&machine, "b", at: 1)
        let policy = BackpressurePolicy(lowWatermark: 10, highWatermark: 100, hardLimit: 1_000)
        let decision = machine.updateFlow(of: "a") {
            $0.batchCommitted(
                from: ListVersion(epoch: 1, version: 1), to: ListVersion(epoch: 1, version: 2), queued: 500,
                policy: policy)
        }
        #expect(decision == .skip)
        #expect(machine.laggingLists == ["a"] && machine.flow(of: "a")?.state == .lagging)
        #expect(machine.updateFlow(of: "missing") { _ in true } == nil)
    }

    /// The fan-out's path (issue #20): the slot a subscription started in reaches its
    /// flow while it lasts; an unsubscribe of another list leaves it alone; a closing
    /// machine answers nil (its subscriptions ended with the ready state).
    @Test func slotsReachTheirFlowUntilTheClose() {
        var machine = ready()
        #expect(
            machine.receivedMessage(.subscribe(Subscribe(listName: "a")), now: 120)
                == .subscribe(Subscribe(listName: "a")))
        let a = machine.subscriptionStarted(
            "a", flow: SubscriptionFlow(deliveredUpTo: ListVersion(epoch: 1, version: 1)))
        #expect(
            machine.receivedMessage(.subscribe(Subscribe(listName: "b")), now: 120)
                == .subscribe(Subscribe(listName: "b")))
        let b = machine.subscriptionStarted(
            "b", flow: SubscriptionFlow(deliveredUpTo: ListVersion(epoch: 1, version: 1)))
        #expect(a != b)
        let policy = BackpressurePolicy(lowWatermark: 10, highWatermark: 100, hardLimit: 1_000)
        #expect(
            machine.receivedMessage(.unsubscribe(Unsubscribe(listName: "a")), now: 121) == .unsubscribe(listName: "a"))
        let decision = machine.updateFlow(inSlot: b, of: "b") {
            $0.batchCommitted(
                from: ListVersion(epoch: 1, version: 1), to: ListVersion(epoch: 1, version: 2), queued: 0,
                policy: policy)
        }
        #expect(decision == .send && machine.flow(of: "b")?.delivered == ListVersion(epoch: 1, version: 2))
        #expect(closes(machine.serverCloses(.slowConsumer, "x", now: 130), .slowConsumer, leaving: ["b"]))
        #expect(machine.updateFlow(inSlot: b, of: "b") { _ in true } == nil)
    }

    // MARK: Ready: writes, pings, stats, refresh

    @Test func mutateChecksNameClientAndGrant() {
        var machine = readyWithGrant()
        let base = ListVersion(epoch: 1, version: 0)
        let good = Mutate(listName: "a/w", clientID: "c1", seq: 1, base: base, operations: [])
        #expect(machine.receivedMessage(.mutate(good), now: 120) == .mutate(good))
        #expect(
            sendsError(
                machine.receivedMessage(
                    .mutate(Mutate(listName: "", clientID: "c1", seq: 2, base: base, operations: [])), now: 120),
                .limitExceeded))
        #expect(
            sendsError(
                machine.receivedMessage(
                    .mutate(Mutate(listName: "a/w", clientID: "other", seq: 2, base: base, operations: [])), now: 120),
                .forbidden))
        guard
            case .reject(let reject) = machine.receivedMessage(
                .mutate(Mutate(listName: "a/1", clientID: "c1", seq: 3, base: base, operations: [])), now: 120)
        else {
            Issue.record("a write the grant does not cover is a Reject")
            return
        }
        #expect(reject.code == .forbidden && reject.seq == 3 && reject.listName == "a/1")
    }

    @Test func pingPongAndStats() {
        var machine = readyWithGrant()
        #expect(machine.receivedMessage(.ping(Ping(nonce: 9)), now: 120) == .pong(nonce: 9))
        #expect(machine.receivedMessage(.pong(Pong(nonce: 9)), now: 120) == .none)
        let request = StatsRequest(requestID: 1, listName: "a/1")
        #expect(machine.receivedMessage(.statsRequest(request), now: 120) == .stats(request, grant: Self.grant()))
        #expect(
            sendsError(
                machine.receivedMessage(.statsRequest(StatsRequest(requestID: 2, listName: "b")), now: 120), .forbidden)
        )
    }

    @Test func refreshWithAuthOffIsIgnored() {
        var machine = ready()
        #expect(machine.receivedMessage(.refreshToken(RefreshToken(token: "new")), now: 120) == .none)
        #expect(machine.isReady)
    }

    @Test func refreshDropsWhatTheNewGrantDoesNotCover() {
        var machine = readyWithGrant(Self.grant(read: "*"))
        subscribed(&machine, "a/1")
        subscribed(&machine, "b/1")
        #expect(machine.receivedMessage(.refreshToken(RefreshToken(token: "new")), now: 120) == .verifyToken("new"))
        #expect(
            machine.tokenVerified(.success(Self.grant(read: "a/*", expiresAt: 5_000)), now: 121)
                == .refreshed(dropped: ["b/1"]))
        #expect(machine.subscribedLists == ["a/1"] && machine.session?.grant.expiresAt == 5_000)
    }

    @Test func refreshMustKeepTheSubjectAndBeValid() {
        var other = readyWithGrant()
        subscribed(&other, "a/1")
        _ = other.receivedMessage(.refreshToken(RefreshToken(token: "new")), now: 120)
        #expect(
            closes(
                other.tokenVerified(.success(Self.grant(subject: "mallory")), now: 121), .forbidden, leaving: ["a/1"]))
        var invalid = readyWithGrant()
        _ = invalid.receivedMessage(.refreshToken(RefreshToken(token: "new")), now: 120)
        #expect(
            closes(
                invalid.tokenVerified(
                    .failure(TokenVerifier.Rejection(code: .tokenExpired, message: "expired")), now: 121), .tokenExpired
            ))
        #expect(invalid.subscribedLists.isEmpty && invalid.isClosing)
    }

    @Test func theGrantExpiresOnTheTokenClock() {
        var machine = readyWithGrant(Self.grant(expiresAt: 1_000))
        subscribed(&machine, "a/1")
        #expect(machine.tick(now: 10_000, tokenClock: nil) == .none, "auth off now: no token clock")
        #expect(machine.tick(now: 10_000, tokenClock: 999.5) == .none)
        #expect(closes(machine.tick(now: 10_000, tokenClock: 1_000), .tokenExpired, leaving: ["a/1"]))
    }

    @Test func protocolViolationsCloseAndLeaveEveryList() {
        var hello = ready()
        subscribed(&hello, "a")
        #expect(closes(hello.receivedMessage(Self.hello, now: 130), .unexpectedMessage, leaving: ["a"]))
        #expect(hello.closing?.since == 130 && hello.subscribedLists.isEmpty)
        var serverMessage = ready()
        #expect(
            closes(
                serverMessage.receivedMessage(
                    .ack(Ack(listName: "a", seq: 1, committed: ListVersion(epoch: 1, version: 1))), now: 130),
                .unexpectedMessage))
        var decode = ready()
        subscribed(&decode, "a")
        #expect(
            closes(
                decode.decodeFailed(ProtocolError(code: .malformedFrame, message: "x"), now: 130), .malformedFrame,
                leaving: ["a"]))
    }

    @Test func serverCloseAndPeerCloseWhenReady() {
        var server = ready()
        subscribed(&server, "a")
        subscribed(&server, "b")
        #expect(closes(server.serverCloses(.slowConsumer, "slow", now: 140), .slowConsumer, leaving: ["a", "b"]))
        #expect(server.closing?.reason == .slowConsumer && server.closing?.since == 140)
        var peer = ready()
        subscribed(&peer, "a")
        #expect(peer.peerClosed(now: 140) == ["a"])
        #expect(peer.closing?.reason == nil)
    }

    // MARK: Closing

    @Test func closingIgnoresEverything() {
        var machine = ready()
        subscribed(&machine, "a")
        _ = machine.serverCloses(.serverShuttingDown, "bye", now: 150)
        #expect(machine.receivedMessage(.subscribe(Subscribe(listName: "b")), now: 151) == .none)
        #expect(machine.receivedMessage(Self.hello, now: 151) == .none)
        #expect(machine.decodeFailed(ProtocolError(code: .malformedFrame, message: "x"), now: 151) == .none)
        #expect(machine.tick(now: 10_000, tokenClock: 10_000) == .none)
        #expect(machine.serverCloses(.slowConsumer, "again", now: 152) == .none)
        #expect(machine.tokenVerified(.success(Self.grant()), now: 152) == .none)
        #expect(machine.listNotFound("a") == .none)
        #expect(machine.peerClosed(now: 153) == [], "the lists were left with the first close")
        #expect(
            machine.closing?.since == 150 && machine.closing?.reason == .serverShuttingDown,
            "the first close is the one recorded")
        #expect(machine.flow(of: "a") == nil && machine.laggingLists.isEmpty && machine.session == nil)
    }
}
