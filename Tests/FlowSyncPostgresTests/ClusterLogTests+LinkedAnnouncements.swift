import FlowSyncCore
import FlowSyncLoop
import FlowSyncProtocol
import FlowSyncServer
import FlowSyncTestSupport
import Foundation
import Testing

/// Issue #33, item 4: while every live node is linked, a commit is announced only over
/// the links, not through PostgreSQL (``BatchAnnouncements`` rules 5–7); a cut link loses
/// no version of a list that then goes quiet; a node without the secret still gets every
/// batch through PostgreSQL. Part of the serialized `ClusterLogTests`.
extension ClusterLogTests {
    static func isSnapshot(of list: String) -> (Message) -> Bool {
        { if case .snapshot(let s) = $0 { return s.listName == list } else { return false } }
    }

    static func isDiff(of list: String, to version: UInt64) -> (Message) -> Bool {
        { if case .diff(let d) = $0 { return d.listName == list && d.to.version == version } else { return false } }
    }

    static func diffVersions(_ client: TestClient, of list: String) -> [UInt64] {
        client.messages.compactMap { m -> UInt64? in
            if case .diff(let d) = m, d.listName == list { return d.to.version } else { return nil }
        }
    }

    /// The PostgreSQL announcements of every node, summed.
    static func postgresAnnouncements(_ nodes: [EmbeddedServer]) async -> (sent: Int, skipped: Int) {
        var sum = (sent: 0, skipped: 0)
        for node in nodes {
            let statistics = await peerStatistics(node)
            sum.sent += statistics?.postgresAnnouncements ?? 0
            sum.skipped += statistics?.postgresAnnouncementsSkipped ?? 0
        }
        return sum
    }

    /// Three linked nodes, two lists owned by each, a subscriber on every node to every
    /// list and writes to every list from every node: each subscriber sees every version
    /// once, in order, and no commit is announced through PostgreSQL. Then a burst on
    /// one of a's lists with every link of a cut in its middle, and the list goes quiet:
    /// b and c still reach its last version.
    @Test func linkedNodesAnnounceNoCommitThroughPostgreSQLAndACutLosesNoQuietVersion() async throws {
        try await PostgresServer.with { pg in
            let clients = try EventLoopThread()
            defer { _ = clients.shutdown() }
            let secret = try Self.peerSecretFile(Self.goodSecret)
            defer { try? FileManager.default.removeItem(atPath: secret) }
            let names = ["a", "b", "c"]
            let (nodes, linked) = try await Self.linkedNodes(pg, names, secretFile: secret)
            #expect(linked, "every pair of nodes links")
            var lists: [String] = []
            var writers: [TestClient] = []
            for (k, name) in names.enumerated() {
                let writer = try await Self.connectClient(nodes[k], clients, "writer-\(name)")
                writers.append(writer)
                for prefix in ["quiet-one", "quiet-two"] {
                    let list = Self.listName("\(prefix)-\(name)", ownedBy: name, among: names)
                    lists.append(list)
                    #expect(
                        await Self.write(
                            writer, list, seq: UInt64(lists.count), [.insertSections([Section(id: "s")], at: 0)])?
                            .version == 1)
                }
            }
            var subscribers: [TestClient] = []
            for (k, node) in nodes.enumerated() {
                let subscriber = try await Self.connectClient(node, clients, "subscriber-\(names[k])")
                for list in lists {
                    subscriber.send(.subscribe(Subscribe(listName: list)))
                    #expect(await subscriber.waitFor(Self.isSnapshot(of: list)) != nil, "\(names[k]) \(list)")
                }
                subscribers.append(subscriber)
            }
            // The heads announced for the claims and the follows (rule 7) are done once
            // every replica is loaded and followed; give the follows a moment to land.
            try await Task.sleep(for: .milliseconds(300))
            let before = await Self.postgresAnnouncements(nodes)
            // Five writes per list from every node: 15 batches per list, each its own
            // (every write waits for its Ack).
            var seq = UInt64(lists.count)
            for round in 0..<5 {
                for (k, writer) in writers.enumerated() {
                    for list in lists {
                        seq += 1
                        let version = await Self.write(writer, list, seq: seq, Self.row("\(names[k])-\(round)-\(list)"))
                        #expect(version != nil, "\(names[k]) \(list) round \(round)")
                    }
                }
            }
            for (k, subscriber) in subscribers.enumerated() {
                for list in lists {
                    #expect(await subscriber.waitFor(Self.isDiff(of: list, to: 16)) != nil, "\(names[k]) \(list)")
                    #expect(Self.diffVersions(subscriber, of: list) == Array(2...16), "\(names[k]) \(list)")
                }
            }
            let after = await Self.postgresAnnouncements(nodes)
            print("linked announcements: before the writes \(before), after \(after)")
            #expect(after.sent == before.sent, "no commit announced through PostgreSQL while linked")
            #expect(after.skipped - before.skipped >= 90, "every commit went by push only")

            // A burst on a's first list from a's own writer, every link of a cut in its
            // middle; then the list goes quiet.
            let list = lists[0]
            let burst = 20
            for n in 1...burst {
                seq += 1
                writers[0].send(
                    .mutate(
                        Mutate(
                            listName: list, clientID: writers[0].clientID, seq: seq,
                            base: ListVersion(epoch: 0, version: 0), operations: Self.row("burst-\(n)"))))
                if n == burst / 2 { await nodes[0].withServer { ($0.store as? ClusterStore)?.dropPeerLinks() } }
            }
            let last = await writers[0].waitFor { m in
                if case .ack(let ack) = m { return ack.seq == seq }
                return false
            }
            guard case .ack(let ack)? = last else {
                Issue.record("the burst's last write: \(String(describing: last))")
                return
            }
            let head = ack.committed.version
            let cut = ContinuousClock.now
            for (k, subscriber) in subscribers.enumerated() {
                #expect(await subscriber.waitFor(timeout: 10, Self.isDiff(of: list, to: head)) != nil, "\(names[k])")
                #expect(Self.diffVersions(subscriber, of: list) == Array(2...head), "\(names[k]): each once, in order")
            }
            print(
                "linked announcements: the quiet list reached \(head) everywhere \(ContinuousClock.now - cut) after its last Ack"
            )
            for client in writers + subscribers { client.close() }
            for node in nodes { #expect(await node.stop()) }
        }
    }

