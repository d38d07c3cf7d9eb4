import FlowSyncCore
import FlowSyncLoop
import FlowSyncProtocol
import FlowSyncServer
import FlowSyncTestSupport
import Foundation
import Testing

/// Large work off the loop thread (issue #15; docs/ARCHITECTURE.md, "Event loop", rules
/// 12–14): snapshots of large lists are built on a worker while the list goes on
/// committing, shared by the joiners of one version; compaction snapshots are written
/// off the loop; a shutdown waits for work in flight. Event-driven: every wait is on a
/// message or a server counter, never on a clock.
@Suite(.serialized, .timeLimit(.minutes(3))) struct OffLoopSnapshotTests {
    static let list = "big"

    /// A server whose list `big` starts with `rows` rows in two sections, seeded through
    /// the store (recovered before the listener opens), so no test pays for a huge frame.
    static func seededServer(
        rows: Int, configuration: ServerConfiguration = ServerConfiguration(), storage: EmbeddedServer.Storage? = nil
    ) async throws -> EmbeddedServer {
        var configuration = configuration
        configuration.director = DirectorLimits(maxRows: 10_000_000)
        configuration.hardLimitBytes = 1 << 30
        let seeded: EmbeddedServer.Storage = .custom { [configuration] in
            let store = InMemoryStore(snapshotEveryBatches: configuration.snapshotEveryBatches)
            try! store.startEpoch(seedSnapshot(rows: rows))
            return store
        }
        return try await EmbeddedServer(configuration: configuration, storage: storage ?? seeded)
    }

    static func seedSnapshot(rows: Int) -> StoredSnapshot {
        let half = rows / 2
        let sections = [
            Section(
                id: "a",
                rows: (0..<half).map { Row(id: "a\($0)", kind: "item", text: "{\"n\":\($0),\"title\":\"row \($0)\"}") }),
            Section(
                id: "b",
                rows: (half..<rows).map {
                    Row(id: "b\($0)", kind: "item", text: "{\"n\":\($0),\"title\":\"row \($0)\"}")
                }),
        ]
        let director = try! Director(sections: sections, limits: DirectorLimits(maxRows: 10_000_000))
        return StoredSnapshot(
            listName: list, position: ListVersion(epoch: 42, version: 1), digest: director.digest, sections: sections,
            dedupe: [])
    }

    static func statistics(_ server: EmbeddedServer) async -> ServerStatistics {
        await server.withServer { $0.statistics }
    }

    /// Uncompressed frames (always valid), so several messages can go out in one write.
    static func frames(_ messages: [Message]) -> [UInt8] {
        let encoder = FrameEncoder(configuration: .disabled)
        return messages.flatMap { encoder.encode($0) }
    }

    static func insert(_ n: Int, tag: String) -> [FlowSyncCore.Operation] {
        [.insertRows([Row(id: "\(tag)-\(n)", kind: "item", text: "{\"w\":\(n)}")], in: .id("a"), at: n % 7)]
    }

    @Test func joinerOfALargeListWhileWritesContinueGetsTheSnapshotThenEveryDiff() async throws {
        var configuration = ServerConfiguration()
        configuration.offloadSnapshotRows = 1_000
        let server = try await Self.seededServer(rows: 60_000, configuration: configuration)
        let clients = try EventLoopThread()
        let writer = try await TestClient.connect(port: server.port, on: clients, clientID: "writer")
        let joiner = try await TestClient.connect(port: server.port, on: clients, clientID: "joiner")
        let start = try #require(await position(of: server, Self.list))

        // Subscribe and two writes in ONE write: the server reads them in one callback,
        // starts the build at `start`, then seals the writes in the same turn's check
        // hook — before any completion can run (a later turn). So at least two batches
        // are committed while the snapshot is being built, whatever the timing.
        let writes = (1...2).map { n in
            Message.mutate(
                Mutate(
                    listName: Self.list, clientID: joiner.clientID, seq: UInt64(n), base: start,
                    operations: Self.insert(n, tag: "joiner")))
        }
        joiner.sendRaw(Self.frames([.subscribe(Subscribe(listName: Self.list, resumeFrom: nil, digest: nil))] + writes))
        // Meanwhile another client keeps writing, each write after the previous ack.
        var base = start
        for n in 1...30 {
            base = try await commit(writer, Self.list, seq: UInt64(n), base: base, Self.insert(n, tag: "writer"))
        }
        let final = try #require(await position(of: server, Self.list))
        #expect(
            await joiner.waitFor(timeout: 30) { diff($0, to: final.version) != nil } != nil,
            "the joiner reaches the last version")

        let received = joiner.messages.filter {
            switch $0 {
            case .snapshot, .diff: return true
            default: return false
            }
        }
        guard case .snapshot(let snapshot)? = received.first else {
            Issue.record("the first list frame must be the snapshot, got \(String(describing: received.first))")
            return
        }
        #expect(snapshot.position == start, "the snapshot is of the version the subscriber joined at")
        var replica = Replica()
        replica.apply(received, list: Self.list)
        #expect(replica.problems.isEmpty, "\(replica.problems.prefix(3))")
        #expect(replica.snapshotsApplied == 1)
        #expect(replica.diffsApplied == Int(final.version - start.version), "one diff per batch, none missing")
        #expect(replica.position == final)
        #expect(replica.director.digest == (await digest(of: server, Self.list)))
        let stats = await Self.statistics(server)
        #expect(stats.framesBuiltOffLoop == 1)
        #expect(stats.snapshotsEncoded == 1)
        writer.close()
        joiner.close()
        #expect(await server.stop())
        _ = clients.shutdown()
    }

    @Test func joinersAtOneVersionShareOneEncode() async throws {
        var configuration = ServerConfiguration()
        configuration.offloadSnapshotRows = 1_000
        let server = try await Self.seededServer(rows: 40_000, configuration: configuration)
        let clients = try EventLoopThread()
        var joiners: [TestClient] = []
        for k in 0..<30 {
            joiners.append(try await TestClient.connect(port: server.port, on: clients, clientID: "j\(k)"))
        }
        let before = await Self.statistics(server)
        let subscribe = Self.frames([.subscribe(Subscribe(listName: Self.list, resumeFrom: nil, digest: nil))])
        for joiner in joiners { joiner.sendRaw(subscribe) }
        var positions: Set<ListVersion> = []
        for joiner in joiners {
            let message = await joiner.waitFor(timeout: 30, isSnapshot)
            if case .snapshot(let s)? = message {
                positions.insert(s.position)
            } else {
                Issue.record("no snapshot for \(joiner.clientID)")
            }
        }
        let after = await Self.statistics(server)
        #expect(positions.count == 1)
        #expect(after.snapshotsSent - before.snapshotsSent == 30)
        // Joiners during the build join it; joiners after it read the cached frame.
        #expect(after.snapshotsEncoded - before.snapshotsEncoded == 1, "30 joiners at one version cost one encode")
        #expect(after.framesBuiltOffLoop - before.framesBuiltOffLoop == 1)
        for joiner in joiners { joiner.close() }
        #expect(await server.stop())
        _ = clients.shutdown()
    }

    @Test func smallListsStayInlineBelowTheThreshold() async throws {
        let server = try await Self.seededServer(rows: 500)  // default threshold 2,000
        let clients = try EventLoopThread()
        let joiner = try await TestClient.connect(port: server.port, on: clients)
        #expect(await subscribe(joiner, Self.list) != nil)
        let stats = await Self.statistics(server)
        #expect(stats.framesBuiltOffLoop == 0)
        #expect(stats.snapshotsEncoded == 1)
        joiner.close()
        #expect(await server.stop())
        _ = clients.shutdown()
    }

    @Test func resumeOfALargeListIsBuiltOffTheLoopWithoutAGap() async throws {
        var configuration = ServerConfiguration()
        configuration.offloadSnapshotRows = 1_000
        let server = try await Self.seededServer(rows: 20_000, configuration: configuration)
        let clients = try EventLoopThread()
        let writer = try await TestClient.connect(port: server.port, on: clients, clientID: "writer")
        let start = try #require(await position(of: server, Self.list))
        var base = start
        for n in 1...5 {
            base = try await commit(writer, Self.list, seq: UInt64(n), base: base, Self.insert(n, tag: "w"))
        }
        let resumer = try await TestClient.connect(port: server.port, on: clients, clientID: "resumer")
        let stateAtStart = Self.seedSnapshot(rows: 20_000)
        // Resume from `start` and write in the same read: the catch-up diff is built off
        // the loop from `start` to `base`; the write's batch is held and follows it.
        let write = Message.mutate(
            Mutate(listName: Self.list, clientID: "resumer", seq: 1, base: base, operations: Self.insert(99, tag: "r")))
        resumer.sendRaw(
            Self.frames([
                .subscribe(Subscribe(listName: Self.list, resumeFrom: start, digest: stateAtStart.digest)), write,
            ]))
        let final = ListVersion(epoch: base.epoch, version: base.version + 1)
        #expect(await resumer.waitFor(timeout: 30) { diff($0, to: final.version) != nil } != nil)
        var replica = Replica()
        replica.director = try Director(sections: stateAtStart.sections, limits: replica.director.limits)
        replica.position = start
        replica.apply(resumer.messages, list: Self.list)
        #expect(replica.problems.isEmpty, "\(replica.problems.prefix(3))")
        #expect(replica.snapshotsApplied == 0 && replica.diffsApplied == 2, "one catch-up diff, then the held batch")
        #expect(replica.director.digest == (await digest(of: server, Self.list)))
        let stats = await Self.statistics(server)
        #expect(stats.framesBuiltOffLoop == 1 && stats.catchUpDiffs == 1)
        writer.close()
        resumer.close()
        #expect(await server.stop())
        _ = clients.shutdown()
    }

    @Test func compactionWhileWritingLosesNothing() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "flowsync-offloop-\(UUID().uuidString)"
        ).path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var configuration = ServerConfiguration()
        configuration.snapshotEveryBatches = 4
        configuration.snapshotEveryBytes = 0
        configuration.fsyncPolicy = .always
        configuration.director = DirectorLimits(maxRows: 10_000_000)
        let server = try await EmbeddedServer(configuration: configuration, storage: .file(directory: directory))
        let clients = try EventLoopThread()
        let writer = try await TestClient.connect(port: server.port, on: clients, clientID: "writer")
        var base = ListVersion(epoch: 0, version: 0)
        base = try await commit(writer, Self.list, seq: 1, base: base, [.insertSections([Section(id: "a")], at: 0)])
        // Large enough that each snapshot takes a while; writes go on meanwhile, one
        // after each ack, so batches are appended while snapshots are written.
        let chunk = (0..<5_000).map {
            Row(id: "seed\($0)", kind: "item", text: "{\"n\":\($0),\"title\":\"seed row \($0)\"}")
        }
        base = try await commit(writer, Self.list, seq: 2, base: base, [.insertRows(chunk, in: .id("a"), at: 0)])
        for n in 3...60 {
            base = try await commit(writer, Self.list, seq: UInt64(n), base: base, Self.insert(n, tag: "w"))
        }
        let expected = try #require(await server.withServer { $0.state(of: Self.list) })
        var snapshots = 0
        for _ in 0..<1_000 where snapshots == 0 {
            snapshots = await Self.statistics(server).storeSnapshots
            await Task.yield()
        }
        #expect(snapshots >= 1, "compactions were written during the writes")
        writer.close()
        // The stop waits for compactions still in flight before it closes the store.
        #expect(await server.stop())
        let leftovers = (try? FileManager.default.subdirectoriesAndFiles(under: directory)) ?? []
        #expect(!leftovers.contains { $0.hasSuffix(".tmp") }, "no temporary snapshot is left behind: \(leftovers)")

        let reopened = try await EmbeddedServer(configuration: configuration, storage: .file(directory: directory))
        let recovered = try #require(await reopened.withServer { $0.state(of: Self.list) })
        #expect(recovered.position == expected.position)
        #expect(recovered.director.digest == expected.director.digest)
        #expect(recovered.director.rowCount == 5_000 + 58)
        #expect(await reopened.stop())
        _ = clients.shutdown()
    }

    @Test func shutdownWithASnapshotInFlightIsClean() async throws {
        var configuration = ServerConfiguration()
        configuration.offloadSnapshotRows = 1_000
        configuration.shutdownGraceMilliseconds = 1_000
        let server = try await Self.seededServer(rows: 200_000, configuration: configuration)
        let clients = try EventLoopThread()
        let joiner = try await TestClient.connect(port: server.port, on: clients)
        joiner.send(.subscribe(Subscribe(listName: Self.list, resumeFrom: nil, digest: nil)))
        // Stop as soon as the build is running (a 200,000-row encode takes far longer
        // than one poll of the server).
        #expect(await Self.waitForBuild(server), "the shutdown starts while the build runs")
        #expect(await server.stop(), "the shutdown waits for the build, then the loop closes with nothing open")
        #expect(await joiner.waitFor(timeout: 10) { errorMessage($0)?.code == .serverShuttingDown } != nil)
        #expect(joiner.decodeError == nil)
        joiner.close()
        _ = clients.shutdown()
    }

    @Test func aLaggingSubscriberOfALargeListCatchesUpOffTheLoop() async throws {
        var configuration = ServerConfiguration()
        configuration.offloadSnapshotRows = 1_000
        configuration.lowWatermarkBytes = 16 << 10
        configuration.highWatermarkBytes = 64 << 10
        configuration.compressionLevel = 0  // incompressible-size frames fill buffers fast
        let server = try await Self.seededServer(rows: 20_000, configuration: configuration)
        let clients = try EventLoopThread()
        let slow = try await TestClient.connect(port: server.port, on: clients, clientID: "slow")
        let writer = try await TestClient.connect(port: server.port, on: clients, clientID: "writer")
        #expect(await subscribe(slow, Self.list) != nil)
        slow.pauseReading()
        var base = try #require(await position(of: server, Self.list))
        // ~16 MiB of payloads: past the kernel buffers and the high watermark, so the
        // subscriber lags (its batches are skipped).
        let payload = [UInt8](repeating: 0x41, count: 32 << 10)
        func write(_ seq: Int) async throws {
            var ops: [FlowSyncCore.Operation] = [
                .insertRows([Row(id: "big\(seq)", payload: payload)], in: .id("a"), at: 0)
            ]
            if seq > 1 { ops.append(.removeRows([.id("big\(seq - 1)")])) }
            base = try await commit(writer, Self.list, seq: UInt64(seq), base: base, ops)
        }
        for seq in 1...500 { try await write(seq) }
        #expect(await Self.statistics(server).slowConsumerEvents >= 1, "the stalled subscriber lags")
        // Reading again: its catch-up (a composed diff of a 20,000-row list) is built off
        // the loop; the writes that go on meanwhile are held and follow it.
        slow.resumeReading()
        for seq in 501...520 { try await write(seq) }
        #expect(
            await slow.waitFor(timeout: 30) { m in
                if case .diff(let d) = m { return d.to == base }
                if case .snapshot(let s) = m { return s.position == base }
                return false
            } != nil, "the subscriber catches up to the last version")
        var replica = Replica()
        replica.apply(slow.messages, list: Self.list)
        #expect(replica.problems.isEmpty, "\(replica.problems.prefix(3))")
        #expect(replica.position == base)
        #expect(replica.director.digest == (await digest(of: server, Self.list)))
        let stats = await Self.statistics(server)
        #expect(stats.framesBuiltOffLoop >= 2, "the first snapshot and the catch-up were built off the loop")
        #expect(stats.catchUpDiffs + stats.catchUpSnapshots >= 1)
        for c in [slow, writer] { c.close() }
        #expect(await server.stop())
        _ = clients.shutdown()
    }

    /// Waits (on server events, each poll one loop job) until a frame build is in flight.
    static func waitForBuild(_ server: EmbeddedServer) async -> Bool {
        for _ in 0..<10_000 {
            let (started, inFlight) = await server.withServer {
                ($0.statistics.framesBuiltOffLoop, $0.offloadsInFlight)
            }
            if started > 0 { return inFlight > 0 }
            await Task.yield()
        }
        return false
    }
}

extension FileManager {
    /// Every path under `directory`, recursively.
    func subdirectoriesAndFiles(under directory: String) throws -> [String] {
        guard let enumerator = enumerator(atPath: directory) else { return [] }
        return enumerator.compactMap { $0 as? String }
    }
}
