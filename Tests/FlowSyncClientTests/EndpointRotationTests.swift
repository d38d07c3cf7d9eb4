import FlowSyncCore
import FlowSyncProtocol
import FlowSyncTestSupport
import Testing

@testable import FlowSyncClient

/// The choice of the next endpoint without a socket: ``EndpointRotation`` event by event
/// and over thousands of seeded runs, ``Endpoint`` parsing, and the connection machine
/// moving between endpoints (including a cluster node's "owned by another live node").
@Suite(.timeLimit(.minutes(2))) struct EndpointRotationTests {
    static let policy = ReconnectPolicy(initialDelayMilliseconds: 100, maxDelayMilliseconds: 1_000, jitter: 0)

    @Test func roundRobinWithTheBackoffOnlyAtTheEndOfARound() {
        var r = EndpointRotation(count: 3, first: 1)
        #expect(r.current == 1)
        #expect(
            r.attemptEnded(.failed, policy: Self.policy, unit: 0)
                == .connect(endpoint: 2, afterMilliseconds: 0, endsRound: false))
        #expect(
            r.attemptEnded(.failed, policy: Self.policy, unit: 0)
                == .connect(endpoint: 0, afterMilliseconds: 0, endsRound: false))
        // All three failed: the policy's delay for the first failed round (100 × 2).
        #expect(
            r.attemptEnded(.failed, policy: Self.policy, unit: 0)
                == .connect(endpoint: 1, afterMilliseconds: 200, endsRound: true))
        #expect(
            r.attemptEnded(.failed, policy: Self.policy, unit: 0)
                == .connect(endpoint: 2, afterMilliseconds: 0, endsRound: false))
        #expect(
            r.attemptEnded(.failed, policy: Self.policy, unit: 0)
                == .connect(endpoint: 0, afterMilliseconds: 0, endsRound: false))
        #expect(
            r.attemptEnded(.failed, policy: Self.policy, unit: 0)
                == .connect(endpoint: 1, afterMilliseconds: 400, endsRound: true))
        // Endpoint 1 serves, then drops: the next two at once, then the first delay.
        #expect(
            r.attemptEnded(.served, policy: Self.policy, unit: 0)
                == .connect(endpoint: 2, afterMilliseconds: 0, endsRound: false))
        #expect(r.failedRounds == 0)
        #expect(
            r.attemptEnded(.failed, policy: Self.policy, unit: 0)
                == .connect(endpoint: 0, afterMilliseconds: 0, endsRound: false))
        #expect(
            r.attemptEnded(.failed, policy: Self.policy, unit: 0)
                == .connect(endpoint: 1, afterMilliseconds: 100, endsRound: true))
    }

    @Test func oneEndpointBacksOffAfterEveryAttemptAsBefore() {
        var r = EndpointRotation(count: 1, first: 0)
        #expect(
            r.attemptEnded(.served, policy: Self.policy, unit: 0)
                == .connect(endpoint: 0, afterMilliseconds: 100, endsRound: true))
        #expect(
            r.attemptEnded(.failed, policy: Self.policy, unit: 0)
                == .connect(endpoint: 0, afterMilliseconds: 200, endsRound: true))
        #expect(
            r.attemptEnded(.failed, policy: Self.policy, unit: 0)
                == .connect(endpoint: 0, afterMilliseconds: 400, endsRound: true))
        var limited = ReconnectPolicy(initialDelayMilliseconds: 100, jitter: 0, maxAttempts: 2)
        var s = EndpointRotation(count: 1, first: 0)
        #expect(
            s.attemptEnded(.failed, policy: limited, unit: 0)
                == .connect(endpoint: 0, afterMilliseconds: 200, endsRound: true))
        #expect(s.attemptEnded(.failed, policy: limited, unit: 0) == .giveUp(failedRounds: 2))
        limited.maxAttempts = 1
        var t = EndpointRotation(count: 3, first: 0)
        _ = t.attemptEnded(.failed, policy: limited, unit: 0)
        _ = t.attemptEnded(.failed, policy: limited, unit: 0)
        #expect(
            t.attemptEnded(.failed, policy: limited, unit: 0) == .giveUp(failedRounds: 1), "maxAttempts counts rounds")
    }

    @Test func aServerDelayIsAMinimumAndADeadPathSkipsTheRoundsBackoff() {
        var r = EndpointRotation(count: 2, first: 0)
        #expect(
            r.attemptEnded(.failed, policy: Self.policy, minimumMilliseconds: 1_000, unit: 0)
                == .connect(endpoint: 1, afterMilliseconds: 1_000, endsRound: false))
        #expect(
            r.attemptEnded(.failed, policy: Self.policy, skipBackoff: true, unit: 0)
                == .connect(endpoint: 0, afterMilliseconds: 0, endsRound: true))
    }

    /// Thousands of seeded runs of random outcomes on 1–6 endpoints. Invariants: never an
    /// endpoint outside the list; strict round robin; between two round ends (or from a
    /// served connection to the next round end) every endpoint is tried exactly once;
    /// a delay only at a round end (or the server's minimum); the round's delay is the
    /// policy's for the failed rounds so far; give-up exactly at maxAttempts failed rounds.
    @Test func seededRunsKeepTheInvariants() {
        for seed in UInt64(1)...3_000 {
            var random = SeededRandom(seed: seed)
            let count = Int(random.next() % 6) + 1
            let first = Int(random.next() % UInt64(count))
            let maxAttempts: Int? = random.next() % 3 == 0 ? Int(random.next() % 5) + 1 : nil
            let policy = ReconnectPolicy(
                initialDelayMilliseconds: 50, maxDelayMilliseconds: 5_000, jitter: 0, maxAttempts: maxAttempts)
            var r = EndpointRotation(count: count, first: first)
            var triedInRound: [Int] = []
            var failedRounds = 0
            var servedInRound = false
            var ok = true
            func check(_ condition: Bool, _ what: String) {
                if !condition && ok {
                    Issue.record("seed \(seed) (\(count) endpoints): \(what)")
                    ok = false
                }
            }
            for _ in 0..<200 where ok {
                let tried = r.current
                let outcome: EndpointRotation.Outcome = random.next() % 4 == 0 ? .served : .failed
                let minimum: UInt64 = random.next() % 10 == 0 ? 700 : 0
                if outcome == .served {
                    triedInRound = []
                    failedRounds = 0
                    servedInRound = true
                }
                check(!triedInRound.contains(tried), "endpoint \(tried) tried twice in a round: \(triedInRound)")
                triedInRound.append(tried)
                let next = r.attemptEnded(outcome, policy: policy, minimumMilliseconds: minimum, unit: 0)
                r.checkInvariants()
                switch next {
                case .giveUp(let rounds):
                    check(triedInRound.count == count && !servedInRound, "gave up mid-round or after a served round")
                    check(
                        rounds == failedRounds + 1 && rounds == maxAttempts,
                        "gave up after \(rounds), max \(String(describing: maxAttempts))")
                    break
                case .connect(let endpoint, let delay, let endsRound):
                    check((0..<count).contains(endpoint), "endpoint \(endpoint) outside the list")
                    check(endpoint == (tried + 1) % count, "not round robin: \(tried) then \(endpoint)")
                    check(endsRound == (triedInRound.count == count), "round end at \(triedInRound.count) of \(count)")
                    if endsRound {
                        check(Set(triedInRound).count == count, "a round missed an endpoint: \(triedInRound)")
                        if !servedInRound { failedRounds += 1 }
                        check(
                            maxAttempts.map { failedRounds < $0 } ?? true,
                            "did not give up at \(failedRounds) failed rounds")
                        let expected = policy.delay(
                            attempt: servedInRound ? 0 : failedRounds, minimum: minimum, unit: 0)
                        check(delay == expected, "round delay \(delay), expected \(expected)")
                        triedInRound = []
                        servedInRound = false
                    } else {
                        check(delay == minimum, "a delay of \(delay) ms within a round")
                    }
                }
                if case .giveUp = next { break }
            }
        }
    }

    @Test func endpointsParseAsWritten() {
        #expect(Endpoint(parsing: "db1", defaultPort: 7400) == Endpoint(host: "db1", port: 7400))
        #expect(Endpoint(parsing: "127.0.0.1:7401", defaultPort: 7400) == Endpoint(host: "127.0.0.1", port: 7401))
        #expect(Endpoint(parsing: "[::1]:7402", defaultPort: 7400) == Endpoint(host: "::1", port: 7402))
        #expect(Endpoint(parsing: "[::1]", defaultPort: 7400) == Endpoint(host: "::1", port: 7400))
        #expect(Endpoint(parsing: "::1", defaultPort: 7400) == Endpoint(host: "::1", port: 7400))
        #expect(Endpoint(host: "::1", port: 1).description == "[::1]:1")
        for bad in ["", ":7400", "h:", "h:x", "h:0", "h:70000", "[::1", "[::1]7400"] {
            #expect(Endpoint(parsing: bad, defaultPort: 7400) == nil, "\(bad)")
        }
    }

    // MARK: The connection machine over several endpoints

    static let endpoints = [
        Endpoint(host: "127.0.0.1", port: 1), Endpoint(host: "127.0.0.1", port: 2),
        Endpoint(host: "127.0.0.2", port: 3),
    ]

    static func session(
        endpoints: [Endpoint] = endpoints, order: EndpointOrder = .listed, seed: UInt64 = 1
    ) -> ClientSession {
        ClientSession(
            settings: .init(
                clientID: "me", clientName: "test", token: nil,
                reconnect: ReconnectPolicy(initialDelayMilliseconds: 100, maxDelayMilliseconds: 1_000, jitter: 0),
                pingIntervalMilliseconds: 0, handshakeTimeoutMilliseconds: 5_000, firstSeq: 1, randomSeed: seed,
                endpoints: endpoints, endpointOrder: order))
    }

    static func connectTarget(_ actions: [SessionAction]) -> Endpoint? {
        for case .connect(let endpoint) in actions { return endpoint }
        return nil
    }

    static func reconnectDelay(_ actions: [SessionAction]) -> UInt64? {
        for case .scheduleReconnect(let ms) in actions { return ms }
        return nil
    }

    @Test func aFailedConnectMovesToTheNextEndpointAtOnceAndTheRoundBacksOff() {
        var s = Self.session()
        #expect(Self.connectTarget(s.start(now: 0)) == Self.endpoints[0])
        #expect(Self.reconnectDelay(s.transportClosed(reason: "refused", now: 1)) == 0)
        #expect(Self.connectTarget(s.reconnectDue(now: 1)) == Self.endpoints[1])
        #expect(Self.reconnectDelay(s.transportClosed(reason: "refused", now: 2)) == 0)
        #expect(Self.connectTarget(s.reconnectDue(now: 2)) == Self.endpoints[2])
        #expect(Self.reconnectDelay(s.transportClosed(reason: "refused", now: 3)) == 200, "one backoff per round")
        #expect(Self.connectTarget(s.reconnectDue(now: 203)) == Self.endpoints[0])
    }

    @Test func randomStartIsSeededAndListedStartsAtTheFirst() {
        var firsts = Set<Endpoint>()
        for seed in UInt64(1)...64 {
            var a = Self.session(order: .randomStart, seed: seed)
            var b = Self.session(order: .randomStart, seed: seed)
            let target = Self.connectTarget(a.start(now: 0))
            #expect(target == Self.connectTarget(b.start(now: 0)), "same seed, same first endpoint")
            if let target { firsts.insert(target) }
            var listed = Self.session(order: .listed, seed: seed)
            #expect(Self.connectTarget(listed.start(now: 0)) == Self.endpoints[0])
        }
        #expect(firsts == Set(Self.endpoints), "64 seeds start at every endpoint")
    }

    /// A cluster node that does not own a list refuses it with a non-fatal 5002 (and a
    /// write to it with a Reject 5002): with several endpoints the client moves on, the
    /// list does not fail and the write stays pending, to be resent on the next node.
    @Test func aNodeThatCannotServeAListIsLeftForTheNextEndpoint() throws {
        var s = Self.session()
        _ = s.start(now: 0)
        _ = s.connected(now: 0)
        _ = s.received(.welcome(Welcome(serverName: "n1", heartbeatMilliseconds: 0)), now: 0)
        _ = s.subscribe("todo")
        _ = s.received(
            .snapshot(
                Snapshot(
                    listName: "todo", position: ListVersion(epoch: 7, version: 1), digest: StateDigest.compute([]),
                    reason: .freshSubscribe, sections: [])), now: 0)
        let (seq, submitted) = try s.submit([.insertSections([Section(id: "s")], at: 0)], to: "todo")
        #expect(submitted.contains { if case .send(.mutate) = $0 { true } else { false } }, "sent on n1")
        let refusal = ErrorMessage(
            code: .internalError,
            message: "list \"todo\" cannot be loaded: list \"todo\" is owned by another live node",
            listName: "todo", closesConnection: false)
        let leave = s.received(.error(refusal), now: 1)
        #expect(leave.contains { if case .disconnect = $0 { true } else { false } })
        #expect(!leave.contains { if case .listFailed = $0 { true } else { false } })
        #expect(s.phase == .leaving)
        // Whatever else this node sends before the close is not acted on.
        let late = s.received(
            .reject(Reject(listName: "todo", seq: seq, code: .internalError, message: "owned by another live node")),
            now: 1)
        #expect(late.isEmpty)
        #expect(Self.reconnectDelay(s.transportClosed(reason: "closed", now: 2)) == 0)
        #expect(Self.connectTarget(s.reconnectDue(now: 2)) == Self.endpoints[1])
        _ = s.connected(now: 3)
        let welcome = s.received(.welcome(Welcome(serverName: "n2", heartbeatMilliseconds: 0)), now: 3)
        let sent = welcome.compactMap { if case .send(let m) = $0 { m } else { nil } }
        #expect(sent.contains { if case .subscribe(let sub) = $0 { sub.listName == "todo" } else { false } })
        #expect(
            sent.contains { if case .mutate(let m) = $0 { m.seq == seq } else { false } },
            "the pending write is resent with its seq")
        // A Reject of the same kind on the second node moves on as well.
        let again = s.received(
            .reject(Reject(listName: "todo", seq: seq, code: .internalError, message: "owned by another live node")),
            now: 4)
        #expect(again.contains { if case .disconnect = $0 { true } else { false } })
        #expect(!again.contains { if case .complete = $0 { true } else { false } }, "the write is not failed")
    }

    /// While leaving, the connection is open (pause and close must close it) but not
    /// ready: no write is sent, no ping, and a lost connection is a failed attempt.
    @Test func theLeavingPhaseIsOpenButNotReady() throws {
        func leaving() -> ClientSession {
            var s = Self.session()
            _ = s.start(now: 0)
            _ = s.connected(now: 0)
            _ = s.received(.welcome(Welcome(serverName: "n1", heartbeatMilliseconds: 0)), now: 0)
            _ = s.subscribe("todo")
            _ = s.received(
                .error(
                    ErrorMessage(
                        code: .internalError, message: "owned by another live node", listName: "todo",
                        closesConnection: false)), now: 1)
            return s
        }
        var s = leaving()
        #expect(s.phase == .leaving)
        #expect(s.tick(now: 100_000).isEmpty)
        let (_, actions) = try s.submit([.insertSections([Section(id: "s")], at: 0)], to: "todo")
        #expect(
            !actions.contains { if case .send = $0 { true } else { false } }, "nothing is sent to a node being left")
        var paused = leaving()
        #expect(paused.pause(now: 2).contains { if case .disconnect = $0 { true } else { false } })
        #expect(paused.phase == .paused)
        var closed = leaving()
        #expect(closed.close().contains { if case .disconnect = $0 { true } else { false } })
        #expect(closed.phase == .closed)
    }

    @Test func withOneEndpointTheRefusalFailsTheListAsBefore() {
        var s = Self.session(endpoints: [Self.endpoints[0]])
        _ = s.start(now: 0)
        _ = s.connected(now: 0)
        _ = s.received(.welcome(Welcome(serverName: "n1", heartbeatMilliseconds: 0)), now: 0)
        _ = s.subscribe("todo")
        let refusal = ErrorMessage(
            code: .internalError, message: "owned by another live node", listName: "todo", closesConnection: false)
        let actions = s.received(.error(refusal), now: 1)
        #expect(actions.contains { if case .listFailed = $0 { true } else { false } })
        #expect(s.phase == .ready)
        // A request error (not the node's state) never moves a multi-endpoint client.
        var m = Self.session()
        _ = m.start(now: 0)
        _ = m.connected(now: 0)
        _ = m.received(.welcome(Welcome(serverName: "n1", heartbeatMilliseconds: 0)), now: 0)
        _ = m.subscribe("todo")
        let forbidden = m.received(
            .error(ErrorMessage(code: .forbidden, message: "no", listName: "todo", closesConnection: false)), now: 1)
        #expect(forbidden.contains { if case .listFailed = $0 { true } else { false } } && m.phase == .ready)
    }
}
