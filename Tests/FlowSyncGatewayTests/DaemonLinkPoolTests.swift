import FlowSyncClient
import FlowSyncCore
import FlowSyncGatewayCore
import FlowSyncServer
import FlowSyncTestSupport
import Foundation
import Testing

@testable import FlowSyncGateway

/// The pool of daemon links behind GET and un-keyed POST, against a real daemon: links
/// are reused, bounded, and a closed one is not handed out again. The decisions
/// themselves are tested event by event in ``LinkPoolStateMachineTests``.
@Suite(.timeLimit(.minutes(2))) struct DaemonLinkPoolTests {
    static func insert(_ id: String) -> String {
        #"{"operations":[{"op":"insertRows","section":"S","at":0,"rows":[{"id":"\#(id)"}]}]}"#
    }

    @Test func sequentialRequestsReuseOneLinkAndEachGetSeesTheWritesBeforeIt() async throws {
        let server = try await EmbeddedServer()
        let gateway = try await GatewayHarness(server: server)
        let (seeded, _) = try await gateway.json(
            "POST", "/v1/lists/pool/mutations", body: #"{"operations":[{"op":"setSections","sections":[{"id":"S"}]}]}"#)
        #expect(seeded.status == 200, "\(seeded)")
        for i in 0..<20 {
            let (posted, answer) = try await gateway.json(
                "POST", "/v1/lists/pool/mutations", body: Self.insert("r\(i)"))
            #expect(posted.status == 200, "\(posted)")
            #expect((answer["committed"] as? [String: Any])?["version"] as? Int == i + 2)
            // The same list read again and again on a reused link: always its Snapshot,
            // never a late Diff of the previous read's subscription.
            let (got, list) = try await gateway.json("GET", "/v1/lists/pool")
            #expect(got.status == 200, "\(got)")
            #expect((list["position"] as? [String: Any])?["version"] as? Int == i + 2, "\(got)")
        }
        // A GET's link comes back after its Pong, so a second link may have been opened
        // meanwhile; never one per request.
        let counts = gateway.gateway.linkPool.counts
        #expect(counts.links >= 1 && counts.links <= 3, "\(counts)")
        #expect(counts.waiting == 0)
        await gateway.stop()
        #expect(gateway.gateway.linkPool.counts.links <= 3)
        #expect(await server.stop())
    }

    /// The Ping/Pong barrier (rule 5 of GATEWAY.md's pool), made certain: every
    /// subscription on ``LateDiffDaemon`` leaves a Diff on the wire past its Unsubscribe,
    /// delivered only with the answer to the link's next frame. With the barrier that
    /// frame is the Ping, so the late Diff reaches the finished GET's handler and the next
    /// GET answers its own Snapshot. Without it (the link checked in right after the
    /// Unsubscribe), the next GET's Subscribe releases the Diff, and that GET takes it for
    /// its answer: 502 "no snapshot". Checked: with the round trip removed from
    /// `GatewayRoutes.release`, GETs 2, 4 and 6 answered 502 (and 3 and 5, on the new link
    /// that replaced the failed one, another link's version).
    @Test func aDiffStillOnTheWireAfterAnUnsubscribeNeverAnswersTheNextGetOnThatLink() async throws {
        let daemon = try LateDiffDaemon()
        let gateway = try await GatewayHarness(endpoints: [Endpoint(host: "127.0.0.1", port: daemon.port)]) {
            $0.limits.linkPool = LinkPoolLimits(maxPerCredential: 1, maxTotal: 1, idleMilliseconds: 60_000)
        }
        for i in 1...6 {
            let (got, list) = try await gateway.json("GET", "/v1/lists/late")
            #expect(got.status == 200, "GET \(i): \(got)")
            // The daemon's Snapshot for this GET's own Subscribe, not the late Diff of the one before.
            #expect((list["position"] as? [String: Any])?["version"] as? Int == i, "GET \(i): \(got)")
        }
        #expect(
            daemon.subscribes == 6 && daemon.heldDiffsReleased >= 5, "\(daemon.subscribes) \(daemon.heldDiffsReleased)")
        #expect(gateway.gateway.linkPool.counts.links == 1, "one link served every GET")
        await gateway.stop()
        daemon.stop()
    }

    /// Reads of a list that is being written, all on the pool's one link: each GET's
    /// subscription gets Diffs after its Snapshot, and every GET still answers a Snapshot
    /// whose version never goes back. Against a real daemon this cannot prove the Ping/Pong
    /// barrier (with the barrier removed it still passed twice: a late Diff must land in
    /// the instant between the next GET's Subscribe and its Snapshot);
    /// ``aDiffStillOnTheWireAfterAnUnsubscribeNeverAnswersTheNextGetOnThatLink()`` does.
    @Test func readsDuringWritesOnReusedLinksAlwaysAnswerASnapshotThatNeverGoesBack() async throws {
        let server = try await EmbeddedServer()
        let gateway = try await GatewayHarness(server: server) {
            $0.limits.linkPool = LinkPoolLimits(maxPerCredential: 1, maxTotal: 4, idleMilliseconds: 60_000)
        }
        let (seeded, _) = try await gateway.json(
            "POST", "/v1/lists/live/mutations", body: #"{"operations":[{"op":"setSections","sections":[{"id":"S"}]}]}"#)
        #expect(seeded.status == 200, "\(seeded)")
        // The writer goes straight to the daemon (the SDK), so the reads hold the pool's one link.
        let writer = try FlowSyncClient(configuration: .init(port: server.port))
        let director = writer.director("live")
        try await director.waitUntilLoaded()
        let writing = Task {
            var n = 0
            while !Task.isCancelled {
                n += 1
                let ticket = try? director.submit([.insertRows([Row(id: "w\(n)", kind: "k")], in: .id("S"), at: 0)])
                _ = try? await ticket?.committed()
            }
        }
        var last = 0
        for _ in 0..<40 {
            let (got, list) = try await gateway.json("GET", "/v1/lists/live")
            #expect(got.status == 200, "\(got)")
            let version = (list["position"] as? [String: Any])?["version"] as? Int ?? -1
            #expect(version >= last, "a read went back from \(last) to \(version)")
            last = version
        }
        writing.cancel()
        _ = await writing.value
        #expect(last > 1, "the writer wrote nothing while the reads ran")
        #expect(gateway.gateway.linkPool.counts.links <= 1)
        writer.close()
        await gateway.stop()
        #expect(await server.stop())
    }

    @Test func concurrentWritesOfOneTokenStayWithinItsLimitAndAllCommit() async throws {
        let server = try await EmbeddedServer()
        let gateway = try await GatewayHarness(server: server) {
            $0.limits.linkPool = LinkPoolLimits(maxPerCredential: 2, maxTotal: 4, idleMilliseconds: 60_000)
        }
        let (seeded, _) = try await gateway.json(
            "POST", "/v1/lists/busy/mutations", body: #"{"operations":[{"op":"setSections","sections":[{"id":"S"}]}]}"#)
        #expect(seeded.status == 200, "\(seeded)")
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for i in 0..<24 {
                group.addTask {
                    try await gateway.request("POST", "/v1/lists/busy/mutations", body: Self.insert("c\(i)")).status
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(statuses.count == 24 && statuses.allSatisfy { $0 == 200 }, "\(statuses)")
        let counts = gateway.gateway.linkPool.counts
        #expect(counts.links <= 2 && counts.waiting == 0, "\(counts)")
        let (got, list) = try await gateway.json("GET", "/v1/lists/busy")
        // Writes of one loop turn share a batch (ORDERING.md), so count rows, not versions.
        let rows = ((list["sections"] as? [[String: Any]])?.first?["rows"] as? [Any])?.count
        #expect(got.status == 200 && rows == 24, "\(got)")
        await gateway.stop()
        #expect(await server.stop())
    }

    @Test func aLinkThatClosedIsNotHandedOutAgain() async throws {
        let server = try await EmbeddedServer()
        let gateway = try await GatewayHarness(server: server)
        let pool = gateway.gateway.linkPool
        let (first, link) = try await pool.checkout(token: nil)
        pool.checkin(first, link: link, outcome: .clean)
        #expect(pool.counts.idle == 1)
        link.close()  // as when the daemon restarts: the pool's close handler forgets it
        #expect(pool.counts.links == 0, "\(pool.counts)")
        let (posted, _) = try await gateway.json(
            "POST", "/v1/lists/again/mutations", body: #"{"operations":[{"op":"setSections","sections":[{"id":"S"}]}]}"#
        )
        #expect(posted.status == 200, "\(posted)")
        let (second, again) = try await pool.checkout(token: nil)
        #expect(again !== link && again.isOpen)
        pool.checkin(second, link: again, outcome: .failed)
        #expect(!again.isOpen && pool.counts.links == 0)
        await gateway.stop()
        #expect(await server.stop())
    }
}
