import FlowSyncCore
import FlowSyncLoop
import FlowSyncProcess
import FlowSyncProtocol
import FlowSyncServer
import FlowSyncTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Issue #18, test 2, with two real `flowsyncd` processes on one PostgreSQL: the owner
/// is stopped (SIGSTOP) past its lease, another node takes the list and writes, then the
/// old owner continues (SIGCONT) with a write it had been sent meanwhile. Its stale
/// append changes nothing, and it sends no Ack and no Diff for it.
/// Part of the serialized `ClusterLogTests` suite: one PostgreSQL at a time.
extension ClusterLogTests {
    /// A node with a 1 s lease; `extra` is appended to its config file (a `[tls]` group).
    static func daemon(_ pg: PostgresServer, node: String, extra: String = "") async throws -> DaemonProcess {
        try await daemon(conninfo: pg.conninfo, node: node, leaseMilliseconds: 1_000, extra: extra)
    }

    /// The `[cluster]` group of a test node's config file.
    static func clusterConfigText(conninfo: String, node: String, leaseMilliseconds: Int) -> String {
        "[cluster]\npostgres = \"\(conninfo)\"\nnode = \"\(node)\"\nlease_ms = \(leaseMilliseconds)\n"
    }

    /// A `flowsyncd` node on `conninfo`; with `connected`, started only once it logged
    /// "cluster: connected" (its lease is taken), as `scripts/cluster.sh up` waits.
    static func daemon(
        conninfo: String, node: String, leaseMilliseconds: Int, connected: Bool = false, extra: String = ""
    ) async throws -> DaemonProcess {
        var options = DaemonProcess.Options(binary: try BuiltProduct.path("flowsyncd"))
        options.configText =
            clusterConfigText(conninfo: conninfo, node: node, leaseMilliseconds: leaseMilliseconds) + extra
        options.logLevel = ProcessInfo.processInfo.environment["FLOWSYNC_TEST_LOG_LEVEL"] ?? "info"
        let daemon = try await DaemonProcess.start(options)
        if connected {
            let up = await daemon.child.waitForLine(timeout: .seconds(30)) {
                $0.contains("cluster: connected") ? true : nil
            }
            if up != true { Issue.record("node \(node) did not connect: \(daemon.output)") }
        }
        return daemon
    }

    /// A client of `daemon`; a refused connection records the daemon's output.
    static func connectClient(
        _ daemon: DaemonProcess, _ thread: EventLoopThread, _ clientID: String
    ) async throws -> TestClient {
        do {
            return try await TestClient.connect(port: daemon.port, on: thread, clientID: clientID)
        } catch {
            Issue.record("\(clientID) cannot connect (daemon exited: \(daemon.hasExited)): \(daemon.output)")
            throw error
        }
    }

    static func isDraining(_ m: Message) -> Bool {
        if case .error(let e) = m { return e.code == .serverDraining }
        return false
    }

