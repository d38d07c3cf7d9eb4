import FlowSyncCore
import FlowSyncProtocol
import FlowSyncTestSupport
import Testing

@testable import FlowSyncClient

/// The session state machine, one scripted conversation at a time.
@Suite(.timeLimit(.minutes(2))) struct ClientSessionTests {
    static let list = "todo"
    static let epoch: UInt64 = 9

    /// A session plus everything it asked for so far.
    struct Harness {
        var session: ClientSession
        var sent: [Message] = []
        var changes: [(cause: ListChange.Cause, changeset: Changeset, view: Director)] = []
        var completions: [UInt64: Result<ListVersion, FlowSyncError>] = [:]
        var other: [SessionAction] = []
        var recorder = ChangeRecorder()
        var now: UInt64 = 0

        init(
            policy: ReconnectPolicy = ReconnectPolicy(
                initialDelayMilliseconds: 100, maxDelayMilliseconds: 1_000, jitter: 0),
            ping: UInt64 = 0
        ) {
            session = ClientSession(
                settings: .init(
                    clientID: "me", clientName: "test", token: "t0k", reconnect: policy,
                    pingIntervalMilliseconds: ping, handshakeTimeoutMilliseconds: 5_000,
                    firstSeq: 100, randomSeed: 1))
        }

        mutating func take(_ actions: [SessionAction]) {
            for action in actions {
                switch action {
                case .send(let message): sent.append(message)
                case .deliver(_, let cause, let changeset, let view, let version, _):
                    changes.append((cause, changeset, view))
                    if let problem = recorder.record(cause: cause, changeset: changeset, view: view, version: version) {
                        Issue.record("\(problem)")
                    }
                case .complete(_, let seq, let result):
                    #expect(completions[seq] == nil, "write \(seq) completed twice")
                    completions[seq] = result
                default: other.append(action)
                }
            }
        }

        mutating func receive(_ message: Message) {
            now += 1
            take(session.received(message, now: now))
        }

        /// Start, connect, Welcome, subscribe.
        mutating func ready(subscribe: Bool = true) {
            take(session.start(now: now))
            take(session.connected(now: now))
            receive(.welcome(Welcome(serverName: "test", heartbeatMilliseconds: 0)))
            if subscribe { take(session.subscribe(ClientSessionTests.list)) }
        }

        mutating func submit(_ ops: [Operation]) throws(FlowSyncError) -> UInt64 {
            let (seq, actions) = try session.submit(ops, to: ClientSessionTests.list)
            take(actions)
            return seq
        }

        var replica: ListReplica { session.lists[ClientSessionTests.list]! }
        var lastMutate: Mutate? {
            sent.reversed().lazy.compactMap { if case .mutate(let m) = $0 { return m } else { return nil } }.first
        }
    }

    static func snapshot(_ sections: [Section], version: UInt64, reason: Snapshot.Reason = .freshSubscribe) -> Message {
        let director = try! Director(sections: sections)
        return .snapshot(
            Snapshot(
                listName: list, position: ListVersion(epoch: epoch, version: version), digest: director.digest,
                reason: reason, sections: sections))
    }

    /// A Diff taking `from` (at `version`) through `ops`.
    static func diff(
        from director: Director, version: UInt64, _ ops: [Operation], mutations: [MutationID] = []
    ) -> (Message, Director) {
        var next = director
        let changeset = try! next.apply(ops)
        return (
            .diff(
                Diff(
                    listName: list, epoch: epoch, fromVersion: version, toVersion: version + 1, digest: next.digest,
                    changeset: changeset, mutations: mutations)), next
        )
    }

    static let base = [Section(id: "s", rows: [Row(id: "a", text: "A"), Row(id: "b", text: "B")])]

    @Test func helloCarriesIdentityThenSubscribesAfterWelcome() {
        var h = Harness()
        h.take(h.session.start(now: 0))
        h.take(h.session.subscribe(Self.list))
        #expect(h.sent.isEmpty, "nothing before the connection is up")
        h.take(h.session.connected(now: 0))
        guard case .hello(let hello) = h.sent.first else {
            Issue.record("no Hello first")
            return
        }
        #expect(hello.clientID == "me" && hello.authToken == "t0k")
        h.receive(.welcome(Welcome(serverName: "test", heartbeatMilliseconds: 0)))
        #expect(h.sent.count == 2)
        if case .subscribe(let s) = h.sent.last {
            #expect(s.listName == Self.list && s.resumeFrom == nil)
        } else {
            Issue.record("no Subscribe")
        }
    }

    @Test func editsBeforeTheFirstSnapshotAreRebasedOntoIt() throws {
        var h = Harness()
        h.ready()
        // Written against the empty list: a section at the start.
        let seq = try h.submit([.insertSections([Section(id: "mine", rows: [Row(id: "m1")])], at: 0)])
        #expect(h.lastMutate == nil, "no base version yet: nothing is sent")
        #expect(h.replica.view.sections.map(\.id) == ["mine"])
        h.receive(Self.snapshot(Self.base, version: 4))
        #expect(
            h.replica.view.sections.map(\.id) == ["mine", "s"],
            "the edit stays at the start, on top of the server's state")
        let mutate = try #require(h.lastMutate)
        #expect(mutate.seq == seq && mutate.base == ListVersion(epoch: Self.epoch, version: 4))
        #expect(mutate.operations == [.insertSections([Section(id: "mine", rows: [Row(id: "m1")])], at: 0)])
        #expect(h.changes.map(\.cause) == [.local(seq: seq), .initial])
    }

    @Test func ownEchoIsNoVisibleChangeAndCompletesOnce() throws {
        var h = Harness()
        h.ready()
        h.receive(Self.snapshot(Self.base, version: 1))
        let seq = try h.submit([.moveRow(.id("a"), toSection: .id("s"), at: 1)])
        let mutate = try #require(h.lastMutate)
        let changesBefore = h.changes.count
        let (echo, _) = Self.diff(from: h.replica.confirmed, version: 1, mutate.operations, mutations: [mutate.id])
        h.receive(echo)
        // The server agreeing with the optimistic view moves no row: one empty change, which
        // carries the pending count down to 0 (a "saving…" badge must not lag).
        #expect(h.changes.count == changesBefore + 1)
        #expect(h.changes.last?.changeset.isEmpty == true && h.changes.last?.cause == .remote)
        #expect(h.completions[seq] == .success(ListVersion(epoch: Self.epoch, version: 2)))
        h.receive(.ack(Ack(listName: Self.list, seq: seq, committed: ListVersion(epoch: Self.epoch, version: 2))))
        #expect(h.replica.pending.isEmpty && h.replica.view == h.replica.confirmed)
    }

    @Test func rejectRollsBackWithAChangeset() throws {
        var h = Harness()
        h.ready()
        h.receive(Self.snapshot(Self.base, version: 1))
        let before = h.replica.view
        let seq = try h.submit([.insertRows([Row(id: "c", text: "C")], in: .id("s"), at: 0)])
        #expect(h.replica.view.rowCount == 3)
        h.receive(.reject(Reject(listName: Self.list, seq: seq, code: .payloadTooLarge, message: "too big")))
        #expect(h.replica.view == before)
        #expect(
            h.changes.last?.cause == .rollback(seq: seq, error: .rejected(code: .payloadTooLarge, message: "too big")))
        #expect(h.completions[seq] == .failure(.rejected(code: .payloadTooLarge, message: "too big")))
    }

    @Test func remoteBatchUnderPendingWriteRebasesItByIdentity() throws {
        var h = Harness()
        h.ready()
        h.receive(Self.snapshot(Self.base, version: 1))
        // Mine: insert "x" after "a" (index 1). Theirs, committed first: insert "z" at 0.
        let seq = try h.submit([.insertRows([Row(id: "x")], in: .id("s"), at: 1)])
        let (theirs, _) = Self.diff(
            from: h.replica.confirmed, version: 1, [.insertRows([Row(id: "z")], in: .id("s"), at: 0)],
            mutations: [MutationID(clientID: "other", seq: 1)])
        h.receive(theirs)
        #expect(h.replica.view.sections[0].rows.map(\.id) == ["z", "a", "x", "b"], "x stays right after a")
        #expect(h.changes.last?.cause == .remote)
        #expect(h.completions[seq] == nil)
    }

    @Test func queuedWritesGoOneAtATimeBasedOnTheConfirmedVersion() throws {
        var h = Harness()
        h.ready()
        h.receive(Self.snapshot(Self.base, version: 1))
        let first = try h.submit([.insertRows([Row(id: "x")], in: .id("s"), at: 0)])
        let second = try h.submit([.moveRow(.id("x"), toSection: .id("s"), at: 2)])
        #expect(h.sent.filter { if case .mutate = $0 { true } else { false } }.count == 1, "one Mutate in flight")
        let m1 = try #require(h.lastMutate)
        let (echo, _) = Self.diff(from: h.replica.confirmed, version: 1, m1.operations, mutations: [m1.id])
        h.receive(echo)
        h.receive(.ack(Ack(listName: Self.list, seq: first, committed: ListVersion(epoch: Self.epoch, version: 2))))
        let m2 = try #require(h.lastMutate)
        #expect(m2.seq == second && m2.base == ListVersion(epoch: Self.epoch, version: 2))
        // Sent as written against version 2, the operations give exactly the view.
        var atBase = h.replica.confirmed
        try atBase.apply(m2.operations)
        #expect(atBase == h.replica.view)
        #expect(h.replica.view.sections[0].rows.map(\.id) == ["a", "b", "x"])
    }

    @Test func digestMismatchAsksForASnapshotAndReportsTheResync() throws {
        var h = Harness()
        h.ready()
        h.receive(Self.snapshot(Self.base, version: 1))
        let server = h.replica.confirmed
        h.take(h.session.injectDriftForTesting(Self.list))
        let (next, after) = Self.diff(from: server, version: 1, [.replaceRow(.id("a"), with: Row(id: "a", text: "A2"))])
        let sentBefore = h.sent.count
        h.receive(next)
        #expect(h.sent.count == sentBefore + 2)
        if case .unsubscribe = h.sent[sentBefore], case .subscribe(let s) = h.sent[sentBefore + 1] {
            #expect(s.resumeFrom == nil)
        } else {
            Issue.record("expected Unsubscribe then a fresh Subscribe, got \(h.sent.suffix(2))")
        }
        // A stale batch of the old subscription is ignored until the snapshot.
        h.receive(Self.diff(from: after, version: 2, [.removeRows([.id("b")])]).0)
        h.receive(Self.snapshot(after.sections, version: 2))
        #expect(h.changes.last?.cause == .resync(.digestMismatch))
        #expect(h.replica.view == after && h.replica.phase == .live)
    }

    @Test func aGapAsksForASnapshot() {
        var h = Harness()
        h.ready()
        h.receive(Self.snapshot(Self.base, version: 1))
        let (skipped, _) = Self.diff(from: h.replica.confirmed, version: 5, [.removeRows([.id("a")])])
        h.receive(skipped)
        #expect(h.replica.phase == .resyncing(.gap))
    }

    @Test func reconnectResumesAndResendsTheWriteInFlightUnchanged() throws {
        var h = Harness()
        h.ready()
        h.receive(Self.snapshot(Self.base, version: 3))
        let seq = try h.submit([.removeRows([.id("b")])])
        let original = try #require(h.lastMutate)
        h.take(h.session.transportClosed(reason: "cut", now: 10))
        guard case .scheduleReconnect(let delay) = h.other.last else {
            Issue.record("no reconnect scheduled")
            return
        }
        #expect(delay == 100)
        h.sent = []
        h.take(h.session.reconnectDue(now: 110))
        h.take(h.session.connected(now: 110))
        h.receive(.welcome(Welcome(serverName: "test", heartbeatMilliseconds: 0)))
        let subscribe = h.sent.compactMap { if case .subscribe(let s) = $0 { s } else { nil } }.first
        #expect(subscribe?.resumeFrom == ListVersion(epoch: Self.epoch, version: 3))
        #expect(subscribe?.digest == h.replica.confirmed.digest)
        #expect(h.lastMutate == original, "the same (clientID, seq), base and operations")
        // The server had committed it: a catch-up Diff (no mutation IDs), then the
        // idempotent Ack. The write completes once and the view is the server's.
        let (catchUp, after) = Self.diff(from: h.replica.confirmed, version: 3, original.operations)
        h.receive(catchUp)
        h.receive(.ack(Ack(listName: Self.list, seq: seq, committed: ListVersion(epoch: Self.epoch, version: 4))))
        #expect(h.completions[seq] == .success(ListVersion(epoch: Self.epoch, version: 4)))
        #expect(h.replica.pending.isEmpty && h.replica.view == after)
    }

    @Test func backoffGrowsAndHonoursTheServersDelay() {
        var h = Harness()
        h.take(h.session.start(now: 0))
        var delays: [UInt64] = []
        for attempt in 0..<5 {
            h.take(h.session.transportClosed(reason: "refused", now: UInt64(attempt)))
            if case .scheduleReconnect(let ms) = h.other.last { delays.append(ms) }
            h.take(h.session.reconnectDue(now: UInt64(attempt)))
        }
        #expect(delays == [200, 400, 800, 1_000, 1_000])
        h.take(h.session.connected(now: 10))
        h.receive(.welcome(Welcome(serverName: "test", heartbeatMilliseconds: 0)))
        h.receive(.notice(Notice(kind: .shuttingDown, message: "bye", delayMilliseconds: 5_000)))
        h.take(h.session.transportClosed(reason: "server closed", now: 20))
        if case .scheduleReconnect(let ms) = h.other.last { #expect(ms == 5_000) } else { Issue.record("no reconnect") }
    }

    @Test func jitterStaysWithinTheInterval() {
        let policy = ReconnectPolicy(
            initialDelayMilliseconds: 100, maxDelayMilliseconds: 10_000, multiplier: 2, jitter: 0.5)
        for unit in stride(from: 0.0, to: 1.0, by: 0.1) {
            let d = policy.delay(attempt: 3, unit: unit)
            #expect((400...800).contains(d))
        }
        #expect(policy.delay(attempt: 100, unit: 0.99) <= 10_000)
    }

    @Test func fatalServerErrorStopsAndFailsPendingWrites() throws {
        var h = Harness()
        h.ready()
        h.receive(Self.snapshot(Self.base, version: 1))
        let seq = try h.submit([.removeRows([.id("a")])])
        h.receive(
            .error(
                ErrorMessage(
                    code: .unsupportedProtocolVersion, message: "no", reaction: .giveUp, listName: nil,
                    closesConnection: true)))
        h.take(h.session.transportClosed(reason: "closed", now: 50))
        #expect(h.session.phase == .closed)
        #expect(h.completions[seq] == .failure(.connectionRefused(code: .unsupportedProtocolVersion, message: "no")))
        #expect(throws: FlowSyncError.self) { _ = try h.submit([.removeRows([.id("b")])]) }
    }

    @Test func listErrorFailsOnlyThatList() throws {
        var h = Harness()
        h.ready()
        h.take(h.session.subscribe("other"))
        h.receive(
            .error(
                ErrorMessage(
                    code: .unknownList, message: "no such list", reaction: .giveUp, listName: "other",
                    closesConnection: false)))
        #expect(h.session.lists["other"]?.phase == .failed(.listFailed(code: .unknownList, message: "no such list")))
        #expect(h.replica.phase == .subscribing)
        #expect(h.session.phase == .ready)
    }

    @Test func heartbeatPingsThenGivesUpOnASilentServer() {
        var h = Harness(ping: 1_000)
        h.ready(subscribe: false)
        h.now = 0
        h.take(h.session.received(.pong(Pong(nonce: 0)), now: 0))
        h.take(h.session.tick(now: 500))
        #expect(!h.sent.contains { if case .ping = $0 { true } else { false } })
        h.take(h.session.tick(now: 1_000))
        #expect(h.sent.contains { if case .ping = $0 { true } else { false } })
        h.take(h.session.tick(now: 2_000))
        #expect(h.other.contains { if case .disconnect = $0 { true } else { false } })
    }

    @Test func pingsEveryHeartbeatEvenWhileReceivingAndReconnectsAtOnceWhenDead() {
        var h = Harness(ping: 15_000)
        h.take(h.session.start(now: 0))
        h.take(h.session.connected(now: 0))
        // The server's shorter interval wins.
        h.take(h.session.received(.welcome(Welcome(serverName: "test", heartbeatMilliseconds: 400)), now: 0))
        #expect(h.session.heartbeatMilliseconds == 400)
        var pings = 0
        for t in stride(from: UInt64(100), through: 2_000, by: 100) {
            // Frames keep arriving (a busy list), yet the client still pings: the server
            // only counts what it receives.
            h.take(h.session.received(.pong(Pong(nonce: 0)), now: t))
            h.sent = []
            h.take(h.session.tick(now: t))
            pings += h.sent.filter { if case .ping = $0 { true } else { false } }.count
        }
        #expect(pings == 5, "one Ping per 400 ms over 2 s, got \(pings)")
        // Then silence: dead after twice the interval, and the reconnect is immediate.
        h.other = []
        h.take(h.session.tick(now: 2_700))
        #expect(!h.other.contains { if case .disconnect = $0 { true } else { false } })
        h.take(h.session.tick(now: 2_800))
        #expect(h.other.contains { if case .disconnect = $0 { true } else { false } })
        h.take(h.session.transportClosed(reason: "dropped", now: 2_800))
        #expect(h.other.contains { if case .scheduleReconnect(milliseconds: 0) = $0 { true } else { false } })
    }

    @Test func pauseStaysOfflineUntilResumeAndReconnectNowSkipsTheBackoff() {
        var h = Harness()
        h.ready()
        h.receive(Self.snapshot(Self.base, version: 1))
        h.other = []
        h.take(h.session.pause(now: 10))
        #expect(h.other.contains { if case .disconnect = $0 { true } else { false } })
        #expect(h.other.contains { if case .status(.paused) = $0 { true } else { false } })
        // The close that follows schedules nothing; neither does a stale reconnect timer.
        h.other = []
        h.take(h.session.transportClosed(reason: "closed", now: 11))
        h.take(h.session.reconnectDue(now: 12))
        #expect(h.other.isEmpty && h.session.phase == .paused)
        h.take(h.session.resume(now: 13))
        #expect(h.other.contains { if case .connect = $0 { true } else { false } })
        // From a backoff, reconnectNow connects without waiting for the timer.
        h.take(h.session.connected(now: 14))
        h.take(h.session.transportClosed(reason: "cut", now: 15))
        #expect(h.session.phase == .backingOff)
        h.other = []
        h.take(h.session.reconnectNow(now: 16))
        #expect(h.other.contains { if case .connect = $0 { true } else { false } } && h.session.phase == .connecting)
        #expect(h.session.reconnectNow(now: 17).isEmpty, "nothing while connecting")
    }

    @Test func invalidLocalEditChangesNothingAndSendsNothing() {
        var h = Harness()
        h.ready()
        h.receive(Self.snapshot(Self.base, version: 1))
        let sent = h.sent.count
        #expect(throws: FlowSyncError.self) { _ = try h.submit([.removeRows([.id("nope")])]) }
        #expect(h.sent.count == sent && h.replica.pending.isEmpty)
    }
}