    /// a and b are linked; c has no secret, so no link: the owner announces every commit
    /// through PostgreSQL while c is live, and c's subscriber sees every version once.
    @Test func aNodeWithoutTheSecretGetsEveryBatchThroughPostgreSQL() async throws {
        try await PostgresServer.with { pg in
            let clients = try EventLoopThread()
            defer { _ = clients.shutdown() }
            let secret = try Self.peerSecretFile(Self.goodSecret)
            defer { try? FileManager.default.removeItem(atPath: secret) }
            let a = try await EmbeddedServer(
                configuration: Self.linkedConfiguration(pg, node: "a", secretFile: secret), storage: .configured)
            let b = try await EmbeddedServer(
                configuration: Self.linkedConfiguration(pg, node: "b", secretFile: secret), storage: .configured)
            let c = try await EmbeddedServer(
                configuration: Self.clusterConfiguration(pg, node: "c"), storage: .configured)
            #expect(await Self.waitForLinks([(a, ["b"]), (b, ["a"])]))
            let list = Self.listName("unlinked", ownedBy: "a", among: ["a", "b", "c"])
            let writer = try await Self.connectClient(a, clients, "writer-a")
            #expect(await Self.write(writer, list, seq: 1, [.insertSections([Section(id: "s")], at: 0)])?.version == 1)
            var subscribers: [TestClient] = []
            for (k, node) in [b, c].enumerated() {
                let subscriber = try await Self.connectClient(node, clients, "subscriber-\(k)")
                subscriber.send(.subscribe(Subscribe(listName: list)))
                #expect(await subscriber.waitFor(Self.isSnapshot) != nil)
                subscribers.append(subscriber)
            }
            for seq in 2...21 {
                #expect(await Self.write(writer, list, seq: UInt64(seq), Self.row("a-\(seq)"))?.version == UInt64(seq))
            }
            for (k, subscriber) in subscribers.enumerated() {
                #expect(await subscriber.waitFor(Self.isDiff(to: 21)) != nil, "subscriber \(k)")
                #expect(Self.diffVersions(subscriber) == Array(2...21), "subscriber \(k): each once, in order")
            }
            let owner = await Self.peerStatistics(a)
            print("unlinked node: the owner's statistics \(String(describing: owner))")
            #expect((owner?.postgresAnnouncements ?? 0) >= 1, "\(String(describing: owner))")
            #expect(owner?.postgresAnnouncementsSkipped == 0, "c is live and unlinked: nothing skipped")
            for client in [writer] + subscribers { client.close() }
            #expect(await a.stop())
            #expect(await b.stop())
            #expect(await c.stop())
        }
    }
}
