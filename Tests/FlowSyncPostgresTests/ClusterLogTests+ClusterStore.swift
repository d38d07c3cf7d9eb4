import FlowSyncCore
import FlowSyncLoop
import FlowSyncPostgres
import FlowSyncProtocol
import FlowSyncServer
import FlowSyncTestSupport
import Foundation
import Testing

/// The server in cluster mode (`[cluster]`, ``ClusterStore``) against a real PostgreSQL
/// 15 (`PostgresServer`): writes committed through the fenced append, lists recovered
/// from PostgreSQL after a restart, a stale owner fenced. Part of the serialized
/// `ClusterLogTests` suite, so one PostgreSQL runs at a time: three starting at once
/// (`initdb` each) slowed the rest of a full run enough to make
/// `OnDemandCrashTests` fail its first cycle.
extension ClusterLogTests {
    /// The tests' list: "tasks" is the one placement prefers for node "a" among "a",
    /// "b" and "c" (`Placement.owner`), so a test whose first node must own the list
    /// does not depend on whether that node has seen the others' leases yet.
    @Test func theTestsListIsPlacedOnNodeA() {
        #expect(Placement.owner(of: "tasks", among: ["a", "b"]) == "a")
        #expect(Placement.owner(of: "tasks", among: ["a", "b", "c"]) == "a")
    }

    static func clusterConfiguration(
        _ server: PostgresServer, node: String, leaseMilliseconds: Int = 2_000
    ) -> ServerConfiguration {
        var configuration = ServerConfiguration()
        configuration.cluster.postgres = server.conninfo
        configuration.cluster.node = node
        configuration.cluster.leaseMilliseconds = leaseMilliseconds
        return configuration
    }

    static func isSnapshot(_ m: Message) -> Bool {
        if case .snapshot = m { return true }
        return false
    }

    /// Sends a mutation and waits for its Ack or Reject; the committed version, or nil.
    static func write(
        _ client: TestClient, _ list: String, seq: UInt64, _ ops: [FlowSyncCore.Operation]
    ) async -> ListVersion? {
        client.send(
            .mutate(
                Mutate(
                    listName: list, clientID: client.clientID, seq: seq, base: ListVersion(epoch: 0, version: 0),
                    operations: ops)))
        let reply = await client.waitFor { m in
            switch m {
            case .ack(let a): return a.seq == seq
            case .reject(let r): return r.seq == seq
            default: return false
            }
        }
        guard case .ack(let ack)? = reply else { return nil }
        return ack.committed
    }

    static func row(_ id: String) -> [FlowSyncCore.Operation] {
        [.insertRows([Row(id: id, kind: "t", payload: Array("payload of \(id)".utf8))], in: .index(0), at: 0)]
    }

    @Test func clusterModeCommitsWritesToPostgreSQLAndARestartRecoversThem() async throws {
        try await PostgresServer.with { pg in
            let clients = try EventLoopThread()
            defer { _ = clients.shutdown() }
            let first = try await EmbeddedServer(
                configuration: Self.clusterConfiguration(pg, node: "a"), storage: .configured)
            let writer = try await TestClient.connect(port: first.port, on: clients, clientID: "writer")
            writer.send(.subscribe(Subscribe(listName: "tasks")))
            #expect(await writer.waitFor(Self.isSnapshot) != nil, "the list loads (claimed) on first use")
            #expect(
                await Self.write(writer, "tasks", seq: 1, [.insertSections([Section(id: "s")], at: 0)])?.version == 1)
            for seq in 2...5 {
                #expect(
                    await Self.write(writer, "tasks", seq: UInt64(seq), Self.row("r\(seq)"))?.version == UInt64(seq))
            }
            let expected = try #require(await first.withServer { $0.state(of: "tasks") })
            let sql = try await SQLSession.open(pg.conninfo)
            let row = try await sql.query(
                "SELECT head, owner, term, (SELECT count(*) FROM fs_batches WHERE list = 'tasks') FROM fs_lists WHERE list = 'tasks'"
            )
            #expect(row.int(0, 0) == 5 && row.rows.first?[1] == "a" && row.int(0, 2) == 1 && row.int(0, 3) == 5)
            writer.close()
            #expect(await first.stop())

