import FlowSyncCore
import FlowSyncLoop
import FlowSyncProtocol
import FlowSyncServer
import FlowSyncTestSupport
import Testing

func isSnapshot(_ m: Message) -> Bool { if case .snapshot = m { return true } else { return false } }
func isWelcome(_ m: Message) -> Bool { if case .welcome = m { return true } else { return false } }
func ack(_ m: Message, seq: UInt64) -> Ack? { if case .ack(let a) = m, a.seq == seq { return a } else { return nil } }
func reject(_ m: Message, seq: UInt64) -> Reject? {
    if case .reject(let r) = m, r.seq == seq { return r } else { return nil }
}
func diff(_ m: Message, to version: UInt64) -> Diff? {
    if case .diff(let d) = m, d.toVersion == version { return d } else { return nil }
}
func errorMessage(_ m: Message) -> ErrorMessage? { if case .error(let e) = m { return e } else { return nil } }

/// Subscribes and returns the snapshot's position.
func subscribe(
    _ client: TestClient, _ list: String, resume: ListVersion? = nil, digest: StateDigest? = nil
) async -> Message? {
    client.send(.subscribe(Subscribe(listName: list, resumeFrom: resume, digest: digest)))
    return await client.waitFor { m in
        switch m {
        case .snapshot(let s): return s.listName == list
        case .diff(let d): return d.listName == list && d.from == resume
        default: return false
        }
    }
}

/// Sends a mutation and waits for its ack or reject.
@discardableResult
func mutate(_ client: TestClient, _ list: String, seq: UInt64, base: ListVersion, _ ops: [Operation]) async -> Message?
{
    client.send(.mutate(Mutate(listName: list, clientID: client.clientID, seq: seq, base: base, operations: ops)))
    return await client.waitFor { ack($0, seq: seq) != nil || reject($0, seq: seq) != nil }
}

struct NoAck: Error, CustomStringConvertible {
    let seq: UInt64
    let got: Message?
    var description: String { "no ack for seq \(seq); got \(got.map { "\($0)" } ?? "nothing")" }
}

/// Sends a mutation that must be acknowledged; returns the committed version.
func commit(
    _ client: TestClient, _ list: String, seq: UInt64, base: ListVersion, _ ops: [Operation]
) async throws -> ListVersion {
    let reply = await mutate(client, list, seq: seq, base: base, ops)
    guard let a = reply.flatMap({ ack($0, seq: seq) }) else { throw NoAck(seq: seq, got: reply) }
    return a.committed
}

func position(of server: EmbeddedServer, _ list: String) async -> ListVersion? {
    await server.withServer { $0.state(of: list)?.position }
}

func digest(of server: EmbeddedServer, _ list: String) async -> StateDigest? {
    await server.withServer { $0.state(of: list)?.director.digest }
}

