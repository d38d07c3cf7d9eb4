import FlowSyncClient
import FlowSyncCore
import FlowSyncGatewayCore
import FlowSyncProcess
import FlowSyncServer
import FlowSyncTestSupport
import Foundation
import Testing

@testable import FlowSyncGateway

#if canImport(Glibc)
import Glibc
#endif

/// Issue #31: "Webhooks against a real receiver that fails at random: every batch arrives,
/// in order per list, and duplicates only carry the same version. That holds […] across a
/// daemon failover in cluster mode."
///
/// Three real `flowsyncd` nodes on one real PostgreSQL (lease 1 s), one gateway that names
/// all three, one hook on three lists (one owned by each node), and a receiver that fails
/// 20 % of its attempts (seeded). A writer posts through the gateway without pause, each
/// write with an `Idempotency-Key` it retries until it is acknowledged. Mid-run the node
/// carrying the first list's webhook subscription — it owns one of the lists — gets
/// SIGKILL. The writes go on (through the survivors, once the lease lapsed); the hook
/// resubscribes from its cursor through another node. The receiver is also down from just
/// before the kill until 15 more writes went through, so the hook's queues (2 batches)
/// overflow and the lists resume from their cursors through the surviving nodes (a
/// `catchUp`, the daemon's resume). Every acknowledged version must then be delivered,
/// each list's keys must only grow, a repeated key must carry the same body, and each
/// delivery must start where the previous one ended.
///
/// Separate from `ClusterLogTests` (another test target), so it may run beside it: each
/// starts its own PostgreSQL on a free port.
@Suite(
    .serialized, .timeLimit(.minutes(3)),
    .enabled(
        if: PostgresServer.isInstalled || ProcessInfo.processInfo.environment["CI"] == "true",
        "PostgreSQL 15 is not installed (make deps installs it)"))
struct WebhookFailoverTests {
    static let nodes = ["a", "b", "c"]

    /// A `flowsyncd` cluster node (lease 1 s), started once it logged "cluster: connected"
    /// (its lease committed), so lists created afterwards land on their hash node.
    static func node(_ pg: PostgresServer, _ name: String) async throws -> DaemonProcess {
        var options = DaemonProcess.Options(binary: try BuiltProduct.path("flowsyncd"))
        options.configText = "[cluster]\npostgres = \"\(pg.conninfo)\"\nnode = \"\(name)\"\nlease_ms = 1000\n"
        options.logLevel = ProcessInfo.processInfo.environment["FLOWSYNC_TEST_LOG_LEVEL"] ?? "info"
        let daemon = try await DaemonProcess.start(options)
        let up = await daemon.child.waitForLine(timeout: .seconds(30)) {
            $0.contains("cluster: connected") ? true : nil
        }
        if up != true { Issue.record("node \(name) did not connect: \(daemon.output.suffix(2_000))") }
        return daemon
    }