            // The same node again: it claims its own list back at once (term 2) and
            // rebuilds it from fs_batches.
            let second = try await EmbeddedServer(
                configuration: Self.clusterConfiguration(pg, node: "a"), storage: .configured)
            let reader = try await TestClient.connect(port: second.port, on: clients, clientID: "reader")
            reader.send(.subscribe(Subscribe(listName: "tasks")))
            guard case .snapshot(let snapshot)? = await reader.waitFor(Self.isSnapshot) else {
                Issue.record("no snapshot after the restart")
                return
            }
            #expect(snapshot.position == expected.position)
            #expect(snapshot.digest == expected.director.digest)
            #expect(await second.withServer { $0.state(of: "tasks")?.director } == expected.director)
            // And it takes writes at the next version.
            #expect(
                await Self.write(reader, "tasks", seq: 1, Self.row("after"))
                    == ListVersion(epoch: expected.position.epoch, version: 6))
            let after = try await sql.query("SELECT head, term FROM fs_lists WHERE list = 'tasks'")
            #expect(after.int(0, 0) == 6 && after.int(0, 1) == 2)
            // A backup is refused: the lists live in PostgreSQL, not on this node.
            let backup = Shared<BackupReply?>(nil)
            await second.withServer { server in
                server.startBackup(to: "/tmp/flowsync-cluster-backup-never-written") { backup.set($0) }
            }
            #expect(await eventually(timeout: 10) { backup.get() != nil })
            #expect(
                backup.get()?.failure == .backupRefused && backup.get()?.message.contains("PostgreSQL") == true,
                "\(String(describing: backup.get()))")
            #expect(!FileManager.default.fileExists(atPath: "/tmp/flowsync-cluster-backup-never-written"))
            reader.close()
            #expect(await second.stop())
            await sql.close()
        }
    }

    /// Node A owns the list; B takes it (A's lease lapsed, as a paused process's would).
    /// A's next append is fenced: nothing changes in PostgreSQL, A sends no Ack and no
    /// Diff of it, drops the list and closes its writer and subscriber with
    /// server-draining; a new request on A is served from a replica of B's list.
    @Test func clusterModeFencesAStaleOwnerWhichAcknowledgesNothing() async throws {
        try await PostgresServer.with { pg in
            let clients = try EventLoopThread()
            defer { _ = clients.shutdown() }
            let a = try await EmbeddedServer(
                configuration: Self.clusterConfiguration(pg, node: "a"), storage: .configured)
            let writer = try await TestClient.connect(port: a.port, on: clients, clientID: "writer")
            let subscriber = try await TestClient.connect(port: a.port, on: clients, clientID: "subscriber")
            for client in [writer, subscriber] {
                client.send(.subscribe(Subscribe(listName: "tasks")))
                #expect(await client.waitFor(Self.isSnapshot) != nil)
            }
            #expect(
                await Self.write(writer, "tasks", seq: 1, [.insertSections([Section(id: "s")], at: 0)])?.version == 1)
            #expect(
                await subscriber.waitFor {
                    if case .diff(let d) = $0 { return d.to.version == 1 } else { return false }
                } != nil)

            // B's claim after A's lease lapsed, in one statement (A renews every
            // third of its lease, so two statements could race its renewal).
            let sql = try await SQLSession.open(pg.conninfo)
            _ = try await sql.query(
                "INSERT INTO fs_leases (node, expires_at) VALUES ('b', clock_timestamp() + interval '60 seconds')")
            let claimed = try await sql.query(
                """
                WITH lapsed AS (UPDATE fs_leases SET expires_at = clock_timestamp() - interval '1 second' WHERE node = 'a' RETURNING node)
                UPDATE fs_lists SET owner = 'b', term = term + 1 WHERE list = 'tasks' AND EXISTS (SELECT 1 FROM lapsed) RETURNING term
                """)
            #expect(claimed.int(0, 0) == 2)

            writer.send(
                .mutate(
                    Mutate(
                        listName: "tasks", clientID: "writer", seq: 2, base: ListVersion(epoch: 0, version: 0),
                        operations: Self.row("stale"))))
            let closing = await writer.waitFor {
                if case .error(let e) = $0 { return e.code == .serverDraining } else { return false }
            }
            #expect(closing != nil, "the writer is closed with server-draining")
            #expect(
                await subscriber.waitFor {
                    if case .error(let e) = $0 { return e.code == .serverDraining } else { return false }
                } != nil)
            #expect(await eventually { writer.isClosed && subscriber.isClosed })
            #expect(
                !writer.messages.contains { if case .ack(let ack) = $0 { return ack.seq == 2 } else { return false } })
            #expect(
                !writer.messages.contains {
                    if case .diff(let d) = $0 { return d.to.version == 2 } else { return false }
                })
            #expect(
                !subscriber.messages.contains {
                    if case .diff(let d) = $0 { return d.to.version == 2 } else { return false }
                })
            let row = try await sql.query(
                "SELECT head, owner, term, (SELECT count(*) FROM fs_batches WHERE list = 'tasks') FROM fs_lists WHERE list = 'tasks'"
            )
            #expect(
                row.int(0, 0) == 1 && row.rows.first?[1] == "b" && row.int(0, 2) == 2 && row.int(0, 3) == 1,
                "the stale append changed nothing")
            #expect(await a.withServer { $0.state(of: "tasks") == nil }, "A dropped the list")

            // While B's lease lives, A serves the list as a replica of B's: the
            // committed state (version 1), not its stale write.
            let late = try await TestClient.connect(port: a.port, on: clients, clientID: "late")
            late.send(.subscribe(Subscribe(listName: "tasks")))
            let answer = await late.waitFor { if case .error = $0 { return true } else { return Self.isSnapshot($0) } }
            guard case .snapshot(let replica)? = answer else {
                Issue.record("A did not serve the list as a replica: \(String(describing: answer))")
                return
            }
            #expect(replica.position.version == 1 && replica.sections.flatMap(\.rows).isEmpty)
            late.close()
            #expect(await a.stop())
            await sql.close()
        }
    }

    /// The connection is cut while an append waits (on a lock the test holds): its
    /// outcome is unknown. The store reconnects and reads the list's row back; the
    /// append did not commit, so nothing is acknowledged, the list is dropped (its
    /// memory is ahead of PostgreSQL) and its writer closed with server-draining; the
    /// next use loads it again, at version 1.
    @Test func clusterModeResolvesAnAppendCutOffByALostConnectionByReadingHeadBack() async throws {
        try await PostgresServer.with { pg in
            let clients = try EventLoopThread()
            defer { _ = clients.shutdown() }
            let a = try await EmbeddedServer(
                configuration: Self.clusterConfiguration(pg, node: "a"), storage: .configured)
            let writer = try await TestClient.connect(port: a.port, on: clients, clientID: "writer")
            writer.send(.subscribe(Subscribe(listName: "tasks")))
            #expect(await writer.waitFor(Self.isSnapshot) != nil)
            #expect(
                await Self.write(writer, "tasks", seq: 1, [.insertSections([Section(id: "s")], at: 0)])?.version == 1)

            let locker = try await SQLSession.open(pg.conninfo)
            let observer = try await SQLSession.open(pg.conninfo)
            // Holds fs_lists for 3 s in one statement (its own transaction).
            async let held = locker.query(
                "DO $$ BEGIN LOCK TABLE fs_lists IN ACCESS EXCLUSIVE MODE; PERFORM pg_sleep(3); END $$")
            #expect(
                try await Self.poll(
                    observer,
                    "SELECT count(*) FROM pg_locks WHERE relation = 'fs_lists'::regclass AND mode = 'AccessExclusiveLock' AND granted"
                ) { $0.int(0, 0) == 1 })
            writer.send(
                .mutate(
                    Mutate(
                        listName: "tasks", clientID: "writer", seq: 2, base: ListVersion(epoch: 0, version: 0),
                        operations: Self.row("cut"))))
            // A's append waits on the lock: cut its connection there.
            #expect(
                try await Self.poll(
                    observer,
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%WITH advanced%'"
                ) { $0.int(0, 0) == 1 })
            let cut = try await observer.query(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%WITH advanced%'"
            )
            #expect(cut.int(0, 0) == 1)
            _ = try await held

            #expect(
                await writer.waitFor {
                    if case .error(let e) = $0 { return e.code == .serverDraining } else { return false }
                } != nil)
            #expect(await eventually { writer.isClosed })
            #expect(
                !writer.messages.contains { if case .ack(let ack) = $0 { return ack.seq == 2 } else { return false } })
            let row = try await observer.query(
                "SELECT head, term, (SELECT count(*) FROM fs_batches WHERE list = 'tasks') FROM fs_lists WHERE list = 'tasks'"
            )
            #expect(row.int(0, 0) == 1 && row.int(0, 2) == 1)

            let again = try await TestClient.connect(port: a.port, on: clients, clientID: "again")
            again.send(.subscribe(Subscribe(listName: "tasks")))
            guard case .snapshot(let snapshot)? = await again.waitFor(Self.isSnapshot) else {
                Issue.record("the list did not load again")
                return
            }
            #expect(snapshot.position.version == 1)
            #expect(await Self.write(again, "tasks", seq: 1, Self.row("after"))?.version == 2)
            again.close()
            #expect(await a.stop())
            await locker.close()
            await observer.close()
        }
    }

    /// With `auto_create_lists = false` a cluster node serves the lists PostgreSQL holds
    /// and answers unknown-list for any other, without creating its row.
    @Test func clusterModeWithoutAutoCreateServesOnlyStoredLists() async throws {
        try await PostgresServer.with { pg in
            let clients = try EventLoopThread()
            defer { _ = clients.shutdown() }
            let creator = try await EmbeddedServer(
                configuration: Self.clusterConfiguration(pg, node: "a"), storage: .configured)
            let writer = try await TestClient.connect(port: creator.port, on: clients, clientID: "writer")
            #expect(
                await Self.write(writer, "tasks", seq: 1, [.insertSections([Section(id: "s")], at: 0)])?.version == 1)
            writer.close()
            #expect(await creator.stop())

            var strict = Self.clusterConfiguration(pg, node: "a")
            strict.autoCreateLists = false
            let server = try await EmbeddedServer(configuration: strict, storage: .configured)
            let reader = try await TestClient.connect(port: server.port, on: clients, clientID: "reader")
            reader.send(.subscribe(Subscribe(listName: "tasks")))
            guard case .snapshot(let snapshot)? = await reader.waitFor(Self.isSnapshot) else {
                Issue.record("the stored list was not served")
                return
            }
            #expect(snapshot.position.version == 1)
            reader.send(.subscribe(Subscribe(listName: "nope")))
            let refusal = await reader.waitFor {
                if case .error(let e) = $0 { return e.listName == "nope" } else { return false }
            }
            guard case .error(let error)? = refusal else {
                Issue.record("no answer for an unknown list")
                return
            }
            #expect(error.code == .unknownList && !error.closesConnection)
            let sql = try await SQLSession.open(pg.conninfo)
            #expect(try await sql.query("SELECT count(*) FROM fs_lists WHERE list = 'nope'").int(0, 0) == 0)
            reader.close()
            #expect(await server.stop())
            await sql.close()
        }
    }

    /// Runs `sql` until `condition` holds (every 20 ms, at most 30 s); a statement that
    /// fails (a table the nodes have not created yet) counts as not yet.
    static func poll(_ session: SQLSession, _ sql: String, _ condition: (PostgresResult) -> Bool) async throws -> Bool {
        for _ in 0..<1_500 {
            if let result = try? await session.query(sql), condition(result) { return true }
            try await Task.sleep(for: .milliseconds(20))
        }
        return false
    }
}

