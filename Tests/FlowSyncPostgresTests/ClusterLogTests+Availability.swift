import FlowSyncCore
import FlowSyncLoop
import FlowSyncProcess
import FlowSyncProtocol
import FlowSyncTestSupport
import Foundation
import Testing

@testable import FlowSyncServer

#if canImport(Glibc)
import Glibc
#endif

/// Issue #33, items 1 and 3: no list unwritable longer than it must be. A restarted
/// owner claims back the list whose forwarded write waited for it; lists created right
/// after the cluster started land on their hash node, and a misplaced list moves to its
/// preferred node when that node appears. Part of the serialized `ClusterLogTests`
/// suite (one PostgreSQL at a time).
extension ClusterLogTests {
    /// Item 1: kill the owner, send a write for its list through the replica's node
    /// 0.2 s later, restart the owner 0.5 s after the kill. With a 5 s lease nobody can
    /// take the list over meanwhile: the write waits for the owner, which claims the
    /// list back as soon as it is connected (its forwarded write waits in `fs_inbox`) —
    /// not when the replica's node forwards it again, half a lease later. Run without
    /// and with peer links (`scripts/cluster.sh` links its nodes): with links, the kill
    /// cuts b's link to a, the write goes through `fs_inbox`, and the restarted a links
    /// again as it claims.
    @Test(arguments: [false, true])
    func aRestartedOwnerClaimsItsListBackAndServesTheWriteWaitingOnAReplica(links: Bool) async throws {
        try await PostgresServer.with { pg in
            let clients = try EventLoopThread()
            defer { _ = clients.shutdown() }
            let secret = try Self.peerSecretFile(Self.goodSecret)
            defer { try? FileManager.default.removeItem(atPath: secret) }
            let extra = links ? "peer_secret_file = \"\(secret)\"\n" : ""
            var a = try await Self.daemon(
                conninfo: pg.conninfo, node: "a", leaseMilliseconds: 5_000, connected: true, extra: extra)
            let b = try await Self.daemon(
                conninfo: pg.conninfo, node: "b", leaseMilliseconds: 5_000, connected: true, extra: extra)
            if links {
                // Bounded (10 s): each node logs the link it made.
                for _ in 0..<200 where !(a.output.contains("peer link ready") && b.output.contains("peer link ready")) {
                    try await Task.sleep(for: .milliseconds(50))
                }
                #expect(a.output.contains("peer link ready") && b.output.contains("peer link ready"), "a and b linked")
            }
            let writerA = try await Self.connectClient(a, clients, "writer-a")
            let created = ContinuousClock.now
            guard
                await Self.write(writerA, "tasks", seq: 1, [.insertSections([Section(id: "s")], at: 0)])?.version == 1
            else {
                // Seen once in a soak at load 6–9 (links: false): kept with both nodes'
                // logs, as the rest of the test follows from this write.
                Issue.record(
                    "the first write on a got no Ack in \(ContinuousClock.now - created)\na: \(a.output.suffix(4_000))\nb: \(b.output.suffix(4_000))"
                )
                _ = await a.terminate()
                _ = await b.terminate()
                return
            }
            writerA.close()
            // B serves the list from a replica; its writer subscribes there.
            let writerB = try await Self.connectClient(b, clients, "writer-b")
            writerB.send(.subscribe(Subscribe(listName: "tasks")))
            #expect(await writerB.waitFor(Self.isSnapshot) != nil)

            _ = await a.kill9()
            let killed = ContinuousClock.now
            try await Task.sleep(until: killed + .milliseconds(200))
            writerB.send(
                .mutate(
                    Mutate(
                        listName: "tasks", clientID: "writer-b", seq: 1, base: ListVersion(epoch: 0, version: 0),
                        operations: Self.row("waiting"))))
            try await Task.sleep(until: killed + .milliseconds(500))
            let restarted = ContinuousClock.now
            a = try await Self.daemon(conninfo: pg.conninfo, node: "a", leaseMilliseconds: 5_000, extra: extra)
            let listening = ContinuousClock.now
            let answer = await Self.answer(to: 1, on: writerB, timeout: 10)
            let acknowledged = ContinuousClock.now
            guard case .ack(let ack)? = answer else {
                Issue.record(
                    "no Ack for the waiting write: \(String(describing: answer)); a: \(a.output.suffix(2_000))")
                return
            }
            let sinceRestart = acknowledged - restarted
            print(
                "restart (links \(links)): the write waiting on the replica was acknowledged \(acknowledged - killed) after the kill, \(sinceRestart) after the restart (the node listened after \(listening - restarted))"
            )
            // Counted from the moment the restarted node listens: the start of a debug
            // binary on a loaded machine (up to ~0.3 s at load 15) is not what this tests.
            // The figure from the restart itself is printed above and in docs/CLUSTER.md.
            let sinceListening = acknowledged - listening
            #expect(
                sinceListening <= .milliseconds(500),
                "acknowledged \(sinceListening) after the node listened (\(sinceRestart) after the restart)")
            #expect(ack.committed.version == 2)
            #expect(a.output.contains("claiming the lists whose forwarded writes waited"), "\(a.output.suffix(2_000))")
            let sql = try await SQLSession.open(pg.conninfo)
            let row = try await sql.query(
                "SELECT head, owner, term, (SELECT count(*) FROM fs_batches WHERE list = 'tasks'), (SELECT count(*) FROM fs_inbox) FROM fs_lists WHERE list = 'tasks'"
            )
            #expect(
                row.int(0, 0) == 2 && row.rows.first?[1] == "a" && row.int(0, 2) == 2 && row.int(0, 3) == 2,
                "claimed back by a at term 2: \(row.rows)")
            #expect(row.int(0, 4) == 0, "the inbox is drained")
            // The replica's subscriber saw the Diff before the Ack.
            let diffAt = writerB.messages.firstIndex(where: Self.isDiff(to: 2))
            let ackAt = writerB.messages.firstIndex {
                if case .ack(let a) = $0 { return a.seq == 1 } else { return false }
            }
            #expect(diffAt != nil && ackAt != nil && diffAt! < ackAt!, "Diff before Ack on the replica's node")
            writerB.close()
            _ = await a.terminate()
            _ = await b.terminate()
            await sql.close()
        }
    }

    /// Item 3: three nodes, each connected (its lease taken, as `scripts/cluster.sh up`
    /// waits for); at once, nine new lists whose hash node is c are written through a:
    /// c owns all nine. Then a fourth list is created while only a and b run (placed
    /// on one of them), its subscriber on a; when d starts, the list moves to d, its
    /// hash node among four — the subscriber stays connected and sees the next write,
    /// which commits on d.
    @Test func listsCreatedRightAfterStartLandOnTheirHashNodeAndMoveWhenTheirNodeAppears() async throws {
        try await PostgresServer.with { pg in
            let clients = try EventLoopThread()
            defer { _ = clients.shutdown() }
            let sql = try await SQLSession.open(pg.conninfo)
            var nodes: [EmbeddedServer] = []
            for name in ["a", "b", "c"] {
                nodes.append(
                    try await EmbeddedServer(
                        configuration: Self.clusterConfiguration(pg, node: name), storage: .configured))
            }
            #expect(
                try await Self.poll(sql, "SELECT count(*) FROM fs_leases WHERE expires_at > clock_timestamp()") {
                    $0.int(0, 0) == 3
                })
            let onC = (0..<1_000).map { "fresh-\($0)" }.filter {
                Placement.owner(of: $0, among: ["a", "b", "c"]) == "c"
            }.prefix(9)
            let writer = try await TestClient.connect(port: nodes[0].port, on: clients, clientID: "writer")
            var seq: UInt64 = 0
            for list in onC {
                seq += 1
                #expect(
                    await Self.write(writer, list, seq: seq, [.insertSections([Section(id: "s")], at: 0)])?.version
                        == 1, "\(list)")
            }
            var owners: [String] = []
            for list in onC {
                owners.append(
                    try await sql.query("SELECT owner FROM fs_lists WHERE list = $1", [.text(list)]).rows.first?[0]
                        ?? "-")
            }
            print("placement right after start: \(onC.count) lists whose hash node is c, owned by \(owners)")
            #expect(owners == Array(repeating: "c", count: onC.count))
            writer.close()
            for node in nodes.dropFirst(2) { #expect(await node.stop()) }

            // Only a and b live now (c released its lists and lease at its clean stop).
            #expect(
                try await Self.poll(sql, "SELECT count(*) FROM fs_leases WHERE expires_at > clock_timestamp()") {
                    $0.int(0, 0) == 2
                })
            let moving = try #require(
                (0..<1_000).map { "moving-\($0)" }.first {
                    Placement.owner(of: $0, among: ["a", "b", "d"]) == "d"
                        && Placement.owner(of: $0, among: ["a", "b"]) == "b"
                })
            let writerA = try await TestClient.connect(port: nodes[0].port, on: clients, clientID: "writer-a")
            writerA.send(.subscribe(Subscribe(listName: moving)))
            #expect(await writerA.waitFor(Self.isSnapshot) != nil)
            #expect(
                await Self.write(writerA, moving, seq: 1, [.insertSections([Section(id: "s")], at: 0)])?.version == 1)
            #expect(
                try await sql.query("SELECT owner FROM fs_lists WHERE list = $1", [.text(moving)]).rows.first?[0] == "b"
            )
            let started = ContinuousClock.now
            let d = try await EmbeddedServer(
                configuration: Self.clusterConfiguration(pg, node: "d"), storage: .configured)
            #expect(
                try await Self.poll(sql, "SELECT owner = 'd' FROM fs_lists WHERE list = '\(moving)'") {
                    $0.rows.first?[0] == "t"
                }, "the list moved to d")
            print("placement: \(moving) moved from b to d \(ContinuousClock.now - started) after d started")
            #expect(await Self.write(writerA, moving, seq: 2, Self.row("after-move"))?.version == 2)
            #expect(
                !writerA.isClosed && !writerA.messages.contains(where: Self.isDraining),
                "the subscriber on a stayed connected")
            let row = try await sql.query("SELECT owner, head FROM fs_lists WHERE list = $1", [.text(moving)])
            #expect(row.rows.first?[0] == "d" && row.int(0, 1) == 2, "\(row.rows)")
            writerA.close()
            #expect(await d.stop())
            for node in nodes.prefix(2) { #expect(await node.stop()) }
            await sql.close()
        }
    }
}
