import FlowSyncCore
import FlowSyncLoop
import FlowSyncProcess
import FlowSyncProtocol
import FlowSyncTestSupport
import Foundation
import Testing

/// Issue #33, items 4 and 5, as a benchmark (run only with `FLOWSYNC_CLUSTER_BENCH=1`;
/// `FLOWSYNC_BENCH_FLOWSYNCD=/path/to/flowsyncd` runs another build, `FLOWSYNC_BENCH_FSYNC=1`
/// a primary that flushes its WAL (the test servers run with `fsync = off`), e.g. the one
/// before the change; docs/CLUSTER.md, "The write ceiling", has the figures and the
/// commands). A primary with a synchronous standby, three nodes (lease 5 s), 200 lists
/// placed by the nodes themselves. Then:
/// 1. **Forwarded against owner latency**: one writer on a list's owner and one on
///    another node, taking turns, one write in flight each, `FLOWSYNC_BENCH_LATENCY`
///    writes each (default 200): the medians and p90s of write → Ack.
/// 2. **Aggregate committed batches/s**: 4 writers per node, 8 writes in flight each, to
///    random lists of the 200, for `FLOWSYNC_BENCH_SECONDS` (default 10): the batches
///    committed (the sum of `fs_lists.head`'s rises) per second, and the Acks.
extension ClusterLogTests {
    static var benchEnabled: Bool { ProcessInfo.processInfo.environment["FLOWSYNC_CLUSTER_BENCH"] == "1" }

    @Test(.enabled(if: ClusterLogTests.benchEnabled))
    func benchmarkForwardedLatencyAndTheAggregateWriteCeiling() async throws {
        // FLOWSYNC_BENCH_FSYNC=1: the primary flushes its WAL for real (the test servers
        // run with fsync = off otherwise), as the issue's pgbench figures did.
        let fsync = ProcessInfo.processInfo.environment["FLOWSYNC_BENCH_FSYNC"] == "1" ? ["-c", "fsync=on"] : []
        try await Self.withSynchronousStandby(extraSettings: fsync) { primary, _ in
            try await Self.writeCeiling(primary: primary)
        }
    }

    static func writeCeiling(primary: PostgresServer) async throws {
        let environment = ProcessInfo.processInfo.environment
        let binary = try environment["FLOWSYNC_BENCH_FLOWSYNCD"] ?? BuiltProduct.path("flowsyncd")
        let latencyWrites = Int(environment["FLOWSYNC_BENCH_LATENCY"] ?? "") ?? 200
        let seconds = Int(environment["FLOWSYNC_BENCH_SECONDS"] ?? "") ?? 10
        let sql = try await SQLSession.open(primary.conninfo)
        try await Self.expectSynchronousStandby(sql)
        let clients = try EventLoopThread()
        defer { _ = clients.shutdown() }
        // Peer links (issue #33, item 4) unless another build runs or FLOWSYNC_BENCH_LINKS=0.
        let links = environment["FLOWSYNC_BENCH_FLOWSYNCD"] == nil && environment["FLOWSYNC_BENCH_LINKS"] != "0"
        let secret = links ? try Self.peerSecretFile(Self.goodSecret) : nil
        defer { if let secret { try? FileManager.default.removeItem(atPath: secret) } }
        var nodes: [DaemonProcess] = []
        for name in ["n1", "n2", "n3"] {
            var options = DaemonProcess.Options(binary: binary)
            options.configText =
                Self.clusterConfigText(conninfo: primary.conninfo, node: name, leaseMilliseconds: 5_000)
                + (secret.map { "peer_secret_file = \"\($0)\"\n" } ?? "")
            options.logLevel = "warning"
            nodes.append(try await DaemonProcess.start(options))
        }
        // Every node knows the others before the lists are placed (an older build learns
        // them only at a lease renewal, every third of the lease).
        try await Task.sleep(for: .seconds(2))
        let lists = (0..<200).map { "w-\($0)" }
        let creator = try await Self.connectClient(nodes[0], clients, "creator")
        for (k, list) in lists.enumerated() {
            #expect(
                await Self.write(creator, list, seq: UInt64(k + 1), [.insertSections([Section(id: "s")], at: 0)])?
                    .version == 1, "\(list)")
        }
        creator.close()
        let owners = try await sql.query("SELECT owner, count(*) FROM fs_lists GROUP BY owner ORDER BY owner")
        print(
            "write ceiling: \(binary), peer links \(links ? "on" : "off"), lists per owner: \((0..<owners.rows.count).map { "\(owners.rows[$0][0] ?? "-")=\(owners.rows[$0][1] ?? "")" })"
        )