/// A test's own connection to PostgreSQL, on a loop thread of its own.
final class SQLSession: @unchecked Sendable {
    let thread: EventLoopThread
    /// Used on `thread` only.
    private let connection: PostgresConnection

    private init(thread: EventLoopThread, connection: PostgresConnection) {
        self.thread = thread
        self.connection = connection
    }

    static func open(_ conninfo: String) async throws -> SQLSession {
        let thread = try EventLoopThread()
        let result: Result<PostgresConnection, PostgresError> = await runOnLoop(thread) { done in
            PostgresConnection.connect(loop: thread.loop, conninfo: conninfo) { done($0) }
        }
        switch result {
        case .success(let connection): return SQLSession(thread: thread, connection: connection)
        case .failure(let error):
            _ = thread.shutdown()
            throw error
        }
    }

    func query(_ sql: String, _ parameters: [PostgresValue] = []) async throws -> PostgresResult {
        let connection = self.connection
        let result: Result<PostgresResult, PostgresError> = await runOnLoop(thread) { done in
            connection.send(sql, parameters) { done($0) }
        }
        return try result.get()
    }

    func close() async {
        let connection = self.connection
        await runOnLoop(thread) { (done: @escaping (Void) -> Void) in
            connection.close()
            done(())
        }
        _ = thread.shutdown()
    }
}

/// Runs `start` on the loop thread and waits for the value it hands to `done` (once).
func runOnLoop<T>(_ thread: EventLoopThread, _ start: @escaping (@escaping (T) -> Void) -> Void) async -> T {
    let job = LoopCarried(start)
    return await withCheckedContinuation { continuation in
        let resume = LoopCarried(continuation)
        let resumed = LoopCarried(ResumedFlag())
        thread.loop.execute {
            job.value { value in
                guard !resumed.value.done else { return }
                resumed.value.done = true
                resume.value.resume(returning: LoopCarried(value).value)
            }
        }
    }
}

/// Carries a loop-confined value to the loop thread and back.
struct LoopCarried<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}

final class ResumedFlag {
    var done = false
}
