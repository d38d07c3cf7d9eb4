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

/// Issue #18, test 3: chaos under load. Three `flowsyncd` nodes on one PostgreSQL, 50
/// lists (owners spread over the nodes), a writer per node writing to random lists, and
/// a node killed with SIGKILL and started again 0.3–1.8 s later (sometimes past its 1 s lease, so a replica takes its lists over), 4 times, 2.5 s apart. A
/// writer whose node dies, or whose write goes unanswered for 4 s, retries the same
/// `(clientID, seq)` on another node. Passes only if every acknowledged write is in
/// the log exactly once and at the version its Ack named, each list's versions are
/// contiguous, no epoch changed, and every node's view of every list ends at the same
/// version and digest. Part of the serialized `ClusterLogTests` suite.
extension ClusterLogTests {
    struct Acknowledged: Sendable, Hashable {
        var list: String
        var clientID: String
        var seq: UInt64
        var version: ListVersion
    }

    /// The live nodes' ports, by node (nil while a node is down).
    final class Ports: @unchecked Sendable {
        let value = Shared<[Int?]>([])
    }

    static let chaosLists = (0..<50).map { "chaos-\($0)" }

    /// The Ack or Reject of write `seq`, or a closing Error (the node is going), or nil
    /// after `timeout` seconds.
    static func answer(to seq: UInt64, on client: TestClient, timeout: Double) async -> Message? {
        await client.waitFor(timeout: timeout) { m in
            switch m {
            case .ack(let a): return a.seq == seq
            case .reject(let r): return r.seq == seq
            case .error(let e): return e.closesConnection
            default: return false
            }
        }
    }

    @Test func chaosKillingANodeEveryFewSecondsLosesNoAcknowledgedWrite() async throws {
        try await PostgresServer.with { pg in
            let clients = try EventLoopThread()
            defer { _ = clients.shutdown() }
            let names = ["a", "b", "c"]
            var nodes: [DaemonProcess] = []
            for name in names { nodes.append(try await Self.daemon(pg, node: name)) }
            var everyNode = nodes
            let ports = Shared<[Int?]>(nodes.map { $0.port })

            // Each list is created on node i % 3 (so each node owns a third), with its
            // section; every node then loads every list (a full replica on each).
            let sql = try await SQLSession.open(pg.conninfo)
            for (i, list) in Self.chaosLists.enumerated() {
                let creator = try await Self.connectClient(nodes[i % 3], clients, "creator-\(i)")
                #expect(
                    await Self.write(creator, list, seq: 1, [.insertSections([Section(id: "s")], at: 0)])?.version == 1)
                creator.close()
            }
            var watchers: [TestClient] = []
            for node in nodes {
                let watcher = try await Self.connectClient(node, clients, "watcher")
                for list in Self.chaosLists { watcher.send(.subscribe(Subscribe(listName: list))) }
                watchers.append(watcher)
            }
            for watcher in watchers {
                #expect(
                    await eventually(timeout: 30) {
                        watcher.messages.filter(Self.isSnapshot).count == Self.chaosLists.count
                    })
            }
            let epochsBefore = try await sql.query("SELECT list, epoch FROM fs_lists ORDER BY list").rows.map {
                "\($0[0] ?? "")=\($0[1] ?? "")"
            }

            // Writers and chaos, for a bounded time.
            let acknowledged = Shared<[Acknowledged]>([])
            let rejected = Shared<[String]>([])
            // The writers run until the chaos is over (4 kills, a second after the last
            // restart), bounded by a hard deadline; the number of kills does not depend
            // on how fast this machine restarts a node.
            let stop = Shared<Bool>(false)
            let deadline = ContinuousClock.now + .seconds(90)
            let chaosSeed = UInt64.random(in: 0..<1_000_000)
            print("chaos seed \(chaosSeed)")
            var kills = 0
            await withTaskGroup(of: Void.self) { group in
                for w in 0..<3 {
                    group.addTask {
                        await Self.chaosWriter(
                            index: w, ports: ports, clients: clients, stop: stop, deadline: deadline,
                            seed: chaosSeed &+ UInt64(w),
                            acknowledged: acknowledged, rejected: rejected)
                    }
                }
                var random = SeededRandom(seed: chaosSeed)
                for _ in 0..<4 {
                    try? await Task.sleep(for: .milliseconds(2_500))
                    let victim = random.int(0..<3)
                    ports.update { $0[victim] = nil }
                    _ = await nodes[victim].kill9()
                    kills += 1
                    // Sometimes past the 1 s lease.
                    try? await Task.sleep(for: .milliseconds(Int(random.int(300...1_800))))
                    guard let restarted = try? await Self.daemon(pg, node: names[victim]) else {
                        Issue.record("node \(names[victim]) did not start again")
                        continue
                    }
                    nodes[victim] = restarted
                    everyNode.append(restarted)
                    ports.update { $0[victim] = restarted.port }
                }
                try? await Task.sleep(for: .seconds(1))
                stop.set(true)
                await group.waitForAll()
            }
            let acks = acknowledged.get()
            let takeOvers = everyNode.map { $0.output.components(separatedBy: "cluster: took over list").count - 1 }
                .reduce(0, +)
            print(
                "chaos: \(kills) kills, \(acks.count) writes acknowledged, \(rejected.get().count) rejected, \(takeOvers) lists taken over by a replica"
            )
            #expect(kills == 4)
            #expect(acks.count > 100, "the writers got \(acks.count) writes through")
            #expect(rejected.get().isEmpty, "\(rejected.get().prefix(5))")