        // 1. Latency: the owner of w-0, and another node.
        let owner = try await sql.query("SELECT owner FROM fs_lists WHERE list = 'w-0'").rows.first?[0] ?? nil
        let ownerIndex = ["n1", "n2", "n3"].firstIndex(of: owner ?? "") ?? 0
        let onOwner = try await Self.connectClient(nodes[ownerIndex], clients, "on-owner")
        let forwarding = try await Self.connectClient(nodes[(ownerIndex + 1) % 3], clients, "forwarding")
        var ownerTimes: [Double] = []
        var forwardedTimes: [Double] = []
        for k in 0..<latencyWrites {
            for (client, isOwner) in [(onOwner, true), (forwarding, false)] {
                let start = ContinuousClock.now
                let version = await Self.write(client, "w-0", seq: UInt64(k + 1), Self.row("\(client.clientID)-\(k)"))
                let elapsed = ContinuousClock.now - start
                let ms = Double(elapsed.components.seconds) * 1_000 + Double(elapsed.components.attoseconds) / 1e15
                #expect(version != nil, "\(client.clientID) write \(k)")
                if isOwner { ownerTimes.append(ms) } else { forwardedTimes.append(ms) }
            }
            _ = onOwner.drain()
            _ = forwarding.drain()
        }
        onOwner.close()
        forwarding.close()
        func percentile(_ values: [Double], _ p: Double) -> Double {
            let sorted = values.sorted()
            return sorted.isEmpty ? .nan : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
        }
        let ownerMedian = percentile(ownerTimes, 0.5)
        let forwardedMedian = percentile(forwardedTimes, 0.5)
        print(
            String(
                format:
                    "write ceiling: latency, %d writes each: owner p50 %.2f ms p90 %.2f ms; forwarded p50 %.2f ms p90 %.2f ms; ratio of medians %.2f",
                latencyWrites, ownerMedian, percentile(ownerTimes, 0.9), forwardedMedian,
                percentile(forwardedTimes, 0.9), forwardedMedian / ownerMedian))

        // 2. Aggregate: 4 writers per node, 8 in flight each.
        let headsBefore = try await sql.query("SELECT coalesce(sum(head), 0) FROM fs_lists").int(0, 0) ?? 0
        let acks = Shared<Int>(0)
        let rejects = Shared<Int>(0)
        let ports = nodes.map(\.port)
        let start = ContinuousClock.now
        let end = start + .seconds(seconds)
        await withTaskGroup(of: Void.self) { group in
            for w in 0..<12 {
                group.addTask {
                    guard
                        let client = try? await TestClient.connect(
                            port: ports[w % 3], on: clients, clientID: "bench-\(w)")
                    else { return }
                    var random = SeededRandom(seed: UInt64(w) &+ 5)
                    var seq: UInt64 = 0
                    var inFlight = 0
                    while ContinuousClock.now < end {
                        while inFlight < 8 {
                            seq += 1
                            let list = lists[random.int(0..<lists.count)]
                            client.send(
                                .mutate(
                                    Mutate(
                                        listName: list, clientID: client.clientID, seq: seq,
                                        base: ListVersion(epoch: 0, version: 0),
                                        operations: [
                                            .insertRows(
                                                [Row(id: "b\(w)-\(seq)", kind: "t", payload: [])], in: .id("s"), at: 0)
                                        ])))
                            inFlight += 1
                        }
                        _ = await client.waitFor(timeout: 2) { m in
                            if case .ack = m { return true }
                            if case .reject = m { return true }
                            return false
                        }
                        for m in client.drain() {
                            switch m {
                            case .ack:
                                inFlight -= 1
                                acks.update { $0 += 1 }
                            case .reject:
                                inFlight -= 1
                                rejects.update { $0 += 1 }
                            default: break
                            }
                        }
                        if client.isClosed { break }
                    }
                    client.close()
                }
            }
        }
        let elapsed = ContinuousClock.now - start
        let measured = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let headsAfter = try await sql.query("SELECT coalesce(sum(head), 0) FROM fs_lists").int(0, 0) ?? 0
        let batches = headsAfter - headsBefore
        print(
            String(
                format:
                    "write ceiling: aggregate over %.1f s: %d batches committed = %.0f batches/s; %d Acks = %.0f writes/s; %d Rejects",
                measured, batches, Double(batches) / measured, acks.get(), Double(acks.get()) / measured, rejects.get())
        )
        #expect(rejects.get() == 0)
        for node in nodes {
            #expect(!node.hasExited, "\(node.output.suffix(2_000))")
            _ = await node.terminate()
        }
        await sql.close()
    }
}
