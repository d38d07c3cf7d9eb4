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

/// Issue #18, test 4: PostgreSQL primary failover. A primary with a synchronous standby
/// (`synchronous_commit = on`, `synchronous_standby_names = 'FIRST 1 (standby1)'`), a
/// `flowsyncd` whose `postgres` names both (`target_session_attrs=read-write`), a
/// writer writing without pause. Mid-run the primary is stopped (immediate shutdown)
/// and the standby promoted. The node reconnects to the new primary within its lease,
/// resolves the appends the cut left unknown, and goes on; the writer retries an
/// unanswered write with the same `(clientID, seq)`. No acknowledged write is lost.
/// Part of the serialized `ClusterLogTests` suite.
extension ClusterLogTests {
    @Test func primaryFailoverToTheSynchronousStandbyLosesNoAcknowledgedWrite() async throws {
        try await Self.withSynchronousStandby { primary, standby in
            try await Self.failover(primary: primary, standby: standby)
        }
    }

    static func failover(primary: PostgresServer, standby: PostgresServer) async throws {
        let watch = try await SQLSession.open(primary.conninfo)
        try await Self.expectSynchronousStandby(watch)
        await watch.close()

        let clients = try EventLoopThread()
        defer { _ = clients.shutdown() }
        var options = DaemonProcess.Options(binary: try BuiltProduct.path("flowsyncd"))
        let both =
            "host=127.0.0.1,127.0.0.1 port=\(primary.port),\(standby.port) dbname=postgres user=flowsync connect_timeout=2 target_session_attrs=read-write"
        // The lease outlasts the failover, so this node's lists stay its own (a longer
        // outage costs no exit either: ClusterLogTests+Outage.swift).
        options.configText = Self.clusterConfigText(conninfo: both, node: "a", leaseMilliseconds: 15_000)
        options.logLevel = "info"
        let node = try await DaemonProcess.start(options)
        let writer = try await Self.connectClient(node, clients, "writer")
        #expect(await Self.write(writer, "todo", seq: 1, [.insertSections([Section(id: "s")], at: 0)])?.version == 1)

        let acknowledged = Shared<[String]>(["s"])
        let failedOver = Shared<Bool>(false)
        let deadline = ContinuousClock.now + .seconds(40)
        async let writing: Void = {
            var client: TestClient? = writer
            var seq: UInt64 = 1
            var afterFailover = 0
            // Until 40 writes went through after the failover (bounded by the deadline).
            while afterFailover < 40 && ContinuousClock.now < deadline {
                seq += 1
                let mutate = Mutate(
                    listName: "todo", clientID: "writer", seq: seq, base: ListVersion(epoch: 0, version: 0),
                    operations: [.insertRows([Row(id: "w\(seq)", kind: "t", payload: [])], in: .id("s"), at: 0)])
                var answered = false
                while !answered && ContinuousClock.now < deadline {
                    if client == nil || client!.isClosed {
                        client?.close()
                        client = try? await TestClient.connect(port: node.port, on: clients, clientID: "writer")
                        if client == nil {
                            try? await Task.sleep(for: .milliseconds(100))
                            continue
                        }
                    }
                    client!.send(.mutate(mutate))
                    let reply = await Self.answer(to: seq, on: client!, timeout: 20)
                    switch reply {
                    case .ack?:
                        acknowledged.update { $0.append("w\(seq)") }
                        if failedOver.get() { afterFailover += 1 }
                        answered = true
                    case .reject(let reject)?:
                        Issue.record("write \(seq) rejected: \(reject.code) \(reject.message)")
                        answered = true
                    default:
                        client?.close()
                        client = nil
                    }
                }
            }
            client?.close()
        }()

        // Mid-run: the primary stops at once, the standby is promoted.
        try await Task.sleep(for: .milliseconds(1_500))
        let before = acknowledged.get().count
        _ = await primary.process.stop(gracePeriod: .seconds(10), signal: SIGQUIT)
        let promoter = try await SQLSession.open(standby.conninfo)
        #expect(
            try await promoter.query("SELECT pg_promote(true, 30)").rows.first?[0] == "t", "the standby is promoted")
        failedOver.set(true)
        await writing
        let acked = acknowledged.get()
        print("primary failover: \(before) writes acknowledged before the primary stopped, \(acked.count) in all")
        #expect(acked.count >= before + 40, "writes go on after the failover: \(acked.count - before)")
        #expect(!node.hasExited, "the node survived the failover: \(node.output.suffix(2_000))")

        // Everything acknowledged is on the new primary, the versions contiguous.
        let rows = try await promoter.query(
            "SELECT head, (SELECT count(*) FROM fs_batches WHERE list = 'todo'), (SELECT max(version) FROM fs_batches WHERE list = 'todo') FROM fs_lists WHERE list = 'todo'"
        )
        #expect(rows.int(0, 0) == rows.int(0, 1) && rows.int(0, 0) == rows.int(0, 2))
        let reader = try await Self.connectClient(node, clients, "reader")
        reader.send(.subscribe(Subscribe(listName: "todo")))
        guard case .snapshot(let snapshot)? = await reader.waitFor(Self.isSnapshot) else {
            Issue.record("no snapshot after the failover")
            return
        }
        #expect(snapshot.position.version == UInt64(rows.int(0, 0) ?? -1))
        let held = Set(snapshot.sections.flatMap { $0.rows.map(\.id) } + snapshot.sections.map(\.id))
        let lost = acked.filter { !held.contains($0) }
        print("primary failover: \(lost.count) acknowledged writes lost")
        #expect(lost.isEmpty, "lost: \(lost.prefix(10))")
        reader.close()
        #expect(node.output.contains("PostgreSQL connection lost"), "the node saw the primary go")
        _ = await node.terminate()
        await promoter.close()
    }
}
