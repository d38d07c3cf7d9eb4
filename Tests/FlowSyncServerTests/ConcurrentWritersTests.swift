import FlowSyncCore
import FlowSyncLoop
import FlowSyncProtocol
import FlowSyncServer
import FlowSyncTestSupport
import Testing

/// 20 writers and 20 subscribers on one list against a real daemon. Each writer keeps
/// its own replica (it subscribes), writes random groups against the version it last
/// saw — one mutation in flight, as the SDK does — for a bounded time. At the end every
/// replica equals the server.
@Suite(.serialized, .timeLimit(.minutes(3))) struct ConcurrentWritersTests {
    /// A replica fed incrementally from a client's messages.
    final class Follower: @unchecked Sendable {
        let client: TestClient
        var replica = Replica()
        private var cursor = 0
        init(_ client: TestClient) { self.client = client }
        func catchUp(_ list: String) {
            let all = client.messages
            guard cursor < all.count else { return }
            replica.apply(Array(all[cursor...]), list: list)
            cursor = all.count
        }
    }

    @Test func twentyWritersAndTwentySubscribersConverge() async throws {
        let server = try await EmbeddedServer()
        let clients = try EventLoopThread()
        let list = "shared"
        var writers: [Follower] = []
        for k in 0..<20 {
            let c = try await TestClient.connect(port: server.port, on: clients, clientID: "writer-\(k)")
            #expect(await subscribe(c, list) != nil)
            writers.append(Follower(c))
        }
        var subscribers: [Follower] = []
        for k in 0..<20 {
            let c = try await TestClient.connect(port: server.port, on: clients, clientID: "reader-\(k)")
            #expect(await subscribe(c, list) != nil)
            subscribers.append(Follower(c))
        }
        let totals = Shared((acked: 0, rejected: 0, conflicts: 0))
        // Bounded by count, not by time: every writer sends exactly this many mutations,
        // so what the test checks does not depend on how fast a loaded machine runs.
        let perWriter: UInt64 = 30
        let deadline = ContinuousClock.now + .seconds(90)
        await withTaskGroup(of: Void.self) { group in
            for (k, writer) in writers.enumerated() {
                group.addTask {
                    var generator = DirectorGenerator(seed: UInt64(1_000 + k), idPrefix: "w\(k)-")
                    var seq: UInt64 = 0
                    while ContinuousClock.now < deadline && seq < perWriter {
                        writer.catchUp(list)
                        guard let base = writer.replica.position else { break }
                        seq += 1
                        let ops = generator.group(for: writer.replica.director, maxOps: 3)
                        writer.client.send(
                            .mutate(
                                Mutate(
                                    listName: list, clientID: writer.client.clientID, seq: seq, base: base,
                                    operations: ops)))
                        let s = seq
                        let reply = await writer.client.waitFor(timeout: 10) {
                            ack($0, seq: s) != nil || reject($0, seq: s) != nil
                        }
                        if reply.flatMap({ ack($0, seq: s) }) != nil {
                            totals.update { $0.acked += 1 }
                        } else if let r = reply.flatMap({ reject($0, seq: s) }) {
                            totals.update {
                                $0.rejected += 1
                                if r.code == .conflict { $0.conflicts += 1 }
                            }
                        } else {
                            Issue.record("writer \(k): no answer to seq \(s)")
                            break
                        }
                    }
                }
            }
        }
        let (director, position) = try #require(await server.withServer { $0.state(of: list) })
        for (k, follower) in (writers + subscribers).enumerated() {
            #expect(
                await follower.client.waitFor(timeout: 20) { diff($0, to: position.version) != nil } != nil
                    || position.version == 0, "client \(k) never reached \(position)")
            follower.catchUp(list)
            #expect(follower.replica.problems.isEmpty, "client \(k): \(follower.replica.problems.prefix(3))")
            #expect(
                follower.replica.position == position, "client \(k) at \(String(describing: follower.replica.position))"
            )
            #expect(follower.replica.director == director, "client \(k) differs from the server")
        }
        let t = totals.get()
        #expect(t.acked + t.rejected == 20 * Int(perWriter), "every mutation was answered: \(t)")
        // Random groups against a shared list: about half commit, the rest are refused
        // as conflicts (measured: 291 of 600). Well over a hundred must commit.
        #expect(t.acked > 4 * Int(perWriter), "mutations commit: \(t)")
        // Mutations of one loop turn share a batch: at least one batch, at most one per ack.
        #expect(position.version > 0 && position.version <= UInt64(t.acked), "batches: \(position) for \(t.acked) acks")
        for f in writers + subscribers { f.client.close() }
        #expect(await server.stop())
        #expect(clients.shutdown())
    }
}
