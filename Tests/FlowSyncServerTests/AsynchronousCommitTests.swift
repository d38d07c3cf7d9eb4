import FlowSyncCore
import FlowSyncLoop
import FlowSyncProtocol
import FlowSyncTestSupport
import Testing

@testable import FlowSyncServer

/// A ``CommittingStore`` whose commits complete only when the test says so (on the
/// loop thread, through ``EmbeddedServer/withServer(_:)``): the batches go to an
/// ``InMemoryStore`` at once, their completions wait.
final class HeldCommitStore: CommittingStore {
    let inner = InMemoryStore(snapshotEveryBatches: 0)
    private(set) var waiting: [(StoredBatch, (CommitOutcome) -> Void)] = []
    /// When set, every commit completes inside submit with this outcome.
    var inlineOutcome: CommitOutcome?

    func submit(_ batch: StoredBatch, completion: @escaping (CommitOutcome) -> Void) {
        if let inlineOutcome {
            if case .committed = inlineOutcome { _ = try? inner.append(batch) }
            completion(inlineOutcome)
            return
        }
        waiting.append((batch, completion))
    }

    /// Completes the oldest waiting commit; false when none waits.
    @discardableResult
    func completeOldest(_ outcome: CommitOutcome) -> Bool {
        guard !waiting.isEmpty else { return false }
        let (batch, completion) = waiting.removeFirst()
        if case .committed = outcome { _ = try? inner.append(batch) }
        completion(outcome)
        return true
    }

    func recover(_ options: RecoveryOptions) throws(StoreError) -> RecoveryReport { try inner.recover(options) }
    func append(_ batch: StoredBatch) throws(StoreError) -> Bool {
        preconditionFailure("Internal inconsistency in HeldCommitStore: the server appends through submit")
    }
    var hasUnsyncedWrites: Bool { false }
    func sync() throws(StoreError) {}
    func compact(_ snapshot: StoredSnapshot) throws(StoreError) { try inner.compact(snapshot) }
    func startEpoch(_ snapshot: StoredSnapshot) throws(StoreError) { try inner.startEpoch(snapshot) }
    func close() throws(StoreError) { try inner.close() }
    func abandon() { inner.abandon() }
}

