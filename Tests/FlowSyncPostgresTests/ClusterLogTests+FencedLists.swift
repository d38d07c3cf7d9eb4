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

/// Issue #33, items 2 and 7: a PostgreSQL failover cuts off appends in flight; each
/// owner reads them back as not committed and fences those lists. The writes other
/// nodes had forwarded to them must not wait for a half-lease re-send, and the lists'
/// clients must be told what happened. Part of the serialized `ClusterLogTests` suite.
extension ClusterLogTests {
    /// Three nodes on a primary with a synchronous standby; six lists, two owned by
    /// each node, each written only through another node (forwarded). The lists' rows
    /// are locked, so each owner's append of the next write waits in PostgreSQL — in
    /// flight — when the primary stops (immediate shutdown) and the standby is promoted.
    /// Every forwarded write is acknowledged within 1 s of the promotion; the subscribers
    /// of fenced lists on their owners are closed with 5001 and told the list reloads on
    /// that node; every acknowledged write is in the log once.
    ///
    /// Run twice: promoted at once, and promoted 5.5 s after the primary stopped — longer
    /// than the 5 s lease, as a loaded machine once made it (soak at 01150b5). Then every
    /// lease has lapsed when PostgreSQL is back, the first node back may claim another's
    /// lists, and each node's reconnect pace decides how long the others' writes wait
    /// (``Reconnection``: with a 2 s ceiling one node came back 1.3 s after the others).
    @Test(arguments: [Duration.zero, .milliseconds(5_500)])
    func aFailoverWithAppendsInFlightOnForwardedListsStallsNoListLongerThanASecond(
        promotedAfter: Duration
    )
        async throws
    {
        try await Self.withSynchronousStandby { primary, standby in
            try await Self.failoverWithForwardedLists(primary: primary, standby: standby, promotedAfter: promotedAfter)
        }
    }

