import FlowSyncCore
import FlowSyncProtocol
import Testing

@testable import FlowSyncClient

/// The connection's state machine on its own, without a session, lists or a socket:
/// every phase change, the deadlines it keeps and the verdicts it gives.
@Suite(.timeLimit(.minutes(2))) struct ClientConnectionTests {
    static func machine(ping: UInt64 = 0, maxAttempts: Int? = nil, refreshes: Bool = false) -> ClientConnection {
        ClientConnection(
            settings: .init(
                clientID: "me", clientName: "test", token: "t0", refreshesTokens: refreshes, maxTokenRefreshes: 2,
                reconnect: ReconnectPolicy(
                    initialDelayMilliseconds: 100, maxDelayMilliseconds: 1_000, jitter: 0, maxAttempts: maxAttempts),
                pingIntervalMilliseconds: ping, handshakeTimeoutMilliseconds: 5_000, firstSeq: 1, randomSeed: 1))
    }

    static func ready(_ c: inout ClientConnection, heartbeat: UInt32 = 0, now: UInt64 = 0) {
        _ = c.start(now: now)
        _ = c.connected(now: now)
        _ = c.welcomed(Welcome(serverName: "s", heartbeatMilliseconds: heartbeat))
    }

    static func isSend(_ actions: [SessionAction], _ type: MessageType) -> Bool {
        actions.contains { if case .send(let m) = $0 { m.type == type } else { false } }
    }

    static func isDisconnect(_ actions: [SessionAction]) -> Bool {
        actions.contains { if case .disconnect = $0 { true } else { false } }
    }

    @Test func connectsSaysHelloWithItsTokenAndBecomesReadyOnWelcome() {
        var c = Self.machine()
        #expect(c.phase == .idle)
        let start = c.start(now: 0)
        #expect(c.phase == .connecting && start.contains { if case .connect = $0 { true } else { false } })
        #expect(c.start(now: 1).isEmpty, "start is once")
        let hello = c.connected(now: 1)
        guard case .send(.hello(let h))? = hello.first else {
            Issue.record("no Hello: \(hello)")
            return
        }
        #expect(h.clientID == "me" && h.authToken == "t0" && c.phase == .handshaking)
        #expect(c.connected(now: 2).isEmpty, "a second open is ignored")
        let welcome = c.welcomed(
            Welcome(serverName: "s", limits: ServerLimits(maxFrameBytes: 4_096), heartbeatMilliseconds: 0))
        #expect(c.phase == .ready && c.serverLimits?.maxFrameBytes == 4_096)
        #expect(welcome.contains { if case .status(.connected(server: "s")) = $0 { true } else { false } })
    }

    @Test func handshakeDeadlineCountsFromTheAttemptAndFromTheOpen() {
        var c = Self.machine()
        _ = c.start(now: 1_000)
        #expect(c.tick(now: 5_999).isEmpty)
        #expect(Self.isDisconnect(c.tick(now: 6_000)), "no TCP connection within the deadline")
        var d = Self.machine()
        _ = d.start(now: 0)
        _ = d.connected(now: 4_000)
        #expect(d.tick(now: 8_999).isEmpty, "the handshake's own deadline starts at the open")
        #expect(Self.isDisconnect(d.tick(now: 9_000)))
    }

    @Test func heartbeatIsTheSmallerOfBothAndADeadPathIsDroppedThenRetriedAtOnce() {
        var c = Self.machine(ping: 10_000)
        Self.ready(&c, heartbeat: 4_000)
        #expect(c.heartbeatMilliseconds == 4_000)
        #expect(Self.isSend(c.tick(now: 4_000), .ping), "a Ping every heartbeat")
        #expect(c.tick(now: 4_001).isEmpty, "not twice")
        c.heard(now: 5_000)
        #expect(!Self.isDisconnect(c.tick(now: 12_999)))
        #expect(Self.isDisconnect(c.tick(now: 13_000)), "silent for twice the heartbeat")
        #expect(
            c.transportClosed(reason: "dead", now: 13_000) == .retry(milliseconds: 0),
            "the server is fine, the path was not: at once")
        #expect(c.phase == .backingOff)
    }

    @Test func backoffGrowsWithFailedAttemptsAndAReadyConnectionResetsIt() {
        var c = Self.machine()
        _ = c.start(now: 0)
        #expect(c.transportClosed(reason: "refused", now: 0) == .retry(milliseconds: 200))
        _ = c.reconnectDue(now: 1)
        #expect(c.transportClosed(reason: "refused", now: 1) == .retry(milliseconds: 400))
        _ = c.reconnectDue(now: 2)
        _ = c.connected(now: 2)
        _ = c.welcomed(Welcome(serverName: "s", heartbeatMilliseconds: 0))
        #expect(
            c.transportClosed(reason: "cut", now: 3) == .retry(milliseconds: 100),
            "a connection that got ready starts the count again")
        #expect(c.transportClosed(reason: "again", now: 4) == .ignored, "already waiting")
    }

    @Test func serverDelayIsAFloorOnTheNextBackoff() {
        var c = Self.machine()
        Self.ready(&c)
        c.serverAsked(delayMilliseconds: 750)
        #expect(c.transportClosed(reason: "notice", now: 1) == .retry(milliseconds: 750))
    }

    @Test func givesUpAfterMaxAttempts() {
        var c = Self.machine(maxAttempts: 2)
        _ = c.start(now: 0)
        #expect(c.transportClosed(reason: "no", now: 0) == .retry(milliseconds: 200))
        _ = c.reconnectDue(now: 1)
        guard case .closedForGood = c.transportClosed(reason: "no", now: 1) else {
            Issue.record("did not give up")
            return
        }
        #expect(c.phase == .closed)
    }

    @Test func aRefusalForGoodClosesAtTheNextLoss() {
        var c = Self.machine()
        Self.ready(&c)
        #expect(Self.isDisconnect(c.serverClosed(ErrorMessage(code: .forbidden, message: "no", reaction: .giveUp))))
        #expect(
            c.transportClosed(reason: "closed", now: 1)
                == .closedForGood(.connectionRefused(code: .forbidden, message: "no")))
        #expect(c.reconnectNow(now: 2).isEmpty && c.phase == .closed)
    }

    @Test func tokenRefreshRefusalsAreBoundedUntilAWelcome() {
        var c = Self.machine(refreshes: true)
        _ = c.start(now: 0)
        // maxTokenRefreshes is 2: two refusals reconnect (with a fresh token), the third ends it.
        for attempt in 0..<3 {
            _ = c.connected(now: UInt64(attempt))
            _ = c.serverClosed(ErrorMessage(code: .tokenExpired, message: "expired", reaction: .refreshToken))
            let loss = c.transportClosed(reason: "expired", now: UInt64(attempt))
            if attempt < 2 {
                guard case .retry = loss else {
                    Issue.record("refusal \(attempt + 1) ended the client: \(loss)")
                    return
                }
                _ = c.reconnectDue(now: UInt64(attempt))
            } else {
                guard case .closedForGood = loss else {
                    Issue.record("the third refusal must end it: \(loss)")
                    return
                }
            }
        }
    }

    @Test func pauseResumeAndReconnectNow() {
        var c = Self.machine()
        #expect(c.pause() == nil, "nothing to pause before start")
        Self.ready(&c)
        #expect(c.pause() == true && c.phase == .paused, "an open connection must be closed")
        #expect(c.pause() == nil)
        #expect(c.transportClosed(reason: "closed by pause", now: 1) == .ignored, "the close it asked for is no loss")
        let resumed = c.resume(now: 2)
        #expect(c.phase == .connecting && resumed.contains { if case .connect = $0 { true } else { false } })
        _ = c.transportClosed(reason: "refused", now: 3)
        #expect(c.pause() == false && c.phase == .paused, "waiting for a retry: just stop waiting")
        _ = c.reconnectNow(now: 4)
        #expect(c.phase == .connecting, "reconnectNow resumes a paused client too")
        #expect(c.reconnectNow(now: 5).isEmpty, "nothing while connecting")
        #expect(c.close() == true && c.phase == .closed && c.close() == nil)
    }

    @Test func refreshTokenIsSentInBandOnlyWhenReady() {
        var c = Self.machine()
        #expect(c.refresh(token: "t1").isEmpty && c.token == "t1")
        Self.ready(&c)
        #expect(Self.isSend(c.refresh(token: "t2"), .refreshToken) && c.token == "t2")
    }
}