extension EmbeddedServer {
    /// Waits until `condition`, evaluated on the loop thread, holds (a bounded wait of
    /// at most `timeout` seconds, polled every 5 ms).
    func until(timeout: Double = 30, _ condition: @escaping @Sendable (Server) -> Bool) async -> Bool {
        for _ in 0..<Int(timeout * 200) {
            if await withServer(condition) { return true }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return false
    }
}

/// The server's asynchronous commit path end to end: frames of a batch wait for its
/// commit; a failed commit takes the storage-failure path.
@Suite(.serialized, .timeLimit(.minutes(2))) struct AsynchronousCommitTests {
    func isDiff(_ m: Message, to version: UInt64) -> Bool {
        if case .diff(let d) = m { return d.to.version == version }
        return false
    }

    func isAck(_ m: Message, seq: UInt64) -> Bool {
        if case .ack(let a) = m { return a.seq == seq }
        return false
    }

    /// Starts a server over a held-commit store; returns it with the store's box.
    func start() async throws -> (EmbeddedServer, LoopConfined<HeldCommitStore?>) {
        let box = LoopConfined<HeldCommitStore?>(nil)
        let server = try await EmbeddedServer(
            storage: .custom({
                let store = HeldCommitStore()
                box.value = store
                return store
            }))
        return (server, box)
    }

    @Test func diffsAndAcksLeaveOnlyAfterTheCommitReturnsDiffFirst() async throws {
        let clients = try EventLoopThread()
        defer { _ = clients.shutdown() }
        let (server, box) = try await start()
        let writer = try await TestClient.connect(port: server.port, on: clients, clientID: "writer")
        let subscriber = try await TestClient.connect(port: server.port, on: clients, clientID: "subscriber")
        for client in [writer, subscriber] {
            client.send(.subscribe(Subscribe(listName: "todo")))
            #expect(await client.waitFor { if case .snapshot = $0 { return true } else { return false } } != nil)
        }
        writer.send(
            .mutate(
                Mutate(
                    listName: "todo", clientID: "writer", seq: 1, base: ListVersion(epoch: 0, version: 0),
                    operations: [.insertSections([Section(id: "s")], at: 0)])))
        // The batch was sealed and submitted: its Diff (to both) and Ack are held.
        #expect(await server.until { _ in box.value!.waiting.count == 1 })
        #expect(await server.withServer { $0.commitGate.heldCount } == 3)
        #expect(!writer.messages.contains { isAck($0, seq: 1) || isDiff($0, to: 1) })
        #expect(!subscriber.messages.contains { isDiff($0, to: 1) })

        #expect(await server.withServer { _ in box.value!.completeOldest(.committed) })
        #expect(await subscriber.waitFor { isDiff($0, to: 1) } != nil)
        #expect(await writer.waitFor { isAck($0, seq: 1) } != nil)
        let order = writer.messages.compactMap { m -> String? in
            isDiff(m, to: 1) ? "diff" : isAck(m, seq: 1) ? "ack" : nil
        }
        #expect(order == ["diff", "ack"])
        #expect(await server.withServer { $0.commitGate.isIdle })
        writer.close()
        subscriber.close()
        #expect(await server.stop())
    }

    /// A snapshot taken while a commit is pending shows that batch: it waits too.
    @Test func aSubscriberJoiningDuringACommitWaitsForIt() async throws {
        let clients = try EventLoopThread()
        defer { _ = clients.shutdown() }
        let (server, box) = try await start()
        let writer = try await TestClient.connect(port: server.port, on: clients, clientID: "writer")
        writer.send(.subscribe(Subscribe(listName: "todo")))
        #expect(await writer.waitFor { if case .snapshot = $0 { return true } else { return false } } != nil)
        writer.send(
            .mutate(
                Mutate(
                    listName: "todo", clientID: "writer", seq: 1, base: ListVersion(epoch: 0, version: 0),
                    operations: [.insertSections([Section(id: "s")], at: 0)])))
        #expect(await server.until { _ in box.value!.waiting.count == 1 })
        let late = try await TestClient.connect(port: server.port, on: clients, clientID: "late")
        late.send(.subscribe(Subscribe(listName: "todo")))
        #expect(await server.until { $0.commitGate.heldCount == 3 }, "the writer's Diff and Ack, and the late snapshot")
        #expect(!late.messages.contains { if case .snapshot = $0 { return true } else { return false } })
        #expect(await server.withServer { _ in box.value!.completeOldest(.committed) })
        let snapshot = await late.waitFor { if case .snapshot = $0 { return true } else { return false } }
        guard case .snapshot(let s)? = snapshot else {
            Issue.record("no snapshot: \(String(describing: snapshot))")
            return
        }
        #expect(s.position.version == 1)
        #expect(await writer.waitFor { isAck($0, seq: 1) } != nil)
        writer.close()
        late.close()
        #expect(await server.stop())
    }

    /// A store may complete inside submit: committed, the frames leave at once; fenced,
    /// nothing of the batch leaves, and its writer (not a subscriber) is closed with
    /// server-draining instead of waiting for an Ack forever.
    @Test func aCommitCompletedInsideSubmitIsCarriedOutAfterIt() async throws {
        let clients = try EventLoopThread()
        defer { _ = clients.shutdown() }
        let (server, box) = try await start()
        await server.withServer { _ in box.value!.inlineOutcome = .committed }
        let subscriber = try await TestClient.connect(port: server.port, on: clients, clientID: "subscriber")
        subscriber.send(.subscribe(Subscribe(listName: "todo")))
        #expect(await subscriber.waitFor { if case .snapshot = $0 { return true } else { return false } } != nil)
        let writer = try await TestClient.connect(port: server.port, on: clients, clientID: "writer")
        writer.send(
            .mutate(
                Mutate(
                    listName: "todo", clientID: "writer", seq: 1, base: ListVersion(epoch: 0, version: 0),
                    operations: [.insertSections([Section(id: "s")], at: 0)])))
        #expect(await writer.waitFor { isAck($0, seq: 1) } != nil)
        #expect(await subscriber.waitFor { isDiff($0, to: 1) } != nil)

        await server.withServer { _ in box.value!.inlineOutcome = .fenced(.claimedElsewhere(owner: "b")) }
        writer.send(
            .mutate(
                Mutate(
                    listName: "todo", clientID: "writer", seq: 2, base: ListVersion(epoch: 0, version: 0),
                    operations: [.insertSections([Section(id: "t")], at: 0)])))
        let draining: (Message) -> Bool = {
            if case .error(let e) = $0 { return e.code == .serverDraining } else { return false }
        }
        guard case .error(let closing)? = await writer.waitFor(draining) else {
            Issue.record("the writer of a fenced batch is not closed")
            return
        }
        #expect(
            closing.message
                == "list \"todo\" is now owned by node b (another node claimed it); reconnect and resume, any node serves it"
        )
        #expect(await subscriber.waitFor(draining) != nil, "and the list's subscriber")
        #expect(await eventually { writer.isClosed && subscriber.isClosed })
        #expect(!writer.messages.contains { isAck($0, seq: 2) })
        #expect(!subscriber.messages.contains { isDiff($0, to: 2) })
        #expect(await server.withServer { $0.state(of: "todo") == nil }, "the list was dropped")
        #expect(await server.withServer { $0.commitGate.isIdle })
        #expect(await server.stop())
    }