    /// Stops `daemon` (SIGSTOP) and waits, bounded (30 s), until its lease has lapsed on
    /// PostgreSQL's clock.
    static func stopUntilItsLeaseLapsed(_ daemon: DaemonProcess, node: String, _ sql: SQLSession) async throws {
        daemon.signal(SIGSTOP)
        var lapsed = false
        for _ in 0..<600 where !lapsed {
            let row = try await sql.query(
                "SELECT expires_at < clock_timestamp() FROM fs_leases WHERE node = '\(node)'")
            lapsed = row.rows.first?[0] == "t"
            if !lapsed { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(lapsed, "\(node)'s lease never lapsed")
    }

    /// Reads `list`'s row until `until` holds of "owner term" (bounded: 300 looks, 50 ms
    /// apart), checking at every look that the log holds `batches` batches and its head
    /// is there; the owners seen, in order (`none` for no owner).
    static func ownersOf(
        _ list: String, _ sql: SQLSession, batches: Int64, until: (String) -> Bool
    ) async throws -> [String] {
        var owners: [String] = []
        for _ in 0..<300 where !(owners.last.map(until) ?? false) {
            let row = try await sql.query(
                "SELECT head, owner, term, (SELECT count(*) FROM fs_batches WHERE list = '\(list)') FROM fs_lists WHERE list = '\(list)'"
            )
            #expect(
                row.int(0, 0) == batches && row.int(0, 3) == batches, "the log holds \(batches) batches: \(row.rows)")
            let owner = "\(row.rows.first?[1] ?? "none") \(row.int(0, 2) ?? 0)"
            if owners.last != owner { owners.append(owner) }
            if !until(owner) { try await Task.sleep(for: .milliseconds(50)) }
        }
        return owners
    }

    /// A new subscriber's snapshot of `list` on `daemon`, or `nil` (recorded) when none
    /// comes.
    static func freshSnapshot(
        of list: String, on daemon: DaemonProcess, _ clients: EventLoopThread
    ) async throws -> (reader: TestClient, snapshot: Snapshot)? {
        let reader = try await connectClient(daemon, clients, "reader")
        reader.send(.subscribe(Subscribe(listName: list)))
        guard case .snapshot(let snapshot)? = await reader.waitFor(ClusterLogTests.isSnapshot) else {
            Issue.record("no snapshot of \(list): \(daemon.output)")
            return nil
        }
        return (reader, snapshot)
    }

    @Test func zombieOwnerStoppedPastItsLeaseChangesNothingAndIsNeverAcknowledged() async throws {
        try await PostgresServer.with { pg in
            let clients = try EventLoopThread()
            defer { _ = clients.shutdown() }
            let a = try await Self.daemon(pg, node: "a")
            let b = try await Self.daemon(pg, node: "b")
            let sql = try await SQLSession.open(pg.conninfo)

            // A owns the list: a writer and a subscriber on A, one write.
            let writerA = try await Self.connectClient(a, clients, "writer-a")
            let subscriberA = try await Self.connectClient(a, clients, "subscriber-a")
            for client in [writerA, subscriberA] {
                client.send(.subscribe(Subscribe(listName: "tasks")))
                #expect(await client.waitFor(ClusterLogTests.isSnapshot) != nil, "\(a.output)")
            }
            #expect(
                await ClusterLogTests.write(writerA, "tasks", seq: 1, [.insertSections([Section(id: "s")], at: 0)])?
                    .version == 1)
            #expect(
                await subscriberA.waitFor {
                    if case .diff(let d) = $0 { return d.to.version == 1 } else { return false }
                } != nil)

            // A stops; its lease lapses on PostgreSQL's clock (waited for, bounded).
            try await Self.stopUntilItsLeaseLapsed(a, node: "a", sql)

            // B takes the list (term 2) and writes version 2.
            let writerB = try await Self.connectClient(b, clients, "writer-b")
            writerB.send(.subscribe(Subscribe(listName: "tasks")))
            guard case .snapshot(let atB)? = await writerB.waitFor(ClusterLogTests.isSnapshot) else {
                Issue.record("B did not serve the list: \(b.output)")
                _ = await a.kill9()
                return
            }
            #expect(atB.position.version == 1)
            #expect(await ClusterLogTests.write(writerB, "tasks", seq: 1, ClusterLogTests.row("from-b"))?.version == 2)

            // A write to the stopped A waits in its socket; then A continues.
            writerA.send(
                .mutate(
                    Mutate(
                        listName: "tasks", clientID: "writer-a", seq: 2, base: ListVersion(epoch: 0, version: 0),
                        operations: ClusterLogTests.row("stale"))))
            a.signal(SIGCONT)
            #expect(
                await writerA.waitFor(Self.isDraining) != nil, "A closes its writer with server-draining: \(a.output)")
            #expect(await subscriberA.waitFor(Self.isDraining) != nil, "and its subscriber")
            #expect(await eventually { writerA.isClosed && subscriberA.isClosed })
            // A's last word has come: no Ack of seq 2, no Diff past version 1, to anyone.
            #expect(
                !writerA.messages.contains { if case .ack(let ack) = $0 { return ack.seq == 2 } else { return false } })
            for client in [writerA, subscriberA] {
                #expect(
                    !client.messages.contains {
                        if case .diff(let d) = $0 { return d.to.version >= 2 } else { return false }
                    })
            }
            // The stale append changed nothing, at every look: the log holds B's two
            // batches and no term-1 write. A is the list's preferred node ("tasks" among
            // a and b), and its lease is live again, so B hands the list back to it
            // (docs/CLUSTER.md, "A misplaced list moves when its preferred node appears"):
            // a new claim, term 3, that appends nothing. Whether that has happened yet
            // when the zombie's clients are closed depends on the machine's load (a soak
            // saw it), so the log is read until it has, bounded.
            #expect(Placement.owner(of: "tasks", among: ["a", "b"]) == "a")
            let handedBack = ContinuousClock.now
            let owners = try await Self.ownersOf("tasks", sql, batches: 2) { $0 == "a 3" }
            // Owned by B at term 2 until A has it at term 3 (released in between, no owner).
            #expect(
                owners.last == "a 3" && Set(owners).isSubset(of: ["b 2", "none 2", "a 3"]),
                "owners seen: \(owners)\na: \(a.output)\nb: \(b.output)")
            print("zombie: owners \(owners), handed back \(ContinuousClock.now - handedBack) after the clients closed")

            // B's list holds B's write and not A's.
            guard let (reader, final) = try await Self.freshSnapshot(of: "tasks", on: b, clients) else { return }
            let ids = final.sections.flatMap { $0.rows.map(\.id) }
            #expect(final.position.version == 2 && ids == ["from-b"], "\(ids)")
            #expect(a.output.contains("list fenced"), "\(a.output)")

            for client in [writerB, reader] { client.close() }
            let endedA = await a.terminate()
            let endedB = await b.terminate()
            #expect(endedA == .exited(0) && endedB == .exited(0), "\(endedA) \(endedB)")
            await sql.close()
        }
    }

    /// Issue #33 (docs/CLUSTER.md, Placement, rule 6): a zombie owner that writes nothing
    /// after it continues. A owns the list and is stopped past its lease; B takes it
    /// (term 2) and writes version 2; A continues, still believing it owns the list at
    /// term 1 — its subscriber still at version 1, since an owner follows no one. A is
    /// the list's preferred node and live again, so B hands the list back: the nudge
    /// reaches A as an inbox notification for a list it "owns", and the inbox read finds
    /// that belief stale. A drops its copy (its subscriber is closed with 5001) and
    /// claims the list (term 3). Before, the nudge was taken for forwarded writes: the
    /// list stayed without an owner and A's subscriber at version 1, told nothing.
    @Test func aZombieOwnerHandedItsListBackDropsItsStaleCopyAndClaimsIt() async throws {
        try await PostgresServer.with { pg in
            let clients = try EventLoopThread()
            defer { _ = clients.shutdown() }
            let a = try await Self.daemon(pg, node: "a")
            let b = try await Self.daemon(pg, node: "b")
            let sql = try await SQLSession.open(pg.conninfo)
            #expect(Placement.owner(of: "tasks", among: ["a", "b"]) == "a")

            let subscriberA = try await Self.connectClient(a, clients, "subscriber-a")
            subscriberA.send(.subscribe(Subscribe(listName: "tasks")))
            #expect(await subscriberA.waitFor(ClusterLogTests.isSnapshot) != nil, "\(a.output)")
            let writerA = try await Self.connectClient(a, clients, "writer-a")
            #expect(
                await ClusterLogTests.write(writerA, "tasks", seq: 1, [.insertSections([Section(id: "s")], at: 0)])?
                    .version == 1)
            writerA.close()
            #expect(await subscriberA.waitFor(Self.isDiff(of: "tasks", to: 1)) != nil)

            try await Self.stopUntilItsLeaseLapsed(a, node: "a", sql)
            let writerB = try await Self.connectClient(b, clients, "writer-b")
            writerB.send(.subscribe(Subscribe(listName: "tasks")))
            #expect(await writerB.waitFor(ClusterLogTests.isSnapshot) != nil, "\(b.output)")
            #expect(await ClusterLogTests.write(writerB, "tasks", seq: 1, ClusterLogTests.row("from-b"))?.version == 2)

            a.signal(SIGCONT)
            let resumed = ContinuousClock.now
            guard case .error(let closed)? = await subscriberA.waitFor(timeout: 10, Self.isDraining) else {
                Issue.record(
                    "A's stale subscriber was never told: \(subscriberA.messages)\na: \(a.output)\nb: \(b.output)")
                _ = await a.kill9()
                return
            }
            #expect(closed.message.contains("tasks"), "\(closed.message)")
            #expect(
                !subscriberA.messages.contains(where: Self.isDiff(of: "tasks", to: 2)), "nothing from the stale copy")
            let owners = try await Self.ownersOf("tasks", sql, batches: 2) { $0 == "a 3" }
            #expect(owners.last == "a 3", "owners seen: \(owners)\na: \(a.output)\nb: \(b.output)")
            print("zombie without a write: told after \(ContinuousClock.now - resumed), owners \(owners)")

            // A serves B's write, and a write through B now goes to A (version 3).
            guard let (reader, atA) = try await Self.freshSnapshot(of: "tasks", on: a, clients) else { return }
            #expect(atA.position.version == 2 && atA.sections.flatMap { $0.rows.map(\.id) } == ["from-b"])
            #expect(await ClusterLogTests.write(writerB, "tasks", seq: 2, ClusterLogTests.row("again"))?.version == 3)

            for client in [writerB, reader] { client.close() }
            let endedA = await a.terminate()
            let endedB = await b.terminate()
            #expect(endedA == .exited(0) && endedB == .exited(0), "\(endedA) \(endedB)")
            await sql.close()
        }
    }
}