@Suite(.serialized, .timeLimit(.minutes(3))) struct EndToEndTests {
    @Test(arguments: Wire.allCases)
    func subscribeSnapshotWriteAndEverySubscriberConverges(wire: Wire) async throws {
        let server = try await wire.server()
        let clients = try EventLoopThread()
        let writer = try await wire.connect(server, on: clients, clientID: "writer")
        var subscribers: [TestClient] = []
        for k in 0..<5 { subscribers.append(try await wire.connect(server, on: clients, clientID: "sub\(k)")) }
        for s in subscribers { #expect(await subscribe(s, "todo") != nil) }

        var base = ListVersion(epoch: 0, version: 0)
        if case .snapshot(let snap)? = subscribers[0].messages.first(where: isSnapshot) { base = snap.position }
        var generator = DirectorGenerator(seed: 77)
        var expected = Director()
        for seq in 1...40 {
            let ops = generator.group(for: expected)
            let reply = await mutate(writer, "todo", seq: UInt64(seq), base: base, ops)
            if let a = reply.flatMap({ ack($0, seq: UInt64(seq)) }) {
                base = a.committed
                _ = try? expected.apply(ops)
            }
        }
        #expect(base.version > 20, "most random groups are valid")
        let serverDigest = await digest(of: server, "todo")
        #expect(serverDigest == expected.digest)
        for s in subscribers {
            #expect(await s.waitFor { diff($0, to: base.version) != nil } != nil)
            var replica = Replica()
            replica.apply(s.messages, list: "todo")
            #expect(replica.problems.isEmpty, "\(replica.problems)")
            #expect(replica.director == expected)
            #expect(replica.position == base)
        }
        for c in subscribers + [writer] { c.close() }
        #expect(await server.stop())
        #expect(clients.shutdown())
    }

    @Test func severalListsAreIndependent() async throws {
        let server = try await EmbeddedServer()
        let clients = try EventLoopThread()
        let client = try await TestClient.connect(port: server.port, on: clients)
        var positions: [String: ListVersion] = [:]
        for name in ["a", "b", "c"] {
            guard case .snapshot(let s)? = await subscribe(client, name) else {
                Issue.record("no snapshot for \(name)")
                return
            }
            positions[name] = s.position
        }
        for (k, name) in ["a", "b", "c"].enumerated() {
            for j in 0...k {
                let reply = await mutate(
                    client, name, seq: UInt64(10 * k + j), base: positions[name]!,
                    [.insertSections([Section(id: "s\(j)")], at: 0)])
                guard let a = reply.flatMap({ ack($0, seq: UInt64(10 * k + j)) }) else {
                    Issue.record("no ack")
                    return
                }
                positions[name] = a.committed
            }
        }
        for (k, name) in ["a", "b", "c"].enumerated() {
            #expect(await server.withServer { $0.state(of: name)?.director.sections.count } == k + 1)
            var replica = Replica()
            replica.apply(client.messages, list: name)
            #expect(replica.problems.isEmpty)
            #expect(replica.director.sections.count == k + 1)
        }
        #expect(Set(positions.values.map(\.epoch)).count == 3, "each list has its own epoch")
        client.close()
        #expect(await server.stop())
        #expect(clients.shutdown())
    }

    @Test(arguments: Wire.allCases)
    func twoHundredSubscribersOnOneList(wire: Wire) async throws {
        let server = try await wire.server()
        let clients = try EventLoopThread()
        var subscribers: [TestClient] = []
        for k in 0..<200 {
            let c = try await wire.connect(server, on: clients, clientID: "s\(k)")
            c.send(.subscribe(Subscribe(listName: "feed", resumeFrom: nil, digest: nil)))
            subscribers.append(c)
        }
        for c in subscribers { #expect(await c.waitFor(isSnapshot) != nil) }
        let writer = try await wire.connect(server, on: clients, clientID: "w")
        var base = try #require(await position(of: server, "feed"))
        for seq in 1...10 {
            let ops: [Operation] =
                seq == 1
                ? [.insertSections([Section(id: "main")], at: 0)]
                : [.insertRows([Row(id: "r\(seq)", text: "{\"n\":\(seq)}")], in: .id("main"), at: 0)]
            guard
                let a = await mutate(writer, "feed", seq: UInt64(seq), base: base, ops).flatMap({
                    ack($0, seq: UInt64(seq))
                })
            else {
                Issue.record("no ack for \(seq)")
                return
            }
            base = a.committed
        }
        let expected = await server.withServer { $0.state(of: "feed")!.director }
        for c in subscribers {
            #expect(await c.waitFor { diff($0, to: base.version) != nil } != nil)
            var replica = Replica()
            replica.apply(c.messages, list: "feed")
            #expect(replica.problems.isEmpty && replica.director == expected)
        }
        let frames = await server.withServer { $0.statistics.framesSent }
        #expect(frames >= 200 * 10, "every subscriber got every batch")
        for c in subscribers + [writer] { c.close() }
        #expect(await server.stop())
        #expect(clients.shutdown())
    }

    @Test(arguments: Wire.allCases)
    func slowSubscriberIsPausedThenCaughtUpWhileOthersCarryOn(wire: Wire) async throws {
        var configuration = ServerConfiguration()
        configuration.lowWatermarkBytes = 16 << 10
        configuration.highWatermarkBytes = 64 << 10
        configuration.hardLimitBytes = 64 << 20
        configuration.compressionLevel = 0  // incompressible-size frames fill buffers fast
        let server = try await wire.server(configuration)
        let clients = try EventLoopThread()
        let slow = try await wire.connect(server, on: clients, clientID: "slow")
        let fast = try await wire.connect(server, on: clients, clientID: "fast")
        let writer = try await wire.connect(server, on: clients, clientID: "writer")
        #expect(await subscribe(slow, "big") != nil)
        #expect(await subscribe(fast, "big") != nil)
        slow.pauseReading()
        var base = try #require(await position(of: server, "big"))
        base = try await commit(writer, "big", seq: 0, base: base, [.insertSections([Section(id: "s")], at: 0)])
        // ~16 MiB of row payloads: far past the kernel buffers and the high watermark.
        let payload = [UInt8](repeating: 0x41, count: 32 << 10)
        for seq in 1...500 {
            // Keep one row: insert the new one, remove the previous one.
            var ops: [Operation] = [.insertRows([Row(id: "r\(seq)", payload: payload)], in: .id("s"), at: 0)]
            if seq > 1 { ops.append(.removeRows([.id("r\(seq - 1)")])) }
            guard
                let a = await mutate(writer, "big", seq: UInt64(seq), base: base, ops).flatMap({
                    ack($0, seq: UInt64(seq))
                })
            else {
                Issue.record("no ack \(seq)")
                return
            }
            base = a.committed
        }
        let stats = await server.withServer { $0.statistics }
        #expect(stats.slowConsumerEvents >= 1, "the stalled subscriber was paused")
        // The fast subscriber saw every batch, in order.
        #expect(await fast.waitFor { diff($0, to: base.version) != nil } != nil)
        var fastReplica = Replica()
        fastReplica.apply(fast.messages, list: "big")
        #expect(fastReplica.problems.isEmpty && fastReplica.position == base)
        // Memory stayed bounded: 16 MiB were committed, but the stalled subscriber's
        // queue stopped near the high watermark (64 KiB) plus one frame.
        let queued = await server.withServer { $0.largestQueue }
        #expect(queued < 1 << 20, "largest queue \(queued) bytes")
        slow.resumeReading()
        #expect(
            await slow.waitFor(timeout: 20) { m in
                if case .diff(let d) = m { return d.to == base }
                if case .snapshot(let s) = m { return s.position == base }
                return false
            } != nil, "the slow subscriber catches up once it reads again")
        var slowReplica = Replica()
        slowReplica.apply(slow.messages, list: "big")
        #expect(slowReplica.problems.isEmpty, "\(slowReplica.problems.prefix(3))")
        #expect(slowReplica.position == base)
        #expect(slowReplica.director == fastReplica.director)
        #expect(slowReplica.diffsApplied < 500, "it got a catch-up, not every batch")
        for c in [slow, fast, writer] { c.close() }
        #expect(await server.stop())
        #expect(clients.shutdown())
    }

    /// A subscriber that stops reading while frames keep coming is closed with its code,
    /// and the control client on the same list sees every batch.
    @Test(arguments: [
        (ErrorCode.writeTimeout, 64 << 20, 500, Wire.plaintext),  // never over the hard limit: the deadline decides
        (ErrorCode.slowConsumer, 1 << 20, 60_000, Wire.plaintext),  // hard limit reached long before the deadline
        (ErrorCode.writeTimeout, 64 << 20, 500, Wire.tls),  // the same with ciphertext queued (issue #32)
        (ErrorCode.slowConsumer, 1 << 20, 60_000, Wire.tls),
    ])
    func stalledSubscriberIsClosedWithItsCode(code: ErrorCode, hardLimit: Int, deadline: Int, wire: Wire) async throws {
        var configuration = ServerConfiguration()
        configuration.lowWatermarkBytes = 1 << 10
        configuration.highWatermarkBytes = hardLimit  // no pausing: the close path is what is tested
        configuration.hardLimitBytes = hardLimit
        configuration.compressionLevel = 0
        configuration.writeDeadlineMilliseconds = deadline
        let server = try await wire.server(configuration)
        let clients = try EventLoopThread()
        let stalled = try await wire.connect(server, on: clients, clientID: "stalled")
        let control = try await wire.connect(server, on: clients, clientID: "control")
        #expect(await subscribe(stalled, "l") != nil)
        #expect(await subscribe(control, "l") != nil)
        stalled.pauseReading()
        var base = try #require(await position(of: server, "l"))
        base = try await commit(control, "l", seq: 0, base: base, [.insertSections([Section(id: "s")], at: 0)])
        // ~19 MiB: more than loopback's kernel buffers (a few MiB each way) can absorb.
        let payload = [UInt8](repeating: 0x42, count: 60 << 10)
        for seq in 1...320 where !stalled.isClosed || seq % 40 == 0 {
            base = try await commit(
                control, "l", seq: UInt64(seq), base: base,
                [.setHeader(.id("s"), payload + [UInt8(truncatingIfNeeded: seq)])])
        }
        // The server closed it (a paused client cannot notice: it reads nothing)...
        var closedWithCode = 0
        for _ in 0..<200 {
            closedWithCode = await server.withServer { $0.statistics.closedByReason[code.rawValue] ?? 0 }
            if closedWithCode == 1 { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(closedWithCode == 1, "closed with \(code)")
        // ...and once it reads again it finds the end of the stream.
        stalled.resumeReading()
        #expect(await eventually(timeout: 10) { stalled.isClosed })
        #expect(await server.withServer { $0.connectionCount } == 1, "only the control client remains")
        #expect(await server.withServer { $0.largestQueue } < 4 << 20, "the control client's queue stays small")
        #expect(await control.waitFor { diff($0, to: base.version) != nil } != nil)
        var replica = Replica()
        replica.apply(control.messages, list: "l")
        #expect(replica.problems.isEmpty && replica.position == base)
        control.close()
        #expect(await server.stop())
        #expect(clients.shutdown())
    }

    @Test(arguments: Wire.allCases)
    func resumeGetsExactlyTheMissedBatchesOrASnapshot(wire: Wire) async throws {
        var configuration = ServerConfiguration()
        configuration.historyMaxBatches = 20
        let server = try await wire.server(configuration)
        let clients = try EventLoopThread()
        let writer = try await wire.connect(server, on: clients, clientID: "w")
        var sub = try await wire.connect(server, on: clients, clientID: "r")
        #expect(await subscribe(sub, "l") != nil)
        var base = try #require(await position(of: server, "l"))
        base = try await commit(writer, "l", seq: 0, base: base, [.insertSections([Section(id: "s")], at: 0)])
        for seq in 1...5 {
            base = try await commit(
                writer, "l", seq: UInt64(seq), base: base, [.insertRows([Row(id: "a\(seq)")], in: .id("s"), at: 0)])
        }
        #expect(await sub.waitFor { diff($0, to: base.version) != nil } != nil)
        var replica = Replica()
        replica.apply(sub.messages, list: "l")
        sub.close()
        // Missed while away: 5 more batches.
        for seq in 6...10 {
            base = try await commit(
                writer, "l", seq: UInt64(seq), base: base,
                [
                    .insertRows([Row(id: "a\(seq)")], in: .id("s"), at: 0),
                    .moveRow(.id("a1"), toSection: .id("s"), at: 0),
                ])
        }
        sub = try await wire.connect(server, on: clients, clientID: "r")
        guard
            case .diff(let catchUp)? = await subscribe(
                sub, "l", resume: replica.position, digest: replica.director.digest)
        else {
            Issue.record("expected a catch-up diff")
            return
        }
        #expect(catchUp.from == replica.position && catchUp.to == base, "exactly from where it left to now")
        replica.apply(.diff(catchUp), list: "l")
        #expect(replica.problems.isEmpty)
        #expect(replica.director == (await server.withServer { $0.state(of: "l")!.director }))
        sub.close()

        // Up to date: an empty diff confirms the position.
        let again = try await wire.connect(server, on: clients, clientID: "r2")
        guard case .diff(let same)? = await subscribe(again, "l", resume: base) else {
            Issue.record("expected an empty diff")
            return
        }
        #expect(same.changeset.isEmpty && same.from == base && same.to == base)

        // Another epoch, or a position older than the history: a snapshot that says so.
        let other = try await wire.connect(server, on: clients, clientID: "r3")
        guard
            case .snapshot(let s1)? = await subscribe(
                other, "l", resume: ListVersion(epoch: base.epoch &+ 1, version: 3))
        else {
            Issue.record("epoch")
            return
        }
        #expect(s1.reason == .epochChanged && s1.position == base)
        for seq in 11...40 {
            base = try await commit(writer, "l", seq: UInt64(seq), base: base, [.setHeader(.id("s"), [UInt8(seq)])])
        }
        let old = try await wire.connect(server, on: clients, clientID: "r4")
        guard case .snapshot(let s2)? = await subscribe(old, "l", resume: ListVersion(epoch: base.epoch, version: 2))
        else {
            Issue.record("too old")
            return
        }
        #expect(s2.reason == .resumeTooOld && s2.position == base)
        // A drifted replica (wrong digest) is resynced.
        let drifted = try await wire.connect(server, on: clients, clientID: "r5")
        guard case .snapshot(let s3)? = await subscribe(drifted, "l", resume: base, digest: StateDigest(rawValue: 42))
        else {
            Issue.record("drift")
            return
        }
        #expect(s3.reason == .resyncRequested)
        for c in [writer, again, other, old, drifted] { c.close() }
        #expect(await server.stop())
        #expect(clients.shutdown())
    }

    @Test(arguments: Wire.allCases)
    func gracefulShutdownTellsClientsAndClosesCleanly(wire: Wire) async throws {
        let server = try await wire.server()
        let clients = try EventLoopThread()
        var connected: [TestClient] = []
        for k in 0..<10 {
            let c = try await wire.connect(server, on: clients, clientID: "c\(k)")
            #expect(await subscribe(c, "l") != nil)
            connected.append(c)
        }
        #expect(await server.stop(), "loop closed with no handle left")
        for c in connected {
            #expect(await eventually { c.isClosed })
            #expect(
                c.messages.contains {
                    if case .notice(let n) = $0 { return n.kind == .shuttingDown } else { return false }
                })
            #expect(c.messages.contains { errorMessage($0)?.code == .serverShuttingDown })
        }
        #expect(clients.shutdown())
    }
}