    static func failoverWithForwardedLists(
        primary: PostgresServer, standby: PostgresServer, promotedAfter: Duration
    ) async throws {
        let watch = try await SQLSession.open(primary.conninfo)
        try await Self.expectSynchronousStandby(watch)
        let clients = try EventLoopThread()
        defer { _ = clients.shutdown() }
        let both =
            "host=127.0.0.1,127.0.0.1 port=\(primary.port),\(standby.port) dbname=postgres user=flowsync connect_timeout=2 target_session_attrs=read-write"
        let names = ["a", "b", "c"]
        var nodes: [DaemonProcess] = []
        for name in names {
            nodes.append(try await Self.daemon(conninfo: both, node: name, leaseMilliseconds: 5_000, connected: true))
        }
        // Two lists per owner; each written through the next node.
        var lists: [(name: String, owner: Int)] = []
        for (owner, name) in names.enumerated() {
            for list in (0..<1_000).map({ "forwarded-\($0)" }).filter({ Placement.owner(of: $0, among: names) == name })
                .prefix(2)
            {
                lists.append((list, owner))
            }
        }
        var writers: [TestClient] = []
        for (k, list) in lists.enumerated() {
            let writer = try await Self.connectClient(nodes[(list.owner + 1) % 3], clients, "writer-\(k)")
            #expect(
                await Self.write(writer, list.name, seq: 1, [.insertSections([Section(id: "s")], at: 0)])?.version == 1,
                "\(list.name)")
            writers.append(writer)
        }
        let owners = try await watch.query("SELECT list, owner FROM fs_lists ORDER BY list").rows
        #expect(
            owners.count == lists.count
                && lists.allSatisfy { list in owners.contains { $0 == [list.name, names[list.owner]] } }, "\(owners)")
        // A subscriber of each list on its owner: the lists with an append in flight are
        // about to be fenced.
        var subscribers: [TestClient] = []
        for (k, list) in lists.enumerated() {
            let subscriber = try await Self.connectClient(nodes[list.owner], clients, "subscriber-\(k)")
            subscriber.send(.subscribe(Subscribe(listName: list.name)))
            #expect(await subscriber.waitFor(Self.isSnapshot) != nil)
            subscribers.append(subscriber)
        }

        // Lock the lists' rows: the owners' appends of the next writes wait in flight.
        let locker = try await SQLSession.open(primary.conninfo)
        _ = try await locker.query("BEGIN")
        _ = try await locker.query("SELECT list FROM fs_lists FOR UPDATE")
        for (k, list) in lists.enumerated() {
            writers[k].send(
                .mutate(
                    Mutate(
                        listName: list.name, clientID: "writer-\(k)", seq: 2, base: ListVersion(epoch: 0, version: 0),
                        operations: Self.row("in-flight-\(k)"))))
        }
        // Every node's session waits on the lock — in an append, or in a claim behind which
        // its other statements wait — and at least one append is in flight. Not "three
        // appends": each node's one session both forwards a write and appends one, and
        // a node that appends before it forwards holds its forward behind the lock, so
        // that forward's owner never appends; the forwarder's take-over claim (after half
        // a lease) waits on the lock instead. A CI run at load met that order (sessions:
        // two appends and one claim waiting).
        let inFlight = try await Self.poll(
            watch,
            """
            SELECT count(*) FILTER (WHERE query LIKE '%WITH advanced AS%' OR query LIKE '%WITH claimed AS%'),
                   count(*) FILTER (WHERE query LIKE '%WITH advanced AS%')
            FROM pg_stat_activity WHERE wait_event_type = 'Lock'
            """
        ) { ($0.int(0, 0) ?? 0) >= 3 && ($0.int(0, 1) ?? 0) >= 1 }
        if !inFlight {
            // Without the nodes' statements in flight the failover below tests nothing,
            // and a node whose session waited this long has lost its lease: say what each
            // session was doing and stop here rather than report the consequences.
            let sessions = try await watch.query(
                "SELECT pid, state, wait_event_type, wait_event, left(query, 160) FROM pg_stat_activity WHERE backend_type = 'client backend'"
            )
            Issue.record("every node's session should wait on the lock; sessions: \(sessions.rows)")
            for (n, node) in nodes.enumerated() { print("node \(names[n]):\n\(node.output)") }
            await locker.close()
            await watch.close()
            return
        }
        await watch.close()

        _ = await primary.process.stop(gracePeriod: .seconds(10), signal: SIGQUIT)
        await locker.close()
        if promotedAfter > .zero { try await Task.sleep(for: promotedAfter) }
        let promoter = try await SQLSession.open(standby.conninfo)
        #expect(
            try await promoter.query("SELECT pg_promote(true, 30)").rows.first?[0] == "t", "the standby is promoted")
        let promoted = ContinuousClock.now

        var waits: [Duration] = []
        var acknowledged: [(list: String, clientID: String, seq: UInt64, version: UInt64)] = []
        for (k, list) in lists.enumerated() {
            let answer = await Self.answer(to: 2, on: writers[k], timeout: 15)
            guard case .ack(let ack)? = answer else {
                Issue.record("\(list.name): no Ack for the forwarded write: \(String(describing: answer))")
                continue
            }
            waits.append(ContinuousClock.now - promoted)
            acknowledged.append((list.name, "writer-\(k)", 2, ack.committed.version))
        }
        let longest = waits.max() ?? .seconds(99)
        print(
            "failover with appends in flight (promoted \(promotedAfter) after the stop): \(acknowledged.count) forwarded writes acknowledged, the longest \(longest) after the promotion"
        )
        #expect(acknowledged.count == lists.count && longest <= .seconds(1), "waits: \(waits)")
        if longest > .seconds(1) {
            for (n, node) in nodes.enumerated() { print("node \(names[n]):\n\(node.output)") }
        }

        // The subscribers of fenced lists were told the truth: the list reloads on its
        // owner — or, when the leases lapsed before the promotion, possibly that another
        // node (one back first) claimed it. At least one append was in flight, so at
        // least one list is fenced.
        var closed = 0
        for (k, subscriber) in subscribers.enumerated() {
            // The first waits for the fences; the others have had that time.
            let closing = await subscriber.waitFor(timeout: closed == 0 ? 5 : 0.5, Self.isDraining)
            guard case .error(let error)? = closing else { continue }
            closed += 1
            let owner = nodes[lists[k].owner]
            print("the subscriber of fenced \(lists[k].name) was told: \(error.message)")
            if error.message.contains("is now owned by") {
                // Named when the owner read the claimer's name, else "another node": never
                // the owner itself. (Which node: a take-over logs "took over list", a claim
                // by a load does not log, so the logs cannot say more; a CI run saw "node c"
                // after b's take-over.) Also after an immediate promotion when the owner's
                // outage outlasted its lease: a clean-clone CI at cd8bf4d, loaded, saw the
                // owner reconnect 5.4 s after the loss, and another node had claimed it.
                let named = names.indices.filter { error.message.contains("now owned by node \(names[$0]) ") }
                #expect(!named.contains(lists[k].owner), "the owner is not told it claimed its own list")
                #expect(owner.output.contains("another node owns the list"), "the owner's log says so too")
            } else {
                #expect(error.message.contains("reloads from PostgreSQL on this node"), "\(error.message)")
                #expect(owner.output.contains("reloads from PostgreSQL on this node"), "the log says so too")
            }
        }
        #expect(closed >= 1, "the subscribers of the lists with an append in flight are closed with 5001")
        let owner = nodes[lists[0].owner]
        if let lost = owner.output.split(separator: "\n").first(where: { $0.contains("connection lost") }) {
            print("the owner logged: \(lost)")
        }
        #expect(
            !owner.output.contains("EBADF"),
            "the lost connection is reported by libpq, not as uv_poll: EBADF: \(owner.output.suffix(3_000))")

        // Every acknowledged write once in the log, at its version.
        for write in acknowledged
            + lists.enumerated().map({ ($0.element.name, "writer-\($0.offset)", UInt64(1), UInt64(1)) })
        {
            let rows = try await promoter.query(
                "SELECT version, body FROM fs_batches WHERE list = $1 ORDER BY version", [.text(write.list)])
            var found: [Int64] = []
            for r in 0..<rows.rows.count {
                let decoder = FrameDecoder(limits: StoreFormat.decoderLimits, dictionary: .standard)
                decoder.feed(rows.bytes(r, 1) ?? [])
                guard case .diff(let diff)? = try? decoder.next() else { continue }
                if diff.mutations.contains(MutationID(clientID: write.clientID, seq: write.seq)) {
                    found.append(rows.int(r, 0) ?? -1)
                }
            }
            #expect(
                found == [Int64(write.version)],
                "\(write.list) \(write.clientID)#\(write.seq): in the log at \(found), acknowledged at \(write.version)"
            )
        }
        for client in writers + subscribers { client.close() }
        for node in nodes {
            #expect(!node.hasExited, "a node exited: \(node.output.suffix(2_000))")
            _ = await node.terminate()
        }
        await promoter.close()
    }
}
