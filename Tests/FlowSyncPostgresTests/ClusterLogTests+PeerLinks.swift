import FlowSyncCore
import FlowSyncLoop
import FlowSyncProcess
import FlowSyncProtocol
import FlowSyncServer
import FlowSyncTestSupport
import Foundation
import Testing

/// Issue #33, item 4: peer links. With `[cluster] peer_secret_file`, a write made on a
/// node that does not own the list goes to the owner over an authenticated link, its
/// answer and the batch come back over it, and PostgreSQL stays the log and the fence;
/// a node with a wrong credential is refused and uses PostgreSQL; a link cut in the
/// middle of a stream of writes loses none. Part of the serialized `ClusterLogTests`.
extension ClusterLogTests {
    /// A secret file of `text` (at least 32 bytes) in the temporary directory.
    static func peerSecretFile(_ text: String) throws -> String {
        let path = FileManager.default.temporaryDirectory
            .appendingPathComponent("flowsync-peer-\(UUID().uuidString).secret").path
        try Data((text + "\n").utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    static let goodSecret = "a cluster credential of more than 32 bytes, shared by the nodes"

    static func linkedConfiguration(_ pg: PostgresServer, node: String, secretFile: String) -> ServerConfiguration {
        var configuration = clusterConfiguration(pg, node: node)
        configuration.cluster.peerSecretFile = secretFile
        return configuration
    }

    static func peerStatistics(_ node: EmbeddedServer) async -> PeerLinkStatistics? {
        await node.withServer { ($0.store as? ClusterStore)?.peerLinkStatistics }
    }

    /// Waits (bounded, 15 s) until every node has a ready link to each peer it names.
    static func waitForLinks(_ nodes: [(EmbeddedServer, [String])]) async -> Bool {
        for _ in 0..<300 {
            var all = true
            for (node, peers) in nodes where await peerStatistics(node)?.readyPeers != peers { all = false }
            if all { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return false
    }

    /// Starts a linked node per name (in that order) on `pg`, all with `secretFile`, and
    /// waits (bounded, 15 s) until every pair is linked; `linked` says whether they were.
    static func linkedNodes(
        _ pg: PostgresServer, _ names: [String], secretFile: String
    ) async throws -> (nodes: [EmbeddedServer], linked: Bool) {
        var nodes: [EmbeddedServer] = []
        for name in names {
            nodes.append(
                try await EmbeddedServer(
                    configuration: linkedConfiguration(pg, node: name, secretFile: secretFile), storage: .configured))
        }
        let linked = await waitForLinks(zip(nodes, names).map { node, name in (node, names.filter { $0 != name }) })
        return (nodes, linked)
    }

    /// A list name whose preferred node among `nodes` is `owner`.
    static func listName(_ prefix: String, ownedBy owner: String, among nodes: [String]) -> String {
        (0..<1_000).map { "\(prefix)-\($0)" }.first { Placement.owner(of: $0, among: nodes) == owner }!
    }

    static func connectClient(
        _ node: EmbeddedServer, _ thread: EventLoopThread, _ clientID: String
    ) async throws -> TestClient {
        try await TestClient.connect(port: node.port, on: thread, clientID: clientID)
    }

    static func diffVersions(_ client: TestClient) -> [UInt64] {
        client.messages.compactMap { m -> UInt64? in
            if case .diff(let d) = m { return d.to.version } else { return nil }
        }
    }

    @Test func forwardedWritesTravelOverPeerLinksAndEverySubscriberSeesEachOnce() async throws {
        try await PostgresServer.with { pg in
            let clients = try EventLoopThread()
            defer { _ = clients.shutdown() }
            let secret = try Self.peerSecretFile(Self.goodSecret)
            defer { try? FileManager.default.removeItem(atPath: secret) }
            let names = ["a", "b", "c"]
            let (nodes, linked) = try await Self.linkedNodes(pg, names, secretFile: secret)
            #expect(linked, "every pair of nodes links")
            // A list that "a" owns; written through "b" and "c".
            let list = Self.listName("linked", ownedBy: "a", among: names)
            let creator = try await Self.connectClient(nodes[0], clients, "creator")
            #expect(await Self.write(creator, list, seq: 1, [.insertSections([Section(id: "s")], at: 0)])?.version == 1)
            let sql = try await SQLSession.open(pg.conninfo)
            #expect(try await sql.query("SELECT owner FROM fs_lists WHERE list = '\(list)'").rows.first?[0] == "a")
            var subscribers: [TestClient] = []
            for (k, node) in nodes.enumerated() {
                let subscriber = try await Self.connectClient(node, clients, "subscriber-\(k)")
                subscriber.send(.subscribe(Subscribe(listName: list)))
                #expect(await subscriber.waitFor(Self.isSnapshot) != nil)
                subscribers.append(subscriber)
            }
            var versions: [UInt64] = []
            var writers: [TestClient] = []
            for k in [1, 2] {
                let writer = try await Self.connectClient(nodes[k], clients, "writer-\(names[k])")
                writers.append(writer)
                for seq in 1...20 {
                    let version = await Self.write(writer, list, seq: UInt64(seq), Self.row("\(names[k])-\(seq)"))
                    #expect(version != nil, "\(names[k]) write \(seq)")
                    if let version { versions.append(version.version) }
                }
            }
            #expect(versions == Array(2...41), "each write acknowledged at its own version")
            // A retry of a write is answered with its version (the owner's idempotency window).
            #expect(await Self.write(writers[0], list, seq: 1, Self.row("b-1"))?.version == 2)
            // Every subscriber, on every node, sees every version exactly once, in order.
            for (k, subscriber) in subscribers.enumerated() {
                #expect(await subscriber.waitFor(Self.isDiff(to: 41)) != nil, "subscriber \(k)")
                #expect(Self.diffVersions(subscriber) == Array(2...41), "subscriber \(k)")
            }
            // It went over the links: forwards, answers and pushes.
            let owner = await Self.peerStatistics(nodes[0])
            print("linked: owner's statistics \(String(describing: owner))")
            #expect(
                (owner?.forwardsReceived ?? 0) >= 40 && owner?.forwardsPassedOn == 0, "\(String(describing: owner))")
            #expect((owner?.pushesSent ?? 0) >= 40, "\(String(describing: owner))")
            // With every live node linked, no commit is announced through PostgreSQL
            // (BatchAnnouncements, rule 5): only heads, once each (rule 7) — the claim's,
            // and one per follower's follow of the list.
            #expect((owner?.postgresAnnouncementsSkipped ?? 0) >= 40, "\(String(describing: owner))")
            #expect((owner?.postgresAnnouncements ?? 99) <= 3, "\(String(describing: owner))")
            for k in [1, 2] {
                let statistics = await Self.peerStatistics(nodes[k])
                print("linked: \(names[k])'s statistics \(String(describing: statistics))")
                #expect((statistics?.forwardsSent ?? 0) >= 20, "\(names[k]): \(String(describing: statistics))")
                #expect((statistics?.answersReceived ?? 0) >= 20, "\(names[k]): \(String(describing: statistics))")
                #expect((statistics?.pushesApplied ?? 0) >= 1, "\(names[k]): \(String(describing: statistics))")
                // The log is read to fill a gap only: here the one read right after the
                // replica's load (a batch may commit between its claim and its read),
                // with room for one announcement that comes without its frame.
                #expect((statistics?.logReads ?? 99) <= 2, "\(names[k]): \(String(describing: statistics))")
            }
            // PostgreSQL holds the log; the three nodes hold the same state.
            let row = try await sql.query(
                "SELECT head, (SELECT count(*) FROM fs_batches WHERE list = '\(list)'), (SELECT count(*) FROM fs_inbox) FROM fs_lists WHERE list = '\(list)'"
            )
            #expect(row.int(0, 0) == 41 && row.int(0, 1) == 41 && row.int(0, 2) == 0)
            var digests: [String] = []
            for node in nodes {
                let state = await node.withServer { $0.state(of: list) }
                #expect(state?.position.version == 41)
                digests.append("\(String(describing: state?.director.digest))")
            }
            #expect(Set(digests).count == 1, "\(digests)")
            for client in [creator] + subscribers + writers { client.close() }
            for node in nodes { #expect(await node.stop()) }
            await sql.close()
        }
    }

    @Test func aNodeWithAWrongCredentialIsRefusedAndItsWritesCommitThroughPostgreSQL() async throws {
        try await PostgresServer.with { pg in
            let clients = try EventLoopThread()
            defer { _ = clients.shutdown() }
            let good = try Self.peerSecretFile(Self.goodSecret)
            let wrong = try Self.peerSecretFile("not the cluster credential, though long enough to be one")
            defer {
                try? FileManager.default.removeItem(atPath: good)
                try? FileManager.default.removeItem(atPath: wrong)
            }
            let b = try await EmbeddedServer(
                configuration: Self.linkedConfiguration(pg, node: "b", secretFile: good), storage: .configured)
            let c = try await EmbeddedServer(
                configuration: Self.linkedConfiguration(pg, node: "c", secretFile: good), storage: .configured)
            // "a" sorts first, so it dials b and c: it checks their proofs and refuses them.
            let a = try await Self.daemon(
                conninfo: pg.conninfo, node: "a", leaseMilliseconds: 2_000, connected: true,
                extra: "peer_secret_file = \"\(wrong)\"\n")
            let refused = await a.child.waitForLine(timeout: .seconds(20)) {
                $0.contains("failed authentication") ? true : nil
            }
            #expect(refused == true, "a logs the refusal: \(a.output)")
            #expect(await Self.waitForLinks([(b, ["c"]), (c, ["b"])]), "b and c link; neither links with a")
            // A list b owns, written through a: forwarded through PostgreSQL.
            let list = Self.listName("refused", ownedBy: "b", among: ["a", "b", "c"])
            let creator = try await Self.connectClient(b, clients, "creator")
            #expect(await Self.write(creator, list, seq: 1, [.insertSections([Section(id: "s")], at: 0)])?.version == 1)
            let subscriberB = try await Self.connectClient(b, clients, "subscriber-b")
            subscriberB.send(.subscribe(Subscribe(listName: list)))
            #expect(await subscriberB.waitFor(Self.isSnapshot) != nil)
            let writer = try await TestClient.connect(port: a.port, on: clients, clientID: "writer-a")
            writer.send(.subscribe(Subscribe(listName: list)))
            #expect(await writer.waitFor(Self.isSnapshot) != nil)
            for seq in 1...10 {
                #expect(
                    await Self.write(writer, list, seq: UInt64(seq), Self.row("a-\(seq)"))?.version == UInt64(seq + 1))
            }
            #expect(await writer.waitFor(Self.isDiff(to: 11)) != nil)
            #expect(await subscriberB.waitFor(Self.isDiff(to: 11)) != nil)
            #expect(Self.diffVersions(subscriberB) == Array(2...11))
            let statistics = await Self.peerStatistics(b)
            #expect(
                statistics?.readyPeers == ["c"] && statistics?.forwardsReceived == 0,
                "\(String(describing: statistics))")
            let sql = try await SQLSession.open(pg.conninfo)
            #expect(try await sql.query("SELECT head FROM fs_lists WHERE list = '\(list)'").int(0, 0) == 11)
            for client in [creator, subscriberB, writer] { client.close() }
            _ = await a.terminate(gracePeriod: .seconds(10))
            #expect(await b.stop())
            #expect(await c.stop())
            await sql.close()
        }
    }

    /// Writes stream from b to a's list, 8 in flight at a time; in the middle every link
    /// of a is cut (twice). A write sent on a cut link is sent again through PostgreSQL
    /// (the owner's idempotency window answers a copy it had committed), so every write
    /// is acknowledged once, is in the log and the list once, the subscriber sees every
    /// version once, and both nodes end with the same state.
    @Test func aLinkCutMidStreamLosesNoAcknowledgedWrite() async throws {
        try await PostgresServer.with { pg in
            let clients = try EventLoopThread()
            defer { _ = clients.shutdown() }
            let secret = try Self.peerSecretFile(Self.goodSecret)
            defer { try? FileManager.default.removeItem(atPath: secret) }
            let (nodes, linked) = try await Self.linkedNodes(pg, ["a", "b"], secretFile: secret)
            #expect(linked)
            let (a, b) = (nodes[0], nodes[1])
            let list = Self.listName("cut", ownedBy: "a", among: ["a", "b"])
            let creator = try await Self.connectClient(a, clients, "creator")
            #expect(await Self.write(creator, list, seq: 1, [.insertSections([Section(id: "s")], at: 0)])?.version == 1)
            let subscriberB = try await Self.connectClient(b, clients, "subscriber-b")
            subscriberB.send(.subscribe(Subscribe(listName: list)))
            #expect(await subscriberB.waitFor(Self.isSnapshot) != nil)
            let writer = try await Self.connectClient(b, clients, "writer-b")
            let total = 80
            var acknowledged: [UInt64: UInt64] = [:]
            for burst in 0..<(total / 8) {
                let seqs = (burst * 8 + 1)...(burst * 8 + 8)
                for seq in seqs {
                    writer.send(
                        .mutate(
                            Mutate(
                                listName: list, clientID: writer.clientID, seq: UInt64(seq),
                                base: ListVersion(epoch: 0, version: 0), operations: Self.row("b-\(seq)"))))
                }
                // Cut every link of the owner while this burst is in flight.
                if burst == 3 || burst == 6 {
                    await a.withServer { ($0.store as? ClusterStore)?.dropPeerLinks() }
                    // The link comes back while the burst is answered (b dials a again).
                    let cut = ContinuousClock.now
                    #expect(await Self.waitForLinks([(a, ["b"]), (b, ["a"])]), "the link comes back")
                    print("link cut: the link was back after \(ContinuousClock.now - cut)")
                }
                for seq in seqs {
                    let reply = await writer.waitFor { m in
                        if case .ack(let ack) = m { return ack.seq == UInt64(seq) }
                        if case .reject(let reject) = m { return reject.seq == UInt64(seq) }
                        return false
                    }
                    guard case .ack(let ack)? = reply else {
                        Issue.record("write \(seq): \(String(describing: reply))")
                        continue
                    }
                    acknowledged[UInt64(seq)] = ack.committed.version
                }
            }
            // Writes of one loop turn share a batch, so versions repeat; every batch
            // after the first holds some of them.
            #expect(acknowledged.count == total)
            let head = acknowledged.values.max() ?? 0
            #expect(Set(acknowledged.values) == Set(2...max(2, head)), "\(acknowledged)")
            #expect(await subscriberB.waitFor(Self.isDiff(to: head)) != nil)
            #expect(Self.diffVersions(subscriberB) == Array(2...max(2, head)), "each version once, in order")
            let sql = try await SQLSession.open(pg.conninfo)
            let row = try await sql.query(
                "SELECT head, (SELECT count(*) FROM fs_batches WHERE list = '\(list)') FROM fs_lists WHERE list = '\(list)'"
            )
            #expect(row.int(0, 0) == Int64(head) && row.int(0, 1) == Int64(head))
            let stateA = await a.withServer { $0.state(of: list) }
            let stateB = await b.withServer { $0.state(of: list) }
            #expect(stateA?.position == stateB?.position && stateA?.director.digest == stateB?.director.digest)
            let ids = Self.rowIDs(stateA?.director)
            #expect(ids.count == total && Set(ids).count == total, "every write in the list once")
            // The links came back after the cuts (b dials a again).
            #expect(await Self.waitForLinks([(a, ["b"]), (b, ["a"])]))
            let statistics = await Self.peerStatistics(b)
            print("link cut: b's peer-link statistics \(String(describing: statistics))")
            for client in [creator, subscriberB, writer] { client.close() }
            #expect(await a.stop())
            #expect(await b.stop())
            await sql.close()
        }
    }

    /// The owner, linked to the two other nodes, is killed (SIGKILL) with forwarded
    /// writes in flight on its links. Its lease lapses, a replica takes the list over,
    /// and the writes the origin re-sends are committed there (a copy the dead owner had
    /// committed is answered from the idempotency window rebuilt from the log): every
    /// write is acknowledged, each is in the list once, and both survivors end with the
    /// same state as PostgreSQL.
    @Test func aKilledLinkedOwnerLosesNoAcknowledgedWrite() async throws {
        try await PostgresServer.with { pg in
            let clients = try EventLoopThread()
            defer { _ = clients.shutdown() }
            let secret = try Self.peerSecretFile(Self.goodSecret)
            defer { try? FileManager.default.removeItem(atPath: secret) }
            let b = try await EmbeddedServer(
                configuration: Self.linkedConfiguration(pg, node: "b", secretFile: secret), storage: .configured)
            let c = try await EmbeddedServer(
                configuration: Self.linkedConfiguration(pg, node: "c", secretFile: secret), storage: .configured)
            let a = try await Self.daemon(
                conninfo: pg.conninfo, node: "a", leaseMilliseconds: 2_000, connected: true,
                extra: "peer_secret_file = \"\(secret)\"\n")
            #expect(await Self.waitForLinks([(b, ["a", "c"]), (c, ["a", "b"])]), "a links with b and c")
            let list = Self.listName("killed", ownedBy: "a", among: ["a", "b", "c"])
            let creator = try await TestClient.connect(port: a.port, on: clients, clientID: "creator")
            #expect(await Self.write(creator, list, seq: 1, [.insertSections([Section(id: "s")], at: 0)])?.version == 1)
            let subscriberC = try await Self.connectClient(c, clients, "subscriber-c")
            subscriberC.send(.subscribe(Subscribe(listName: list)))
            #expect(await subscriberC.waitFor(Self.isSnapshot) != nil)
            let writer = try await Self.connectClient(b, clients, "writer-b")
            for seq in 1...10 {
                #expect(await Self.write(writer, list, seq: UInt64(seq), Self.row("b-\(seq)")) != nil, "write \(seq)")
            }
            // Four writes in flight on the link when the owner dies.
            for seq in 11...14 {
                writer.send(
                    .mutate(
                        Mutate(
                            listName: list, clientID: writer.clientID, seq: UInt64(seq),
                            base: ListVersion(epoch: 0, version: 0), operations: Self.row("b-\(seq)"))))
            }
            _ = await a.kill9()
            var acknowledged = 10
            for seq in 11...14 {
                let reply = await writer.waitFor { m in
                    if case .ack(let ack) = m { return ack.seq == UInt64(seq) }
                    return false
                }
                if reply != nil { acknowledged += 1 } else { Issue.record("write \(seq) unanswered") }
            }
            for seq in 15...20 where await Self.write(writer, list, seq: UInt64(seq), Self.row("b-\(seq)")) != nil {
                acknowledged += 1
            }
            #expect(acknowledged == 20)
            let sql = try await SQLSession.open(pg.conninfo)
            let row = try await sql.query("SELECT head, owner FROM fs_lists WHERE list = '\(list)'")
            let head = UInt64(row.int(0, 0) ?? 0)
            #expect(row.rows.first?[1] != "a", "taken over")
            let stateB = await b.withServer { $0.state(of: list) }
            let stateC = await c.withServer { $0.state(of: list) }
            #expect(stateB?.position.version == head && stateB?.position == stateC?.position)
            #expect(stateB?.director.digest == stateC?.director.digest)
            let ids = Self.rowIDs(stateB?.director)
            #expect(Set(ids) == Set((1...20).map { "b-\($0)" }) && ids.count == 20, "every write once: \(ids)")
            #expect(await subscriberC.waitFor(Self.isDiff(to: head)) != nil)
            #expect(Self.diffVersions(subscriberC) == Array(2...max(2, head)), "each version once, in order")
            print("killed linked owner: head \(head), owner now \(row.rows.first?[1] ?? nil ?? "-")")
            for client in [creator, subscriberC, writer] { client.close() }
            #expect(await b.stop())
            #expect(await c.stop())
            await sql.close()
        }
    }
}
