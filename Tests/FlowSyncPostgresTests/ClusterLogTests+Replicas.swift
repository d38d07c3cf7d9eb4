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

/// Issue #18: a node that does not own a list serves it from a replica that follows the
/// owner's batches through PostgreSQL, forwards writes to the owner (Diff before Ack on
/// the node the writer is on), takes the list over when the owner dies, and lets
/// subscribers resume there with a Diff. Part of the serialized `ClusterLogTests` suite.
extension ClusterLogTests {
    static func isDiff(to version: UInt64) -> (Message) -> Bool {
        { if case .diff(let d) = $0 { return d.to.version == version } else { return false } }
    }

    static func rowIDs(_ director: Director?) -> [String] {
        director?.sections.flatMap { $0.rows.map(\.id) } ?? []
    }

    @Test func aReplicaFollowsTheOwnerAndForwardsItsWritesWithTheDiffBeforeTheAck() async throws {
        try await PostgresServer.with { pg in
            let clients = try EventLoopThread()
            defer { _ = clients.shutdown() }
            let a = try await EmbeddedServer(
                configuration: Self.clusterConfiguration(pg, node: "a"), storage: .configured)
            let b = try await EmbeddedServer(
                configuration: Self.clusterConfiguration(pg, node: "b"), storage: .configured)
            let writerA = try await TestClient.connect(port: a.port, on: clients, clientID: "writer-a")
            writerA.send(.subscribe(Subscribe(listName: "tasks")))
            #expect(await writerA.waitFor(Self.isSnapshot) != nil)
            #expect(
                await Self.write(writerA, "tasks", seq: 1, [.insertSections([Section(id: "s")], at: 0)])?.version == 1)

            // B does not own the list (A's lease lives): it serves a replica.
            let subscriberB = try await TestClient.connect(port: b.port, on: clients, clientID: "subscriber-b")
            subscriberB.send(.subscribe(Subscribe(listName: "tasks")))
            guard case .snapshot(let first)? = await subscriberB.waitFor(Self.isSnapshot) else {
                Issue.record("B did not serve the list")
                return
            }
            #expect(first.position.version == 1)
            // A's writes reach B's subscriber as Diffs, the same versions, in order.
            for seq in 2...6 {
                #expect(
                    await Self.write(writerA, "tasks", seq: UInt64(seq), Self.row("a\(seq)"))?.version == UInt64(seq))
            }
            #expect(await subscriberB.waitFor(Self.isDiff(to: 6)) != nil)
            let versions = subscriberB.messages.compactMap { m -> UInt64? in
                if case .diff(let d) = m { return d.to.version } else { return nil }
            }
            #expect(versions == [2, 3, 4, 5, 6])

            // A write on B: forwarded to A, committed there; B's writer (subscribed on
            // B) gets the Diff before the Ack.
            let writerB = try await TestClient.connect(port: b.port, on: clients, clientID: "writer-b")
            writerB.send(.subscribe(Subscribe(listName: "tasks")))
            #expect(await writerB.waitFor(Self.isSnapshot) != nil)
            let committed = await Self.write(writerB, "tasks", seq: 1, Self.row("from-b"))
            #expect(committed?.version == 7 && committed?.epoch == first.position.epoch)
            let diffAt = writerB.messages.firstIndex(where: Self.isDiff(to: 7))
            let ackAt = writerB.messages.firstIndex {
                if case .ack(let ack) = $0 { return ack.seq == 1 } else { return false }
            }
            #expect(diffAt != nil && ackAt != nil && diffAt! < ackAt!, "Diff before Ack on the forwarding node")
            #expect(await writerA.waitFor(Self.isDiff(to: 7)) != nil, "the owner's subscriber sees it too")
            // A retry of the same (clientID, seq) is answered with the same version.
            #expect(await Self.write(writerB, "tasks", seq: 1, Self.row("from-b")) == committed)
            // A refused write is answered with the owner's Reject.
            writerB.send(
                .mutate(
                    Mutate(
                        listName: "tasks", clientID: "writer-b", seq: 2, base: ListVersion(epoch: 0, version: 0),
                        operations: [.insertRows([Row(id: "x", kind: "t", payload: [])], in: .id("nope"), at: 0)])))
            let reject = await writerB.waitFor {
                if case .reject(let r) = $0 { return r.seq == 2 } else { return false }
            }
            guard case .reject(let refused)? = reject else {
                Issue.record("no Reject for a write to an unknown section")
                return
            }
            #expect(refused.code == .unknownSection)