    /// A graceful stop while a batch is committing: the stop waits for the commit, the
    /// batch's Ack leaves, then the shutting-down notice; the store closes after it.
    @Test func aGracefulStopSendsTheAcksOfBatchesStillCommitting() async throws {
        let clients = try EventLoopThread()
        defer { _ = clients.shutdown() }
        let (server, box) = try await start()
        let writer = try await TestClient.connect(port: server.port, on: clients, clientID: "writer")
        writer.send(
            .mutate(
                Mutate(
                    listName: "todo", clientID: "writer", seq: 1, base: ListVersion(epoch: 0, version: 0),
                    operations: [.insertSections([Section(id: "s")], at: 0)])))
        #expect(await server.until { _ in box.value!.waiting.count == 1 })
        async let stopped = server.stop()
        #expect(await server.until { $0.lifecycle.isShuttingDown })
        #expect(!writer.isClosed, "the connection stays open while its batch commits")
        #expect(await server.withServer { _ in box.value!.completeOldest(.committed) })
        #expect(await writer.waitFor { isAck($0, seq: 1) } != nil)
        #expect(
            await writer.waitFor {
                if case .error(let e) = $0 { return e.code == .serverShuttingDown } else { return false }
            } != nil)
        let order = writer.messages.compactMap { m -> String? in
            if isAck(m, seq: 1) { return "ack" }
            if case .notice = m { return "notice" }
            return nil
        }
        #expect(order == ["ack", "notice"])
        #expect(await stopped)
    }

    @Test func aFailedCommitSendsNothingAndTakesTheStorageFailurePath() async throws {
        let clients = try EventLoopThread()
        defer { _ = clients.shutdown() }
        let (server, box) = try await start()
        let writer = try await TestClient.connect(port: server.port, on: clients, clientID: "writer")
        writer.send(.subscribe(Subscribe(listName: "todo")))
        #expect(await writer.waitFor { if case .snapshot = $0 { return true } else { return false } } != nil)
        writer.send(
            .mutate(
                Mutate(
                    listName: "todo", clientID: "writer", seq: 1, base: ListVersion(epoch: 0, version: 0),
                    operations: [.insertSections([Section(id: "s")], at: 0)])))
        #expect(await server.until { _ in box.value!.waiting.count == 1 })
        #expect(await server.withServer { _ in box.value!.completeOldest(.failed(.unusable("test: commit failed"))) })
        #expect(await eventually { writer.isClosed })
        #expect(server.storageFailure != nil)
        #expect(!writer.messages.contains { isAck($0, seq: 1) || isDiff($0, to: 1) })
        _ = await server.stop()
    }
}