    /// One write through the gateway, retried with the same `Idempotency-Key` until it is
    /// acknowledged (a 5xx during the failover: the daemon away, a link cut, a timeout) or
    /// `deadline` passes. Returns the committed version, nil past the deadline.
    static func write(
        _ gateway: GatewayHarness, list: String, key: String, operations: String, deadline: ContinuousClock.Instant
    ) async -> UInt64? {
        var failures: [Int] = []
        while ContinuousClock.now < deadline {
            do {
                let (answer, object) = try await gateway.json(
                    "POST", "/v1/lists/\(list)/mutations", headers: ["Idempotency-Key": key],
                    body: #"{"operations":\#(operations)}"#)
                if answer.status == 200, let committed = object["committed"] as? [String: Any],
                    let version = committed["version"] as? Int
                {
                    return UInt64(version)
                }
                if (400..<500).contains(answer.status) {
                    Issue.record("write \(key) on \(list) refused: \(answer)")
                    return nil
                }
                failures.append(answer.status)
            } catch {
                failures.append(0)
            }
            try? await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("write \(key) on \(list) not acknowledged in time; answers: \(failures.suffix(20))")
        return nil
    }

    @Test func everyAcknowledgedBatchArrivesInOrderAcrossTheKillOfTheSubscriptionsNode() async throws {
        try await PostgresServer.with { pg in
            var daemons: [String: DaemonProcess] = [:]
            for name in Self.nodes { daemons[name] = try await Self.node(pg, name) }
            // One list placed on each node: whichever node dies owns one of them.
            let lists = Self.nodes.map { owner in
                (0..<1_000).map { "hooked-\($0)" }.first { Placement.owner(of: $0, among: Self.nodes) == owner }!
            }
            let receiver = try await WebhookReceiver(failureRate: 0.2, seed: 3_131)
            let endpoints = Self.nodes.map { Endpoint(host: "127.0.0.1", port: daemons[$0]!.port) }
            let gateway = try await GatewayHarness(endpoints: endpoints) {
                $0.webhooks = [WebhookTests.hook("failover", receiver, lists: lists, maxQueued: 2)]
            }
            let deadline = ContinuousClock.now + .seconds(100)
            for list in lists {
                _ = await Self.write(
                    gateway, list: list, key: "section-\(list)",
                    operations: #"[{"op":"insertSections","at":0,"sections":[{"id":"S"}]}]"#, deadline: deadline)
            }

            // The writer: round robin over the lists until 30 writes were acknowledged
            // after the kill.
            let acknowledged = Shared<[(list: String, version: UInt64)]>([])
            let killed = Shared<Bool>(false)
            let afterKill = Shared<Int>(0)
            async let writing: Void = {
                var i = 0
                while afterKill.get() < 30 && ContinuousClock.now < deadline {
                    let list = lists[i % lists.count]
                    let wasKilled = killed.get()
                    if let version = await Self.write(
                        gateway, list: list, key: "w\(i)",
                        operations: #"[{"op":"insertRows","section":"S","at":0,"rows":[{"id":"r\#(i)"}]}]"#,
                        deadline: deadline)
                    {
                        acknowledged.update { $0.append((list, version)) }
                        if wasKilled { afterKill.update { $0 += 1 } }
                    }
                    i += 1
                }
            }()

            // Once 15 writes went through: SIGKILL the node the first list's webhook
            // subscription is on.
            let first = try #require(gateway.gateway.webhooks.deliveries.first { $0.list == lists[0] })
            var victim: String?
            while victim == nil && ContinuousClock.now < deadline {
                if acknowledged.get().count >= 15, let endpoint = first.daemonEndpoint {
                    victim = Self.nodes.first { daemons[$0]!.port == endpoint.port }
                } else {
                    try await Task.sleep(for: .milliseconds(20))
                }
            }
            let dead = try #require(victim, "the first list's webhook never had a link")
            let owned = lists[Self.nodes.firstIndex(of: dead)!]
            let subscriptionsBefore = Dictionary(
                uniqueKeysWithValues: gateway.gateway.webhooks.deliveries.map { ($0.list, $0.status.subscriptions) })
            receiver.setDown(true)
            #expect(await daemons[dead]!.kill9() == .signaled(9))
            killed.set(true)
            print("webhook failover: killed node \(dead) (owner of \(owned)) after \(acknowledged.get().count) writes")
            while afterKill.get() < 15 && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            receiver.setDown(false)
            await writing

            // Everything acknowledged arrives.
            let acked = acknowledged.get()
            for list in lists {
                let last = acked.filter { $0.list == list }.map(\.version).max() ?? 0
                #expect(
                    await receiver.waitFor(hook: "failover", list: list, version: last, timeout: .seconds(40)),
                    "\(list) reached \(receiver.accepted.last { $0.list == list }?.key ?? "nothing") of \(last)")
            }
            let accepted = receiver.accepted
            for list in lists {
                let mine = accepted.filter { $0.list == list }
                #expect(mine.first?.type == "snapshot", "\(list): first sight of the list is a snapshot")
                WebhookTests.checkContiguous(accepted, hook: "failover", list: list)
                // Every acknowledged version is inside what was delivered: the chain starts
                // at or before it (a snapshot) and, being contiguous, reaches past it.
                let versions = acked.filter { $0.list == list }.map(\.version)
                if let start = mine.first?.version, let lowest = versions.min() {
                    #expect(start < lowest, "\(list): the first delivery (\(start)) precedes the first write")
                }
                let position = try await gateway.json("GET", "/v1/lists/\(list)").1["position"] as? [String: Any]
                #expect(
                    (position?["version"] as? Int).map(UInt64.init) == mine.last?.version,
                    "\(list): the last delivery is the list's head")
            }
            #expect(receiver.attempts > accepted.count, "the receiver failed some attempts (seeded)")
            let overflows = gateway.gateway.webhooks.deliveries.map(\.status.overflows).reduce(0, +)
            #expect(overflows >= 1, "the outage overflowed a queue, so a list resumed through the daemon's catch-up")
            // The hook's subscriptions on the dead node moved: each of them subscribed again.
            let subscriptionsAfter = Dictionary(
                uniqueKeysWithValues: gateway.gateway.webhooks.deliveries.map { ($0.list, $0.status.subscriptions) })
            #expect(
                subscriptionsAfter[lists[0]]! > subscriptionsBefore[lists[0]]!,
                "the first list's hook resubscribed: \(subscriptionsBefore) → \(subscriptionsAfter)")
            let types = Dictionary(grouping: accepted, by: \.type).mapValues(\.count)
            print(
                "webhook failover: \(acked.count) writes acknowledged, \(accepted.count) deliveries accepted (\(types)) of \(receiver.attempts) attempts, \(overflows) overflows, subscriptions \(subscriptionsBefore) → \(subscriptionsAfter)"
            )

            await gateway.stop()
            await receiver.stop()
            for name in Self.nodes where name != dead {
                #expect(await daemons[name]!.terminate() == .exited(0), "\(daemons[name]!.output.suffix(2_000))")
            }
        }
    }
}