            // Both nodes hold the same state; PostgreSQL holds 7 batches, owner A.
            let stateA = await a.withServer { $0.state(of: "tasks") }
            let stateB = await b.withServer { $0.state(of: "tasks") }
            #expect(stateA?.position.version == 7 && stateA?.position == stateB?.position)
            #expect(stateA?.director.digest == stateB?.director.digest)
            let idsB = Self.rowIDs(stateB?.director)
            #expect(idsB.contains("from-b"))
            let sql = try await SQLSession.open(pg.conninfo)
            let row = try await sql.query(
                "SELECT head, owner, (SELECT count(*) FROM fs_batches WHERE list = 'tasks'), (SELECT count(*) FROM fs_inbox), (SELECT count(*) FROM fs_outbox) FROM fs_lists WHERE list = 'tasks'"
            )
            #expect(row.int(0, 0) == 7 && row.rows.first?[1] == "a" && row.int(0, 2) == 7)
            #expect(row.int(0, 3) == 0 && row.int(0, 4) == 0, "the inbox and the outbox are drained")
            for client in [writerA, subscriberB, writerB] { client.close() }
            #expect(await a.stop())
            #expect(await b.stop())
            await sql.close()
        }
    }

    /// The owner is killed (SIGKILL, a real process). A write on the replica's node
    /// waits until the owner's lease lapses, then that node takes the list over (the
    /// same epoch, the next term) and commits it; every write A acknowledged is there.
    /// Every subscriber A had — one at version 8, eight that left at versions 1…8 —
    /// resumes on B from its version and digest: each gets a Diff, not a Snapshot.
    @Test func aKilledOwnersListIsTakenOverByAReplicaAndSubscribersResumeThereWithADiff() async throws {
        try await PostgresServer.with { pg in
            let clients = try EventLoopThread()
            defer { _ = clients.shutdown() }
            let a = try await Self.daemon(pg, node: "a")
            let b = try await EmbeddedServer(
                configuration: Self.clusterConfiguration(pg, node: "b", leaseMilliseconds: 1_000), storage: .configured)
            let writerA = try await Self.connectClient(a, clients, "writer-a")
            let subscriberA = try await Self.connectClient(a, clients, "subscriber-a")
            // Eight more subscribers of A: the k-th leaves after it saw version k, so
            // A's subscribers are at every version from 1 to 8 when A dies.
            var leavers: [TestClient] = []
            for k in 1...8 { leavers.append(try await Self.connectClient(a, clients, "leaver-\(k)")) }
            for client in [writerA, subscriberA] + leavers {
                client.send(.subscribe(Subscribe(listName: "tasks")))
                #expect(await client.waitFor(Self.isSnapshot) != nil, "\(a.output)")
            }
            var left: [(id: String, at: ListVersion, digest: StateDigest)] = []
            func leave(_ k: Int) async {
                guard case .diff(let d)? = await leavers[k - 1].waitFor(Self.isDiff(to: UInt64(k))) else {
                    Issue.record("leaver-\(k) did not see version \(k)")
                    return
                }
                leavers[k - 1].close()
                left.append(("leaver-\(k)", d.to, d.digest))
            }
            // Thirty rows first: a resume's Diff (at most 8 changes) is then smaller than
            // a Snapshot, which the server would send instead (ListHost.catchUpFrame).
            let base = (0..<30).map { Row(id: "base\($0)", kind: "t", payload: Array("row \($0)".utf8)) }
            #expect(
                await Self.write(writerA, "tasks", seq: 1, [.insertSections([Section(id: "s", rows: base)], at: 0)])?
                    .version == 1)
            await leave(1)
            var acknowledged = ["s"] + base.map(\.id)
            for seq in 2...8 {
                if await Self.write(writerA, "tasks", seq: UInt64(seq), Self.row("a\(seq)")) != nil {
                    acknowledged.append("a\(seq)")
                }
                await leave(seq)
            }
            #expect(acknowledged.count == 38)
            guard case .diff(let seen)? = await subscriberA.waitFor(Self.isDiff(to: 8)) else {
                Issue.record("A's subscriber did not reach version 8")
                return
            }
            let writerB = try await TestClient.connect(port: b.port, on: clients, clientID: "writer-b")
            writerB.send(.subscribe(Subscribe(listName: "tasks")))
            guard case .snapshot(let replica)? = await writerB.waitFor(Self.isSnapshot) else {
                Issue.record("B did not serve the list")
                return
            }
            #expect(replica.position == seen.to)

            // A dies. B's write is forwarded, unanswered, then B takes the list over
            // once A's lease lapsed, and commits it itself.
            _ = await a.kill9()
            let started = ContinuousClock.now
            let committed = await Self.write(writerB, "tasks", seq: 1, Self.row("from-b"))
            let took = ContinuousClock.now - started
            print("take-over: a write on the replica committed \(took) after the owner was killed (lease 1000 ms)")
            #expect(committed == ListVersion(epoch: seen.to.epoch, version: 9), "same epoch, next version")
            let sql = try await SQLSession.open(pg.conninfo)
            let row = try await sql.query(
                "SELECT head, owner, term, epoch, (SELECT count(*) FROM fs_batches WHERE list = 'tasks') FROM fs_lists WHERE list = 'tasks'"
            )
            #expect(row.int(0, 0) == 9 && row.rows.first?[1] == "b" && row.int(0, 2) == 2 && row.int(0, 4) == 9)
            #expect(row.int(0, 3).map(UInt64.init) == seen.to.epoch, "the epoch did not change")
            let state = await b.withServer { $0.state(of: "tasks") }
            #expect(
                Self.rowIDs(state?.director).sorted() == (acknowledged.dropFirst() + ["from-b"]).sorted(),
                "every acknowledged write is there")

            // A's subscriber moves to B and resumes from what it had: a Diff.
            let moved = try await TestClient.connect(port: b.port, on: clients, clientID: "subscriber-a")
            moved.send(.subscribe(Subscribe(listName: "tasks", resumeFrom: seen.to, digest: seen.digest)))
            let resumed = await moved.waitFor { m in
                switch m {
                case .diff, .snapshot: return true
                default: return false
                }
            }
            guard case .diff(let diff)? = resumed else {
                Issue.record("the resume on B was not a Diff: \(String(describing: resumed))")
                return
            }
            #expect(diff.from == seen.to && diff.to.version == 9)
            // So does every other subscriber A had, from the version it had (1…8).
            var diffs = 0
            for (id, at, digest) in left {
                let back = try await TestClient.connect(port: b.port, on: clients, clientID: id)
                back.send(.subscribe(Subscribe(listName: "tasks", resumeFrom: at, digest: digest)))
                let answer = await back.waitFor { m in
                    switch m {
                    case .diff, .snapshot: return true
                    default: return false
                    }
                }
                if case .diff(let d)? = answer, d.from == at, d.to.version == 9 {
                    diffs += 1
                } else {
                    Issue.record("\(id) from \(at): \(String(describing: answer))")
                }
                back.close()
            }
            #expect(left.count == 8 && diffs == 8, "all of A's subscribers resumed on B with a Diff")
            for client in [writerA, subscriberA, writerB, moved] { client.close() }
            #expect(await b.stop())
            await sql.close()
        }
    }

    /// A clean stop releases the node's lists and its lease: the list's preferred node
    /// among those left (B) takes it over at once, and a write on it commits — with a
    /// 120 s lease, waiting for the lease (or for half of it) would outlast the write's
    /// 30 s wait.
    @Test func aCleanStopReleasesTheListsSoAReplicaTakesThemOverWithoutWaitingForTheLease() async throws {
        try await PostgresServer.with { pg in
            let clients = try EventLoopThread()
            defer { _ = clients.shutdown() }
            let a = try await EmbeddedServer(
                configuration: Self.clusterConfiguration(pg, node: "a", leaseMilliseconds: 120_000),
                storage: .configured)
            let b = try await EmbeddedServer(
                configuration: Self.clusterConfiguration(pg, node: "b", leaseMilliseconds: 120_000),
                storage: .configured)
            let writerA = try await TestClient.connect(port: a.port, on: clients, clientID: "writer-a")
            #expect(
                await Self.write(writerA, "tasks", seq: 1, [.insertSections([Section(id: "s")], at: 0)])?.version == 1)
            let writerB = try await TestClient.connect(port: b.port, on: clients, clientID: "writer-b")
            writerB.send(.subscribe(Subscribe(listName: "tasks")))
            #expect(await writerB.waitFor(Self.isSnapshot) != nil)
            writerA.close()
            #expect(await a.stop())
            let sql = try await SQLSession.open(pg.conninfo)
            // A released the list and deleted its lease; B, now the only live node and
            // so the preferred owner, may already have claimed it (it was notified).
            let released = try await sql.query(
                "SELECT coalesce(owner, ''), (SELECT count(*) FROM fs_leases WHERE node = 'a') FROM fs_lists WHERE list = 'tasks'"
            )
            #expect(
                released.rows.first?[0] != "a" && released.int(0, 1) == 0,
                "A released its list and its lease: \(released.rows)")
            let started = ContinuousClock.now
            let committed = await Self.write(writerB, "tasks", seq: 1, Self.row("after-a"))
            print(
                "clean-stop hand-over: a write on the replica committed \(ContinuousClock.now - started) after the owner stopped (lease 120 s)"
            )
            #expect(committed?.version == 2)
            let row = try await sql.query("SELECT owner, term FROM fs_lists WHERE list = 'tasks'")
            #expect(row.rows.first?[0] == "b" && row.int(0, 1) == 2)
            writerB.close()
            #expect(await b.stop())
            await sql.close()
        }
    }

    /// Snapshots in PostgreSQL: with a snapshot due every 20 batches and a history of 5,
    /// 100 writes leave snapshots and a trimmed log; a restarted node loads the newest
    /// snapshot plus the batches after it and has the same state and digest, a resume
    /// within the history gets a Diff, and a retry of a write older than the snapshot is
    /// answered from the idempotency window the snapshot carried.
    @Test func snapshotsInPostgreSQLBoundWhatALoadReplays() async throws {
        try await PostgresServer.with { pg in
            let clients = try EventLoopThread()
            defer { _ = clients.shutdown() }
            var configuration = Self.clusterConfiguration(pg, node: "a")
            configuration.snapshotEveryBatches = 20
            configuration.historyMaxBatches = 5
            let first = try await EmbeddedServer(configuration: configuration, storage: .configured)
            let writer = try await TestClient.connect(port: first.port, on: clients, clientID: "writer")
            writer.send(.subscribe(Subscribe(listName: "tasks")))
            #expect(await writer.waitFor(Self.isSnapshot) != nil)
            #expect(
                await Self.write(writer, "tasks", seq: 1, [.insertSections([Section(id: "s")], at: 0)])?.version == 1)
            var versions: [UInt64: ListVersion] = [:]
            for seq in 2...100 {
                let committed = await Self.write(writer, "tasks", seq: UInt64(seq), Self.row("r\(seq)"))
                #expect(committed?.version == UInt64(seq))
                versions[UInt64(seq)] = committed
            }
            let sql = try await SQLSession.open(pg.conninfo)
            // Snapshots are written after the turn; wait (bounded) for the newest.
            #expect(
                try await Self.poll(sql, "SELECT coalesce(max(version), 0) FROM fs_snapshots WHERE list = 'tasks'") {
                    ($0.int(0, 0) ?? 0) >= 60
                })
            let kept = try await sql.query(
                "SELECT (SELECT count(*) FROM fs_snapshots WHERE list = 'tasks'), (SELECT count(*) FROM fs_batches WHERE list = 'tasks'), (SELECT min(version) FROM fs_batches WHERE list = 'tasks'), (SELECT max(version) FROM fs_snapshots WHERE list = 'tasks')"
            )
            print(
                "snapshots in PostgreSQL: \(kept.int(0, 0) ?? -1) snapshots (newest at \(kept.int(0, 3) ?? -1)), \(kept.int(0, 1) ?? -1) batches kept from version \(kept.int(0, 2) ?? -1)"
            )
            #expect((kept.int(0, 0) ?? 0) <= 2, "older snapshots are deleted")
            #expect(
                (kept.int(0, 1) ?? 100) < 60 && (kept.int(0, 2) ?? 0) > 1,
                "the log behind the previous snapshot is trimmed")
            let expected = try #require(await first.withServer { $0.state(of: "tasks") })
            guard case .diff(let seen)? = await writer.waitFor(Self.isDiff(to: 98)) else {
                Issue.record("the writer did not see version 98")
                return
            }
            writer.close()
            #expect(await first.stop())

            let second = try await EmbeddedServer(configuration: configuration, storage: .configured)
            let reader = try await TestClient.connect(port: second.port, on: clients, clientID: "reader")
            reader.send(.subscribe(Subscribe(listName: "tasks", resumeFrom: seen.to, digest: seen.digest)))
            guard
                case .diff(let resumed)? = await reader.waitFor({ m in
                    switch m {
                    case .diff, .snapshot: return true
                    default: return false
                    }
                })
            else {
                Issue.record("a resume within the history after the reload was not a Diff")
                return
            }
            #expect(resumed.to == expected.position && resumed.digest == expected.director.digest)
            #expect(await second.withServer { $0.state(of: "tasks")?.director } == expected.director)
            // seq 30 committed at version 30, before the newest snapshot: the window the
            // snapshot carried answers its retry with the same version.
            let retried = try await TestClient.connect(port: second.port, on: clients, clientID: "writer")
            #expect(await Self.write(retried, "tasks", seq: 30, Self.row("r30")) == versions[30])
            #expect(await Self.write(retried, "tasks", seq: 101, Self.row("r101"))?.version == 101)
            for client in [reader, retried] { client.close() }
            #expect(await second.stop())
            await sql.close()
        }
    }

    /// Placement: 30 lists created through one node of three end up owned by their
    /// preferred node (rendezvous hashing over the live nodes): the node the writer is
    /// on follows the other lists as replicas and forwards the writes.
    @Test func newListsAreOwnedByTheirPreferredNodeWhicheverNodeCreatesThem() async throws {
        try await PostgresServer.with { pg in
            let clients = try EventLoopThread()
            defer { _ = clients.shutdown() }
            var nodes: [EmbeddedServer] = []
            for name in ["a", "b", "c"] {
                nodes.append(
                    try await EmbeddedServer(
                        configuration: Self.clusterConfiguration(pg, node: name), storage: .configured))
            }
            // Each node saw the others' leases (read at every renewal: a third of 2 s).
            try await Task.sleep(for: .milliseconds(800))
            let writer = try await TestClient.connect(port: nodes[0].port, on: clients, clientID: "writer")
            let lists = (0..<30).map { "placed-\($0)" }
            for (i, list) in lists.enumerated() {
                #expect(
                    await Self.write(writer, list, seq: UInt64(i + 1), [.insertSections([Section(id: "s")], at: 0)])?
                        .version == 1, "\(list)")
            }
            let sql = try await SQLSession.open(pg.conninfo)
            var owners: [String: Int] = [:]
            for list in lists {
                let row = try await sql.query("SELECT owner FROM fs_lists WHERE list = $1", [.text(list)])
                let owner = row.rows.first?[0] ?? nil
                #expect(
                    owner == Placement.owner(of: list, among: ["a", "b", "c"]),
                    "\(list) is owned by \(owner ?? "nobody")")
                owners[owner ?? "-", default: 0] += 1
            }
            print("placement: 30 lists created through a, owned \(owners.sorted { $0.key < $1.key })")
            writer.close()
            for node in nodes { #expect(await node.stop()) }
            await sql.close()
        }
    }

    /// Idle lists are unloaded on cluster nodes too (`lists.idle_unload_ms`): the owner
    /// and a replica both forget an idle list; a write on the replica's node then loads
    /// it there as a replica again, the forwarded write makes the owner load it (claimed
    /// back, the next term), and it commits at the next version.
    @Test func idleListsUnloadOnClusterNodesAndComeBackOnTheNextWrite() async throws {
        try await PostgresServer.with { pg in
            let clients = try EventLoopThread()
            defer { _ = clients.shutdown() }
            var configuration = Self.clusterConfiguration(pg, node: "a")
            configuration.idleUnloadMilliseconds = 200
            let a = try await EmbeddedServer(configuration: configuration, storage: .configured)
            configuration.cluster.node = "b"
            let b = try await EmbeddedServer(configuration: configuration, storage: .configured)
            let writerA = try await TestClient.connect(port: a.port, on: clients, clientID: "writer-a")
            #expect(
                await Self.write(writerA, "tasks", seq: 1, [.insertSections([Section(id: "s")], at: 0)])?.version == 1)
            let reader = try await TestClient.connect(port: b.port, on: clients, clientID: "reader")
            reader.send(.subscribe(Subscribe(listName: "tasks")))
            #expect(await reader.waitFor(Self.isSnapshot) != nil)
            reader.close()
            var unloaded = false
            for _ in 0..<200 where !unloaded {
                let here = await a.withServer { $0.state(of: "tasks") == nil }
                let there = await b.withServer { $0.state(of: "tasks") == nil }
                unloaded = here && there
                if !unloaded { try await Task.sleep(for: .milliseconds(50)) }
            }
            #expect(unloaded, "both nodes unloaded the idle list")
            let writerB = try await TestClient.connect(port: b.port, on: clients, clientID: "writer-b")
            #expect(await Self.write(writerB, "tasks", seq: 1, Self.row("after-unload"))?.version == 2)
            let sql = try await SQLSession.open(pg.conninfo)
            let row = try await sql.query("SELECT head, owner, term FROM fs_lists WHERE list = 'tasks'")
            #expect(
                row.int(0, 0) == 2 && row.rows.first?[1] == "a" && row.int(0, 2) == 2,
                "A took its list back (term 2): \(row.rows)")
            for client in [writerA, writerB] { client.close() }
            #expect(await a.stop())
            #expect(await b.stop())
            await sql.close()
        }
    }
}