            // The log: contiguous versions, each acknowledged write exactly once, at the
            // version its Ack named; no epoch changed.
            let epochsAfter = try await sql.query("SELECT list, epoch FROM fs_lists ORDER BY list").rows.map {
                "\($0[0] ?? "")=\($0[1] ?? "")"
            }
            #expect(epochsBefore == epochsAfter, "no epoch changed")
            var heads: [String: UInt64] = [:]
            var lost = 0
            var duplicated = 0
            for list in Self.chaosLists {
                let rows = try await sql.query(
                    "SELECT version, body FROM fs_batches WHERE list = $1 ORDER BY version", [.text(list)])
                let head =
                    try await sql.query("SELECT head FROM fs_lists WHERE list = $1", [.text(list)]).int(0, 0) ?? -1
                let versions = (0..<rows.rows.count).compactMap { rows.int($0, 0) }
                let expected: [Int64] = head >= 1 ? Array(1...head) : []
                #expect(head >= 1 && versions == expected, "\(list): versions contiguous up to head \(head)")
                heads[list] = UInt64(head)
                var seen: [MutationID: Int64] = [:]
                for r in 0..<rows.rows.count {
                    let decoder = FrameDecoder(limits: StoreFormat.decoderLimits, dictionary: .standard)
                    decoder.feed(rows.bytes(r, 1) ?? [])
                    guard case .diff(let diff)? = try? decoder.next() else {
                        Issue.record("\(list): batch \(r + 1) does not decode")
                        continue
                    }
                    for id in diff.mutations {
                        if seen[id] != nil { duplicated += 1 }
                        seen[id] = rows.int(r, 0)
                    }
                }
                for ack in acks where ack.list == list {
                    guard let version = seen[MutationID(clientID: ack.clientID, seq: ack.seq)] else {
                        lost += 1
                        continue
                    }
                    #expect(
                        UInt64(version) == ack.version.version,
                        "\(list) \(ack.clientID)#\(ack.seq): acknowledged at \(ack.version.version), in the log at \(version)"
                    )
                }
            }
            print("chaos: \(lost) acknowledged writes lost, \(duplicated) in the log twice")
            #expect(lost == 0 && duplicated == 0)

            // Every node's view of every list: the head's version and one digest.
            var digests: [String: StateDigest] = [:]
            for (n, node) in nodes.enumerated() {
                let reader = try await Self.connectClient(node, clients, "reader-\(n)")
                for list in Self.chaosLists { reader.send(.subscribe(Subscribe(listName: list))) }
                #expect(
                    await eventually(timeout: 30) {
                        reader.messages.filter(Self.isSnapshot).count == Self.chaosLists.count
                    }, "node \(names[n])")
                for case .snapshot(let snapshot) in reader.messages {
                    #expect(
                        snapshot.position.version == heads[snapshot.listName], "node \(names[n]), \(snapshot.listName)")
                    if let digest = digests[snapshot.listName] {
                        #expect(digest == snapshot.digest, "node \(names[n]), \(snapshot.listName): digest")
                    } else {
                        digests[snapshot.listName] = snapshot.digest
                    }
                }
                reader.close()
            }
            for watcher in watchers { watcher.close() }
            for node in nodes { _ = await node.terminate() }
            await sql.close()
        }
    }

    /// One writer: a random list, a new row, one write at a time; a write unanswered
    /// (its node died, or 4 s passed) is sent again, with the same `(clientID, seq)`,
    /// on the next live node.
    static func chaosWriter(
        index: Int, ports: Shared<[Int?]>, clients: EventLoopThread, stop: Shared<Bool>,
        deadline: ContinuousClock.Instant, seed: UInt64,
        acknowledged: Shared<[Acknowledged]>, rejected: Shared<[String]>
    ) async {
        var random = SeededRandom(seed: seed)
        let clientID = "writer-\(index)"
        var client: TestClient?
        var node = index
        var seq: UInt64 = 0
        while !stop.get() && ContinuousClock.now < deadline {
            seq += 1
            let list = chaosLists[random.int(0..<chaosLists.count)]
            let mutate = Mutate(
                listName: list, clientID: clientID, seq: seq, base: ListVersion(epoch: 0, version: 0),
                operations: [.insertRows([Row(id: "\(clientID)-\(seq)", kind: "t", payload: [])], in: .id("s"), at: 0)])
            // Bounded: a write that no node answers for 60 s fails the test.
            let giveUp = ContinuousClock.now + .seconds(60)
            var answered = false
            while !answered && ContinuousClock.now < giveUp {
                if client == nil || client!.isClosed {
                    client?.close()
                    client = nil
                    node = (node + 1) % 3
                    guard let port = ports.get()[node] else { continue }
                    client = try? await TestClient.connect(port: port, on: clients, clientID: clientID)
                    if client == nil {
                        try? await Task.sleep(for: .milliseconds(50))
                        continue
                    }
                }
                guard let current = client else { continue }
                current.send(.mutate(mutate))
                let reply = await Self.answer(to: seq, on: current, timeout: 4)
                switch reply {
                case .ack(let ack)?:
                    acknowledged.update {
                        $0.append(Acknowledged(list: list, clientID: clientID, seq: seq, version: ack.committed))
                    }
                    answered = true
                case .reject(let reject)?:
                    rejected.update { $0.append("\(clientID)#\(seq) on \(list): \(reject.code) \(reject.message)") }
                    answered = true
                default:
                    // Closed or silent: the next node.
                    current.close()
                    client = nil
                }
            }
            if !answered {
                Issue.record("\(clientID)#\(seq) on \(list) was never answered")
                break
            }
        }
        client?.close()
    }
}
