import FlowSyncCore
import FlowSyncProtocol
import FlowSyncTestSupport
import Testing

@testable import FlowSyncClient

/// Kill-and-relaunch, without sockets: the session machine and the persistence rules
/// against the real sequencer (``SimulatedNetwork``), where at random a client's app is
/// killed — its connection and its queued file writes and frames lost — and a new session
/// starts from its simulated disk (through the real file format) with `firstSeq` 1,
/// while the others go on writing. Thousands of seeded cases; after each:
/// - no mutation committed twice, and every write a client ever made was committed or
///   answered with a failure (none lost), none both;
/// - every replica equals the server's list, and what a relaunch now would load from
///   disk equals it too.
@Suite(.timeLimit(.minutes(2))) struct KillRelaunchSimulationTests {
    struct Outcome: Sendable {
        var cases = 0
        var kills = 0
        var failures: [String] = []
    }

    static func run(seed: UInt64) -> (kills: Int, failures: [String]) {
        var net = SimulatedNetwork(seed: seed, clients: 3)
        var random = SeededRandom(seed: seed &* 1_000_003)
        net.enablePersistence(
            PersistenceOptions(
                directory: "/simulated", writeEveryBatches: random.int(1...6), writeEveryMilliseconds: 40))
        for _ in 0..<random.int(100...300) { net.step(editChance: 0.15, cutChance: 0.01, killChance: 0.01) }
        var failures = net.failures.map { "seed \(seed): \($0)" }
        guard net.settle() else {
            let states = net.clients.map { client in
                let list = client.session.lists[SimulatedNetwork.list]!
                return
                    "\(list.phase) at \(String(describing: list.position)), pending \(list.pending.map { "\($0.seq) sent \($0.sent != nil) acked \(String(describing: $0.ackedAt))" }), in flight \(String(describing: list.inFlight))"
            }
            return (0, failures + ["seed \(seed): did not settle (server at \(net.sequencer.position)): \(states)"])
        }
        let server = net.sequencer.director
        var kills = 0
        for i in net.clients.indices {
            let client = net.clients[i]
            kills += client.lives - 1
            let list = client.session.lists[SimulatedNetwork.list]!
            if list.confirmed != server || list.position != net.sequencer.position {
                failures.append("seed \(seed) client \(i): replica differs from the server")
            }
            if client.recorder.table != list.view {
                failures.append("seed \(seed) client \(i): the changes since the relaunch do not add up to the view")
            }
            for seq in client.submitted {
                let committed = net.committed[MutationID(clientID: "c\(i)", seq: seq)] != nil
                switch client.completions[seq] {
                case .failure(let error)? where committed:
                    failures.append("seed \(seed) client \(i): write \(seq) committed but failed: \(error)")
                case nil where !committed:
                    failures.append("seed \(seed) client \(i): write \(seq) lost (neither committed nor answered)")
                default: break
                }
            }
        }
        // What a relaunch would load now: flush (as pause() does), let the writer finish.
        for i in net.clients.indices {
            net.persist(i, flush: true)
            while !net.clients[i].queued.isEmpty { net.writeQueued(i) }
            net.persist(i)  // the pending file without what the replica now holds
            while !net.clients[i].queued.isEmpty { net.writeQueued(i) }
            let disk = net.clients[i].disk
            let (restored, _) = ReplicaFileFormat.restore(
                list: SimulatedNetwork.list, replica: disk["replica"]?.bytes, pending: disk["pending"]?.bytes)
            if restored?.confirmed != server || restored?.position != net.sequencer.position
                || restored?.pending.isEmpty != true
            {
                failures.append("seed \(seed) client \(i): the files do not hold the server's state after a flush")
            }
        }
        return (kills, failures)
    }

    @Test("every edit survives kills exactly once; replicas and files end equal to the server")
    func killsAndRelaunches() async throws {
        // Bounded by count and by time: as many of 3,000 cases as fit in 60 s (about
        // 2,000 in a debug build on an idle 2-core machine, fewer beside the whole suite).
        let outcome = try await offThePool { () -> Outcome in
            var outcome = Outcome()
            let deadline = ContinuousClock.now + .seconds(60)
            for seed in 0..<3_000 where ContinuousClock.now < deadline {
                let (kills, failures) = Self.run(seed: UInt64(seed))
                outcome.cases += 1
                outcome.kills += kills
                outcome.failures += failures
                if outcome.failures.count > 20 { break }
            }
            return outcome
        }
        #expect(
            outcome.failures.isEmpty,
            "\(outcome.failures.count) failures, first: \(outcome.failures.prefix(5).joined(separator: "\n"))")
        #expect(outcome.cases >= 50, "only \(outcome.cases) cases ran")
        #expect(outcome.kills > outcome.cases / 2, "only \(outcome.kills) kills in \(outcome.cases) cases")
        print("kill-relaunch simulation: \(outcome.cases) cases, \(outcome.kills) kills")
    }
}
