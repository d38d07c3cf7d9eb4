import FlowSyncCore
import FlowSyncProtocol
import FlowSyncTestSupport
import Testing

@testable import FlowSyncClient

/// The session state machine against the real sequencer, with no sockets: seeded random
/// schedules of edits, deliveries, batch seals and connection cuts. After each run every
/// replica must equal the server's list, every change must have been a valid UIKit
/// batch chaining from the previous one, every write answered exactly once and no
/// mutation committed twice.
@Suite(.timeLimit(.minutes(2))) struct SessionSimulationTests {
    static func run(seed: UInt64, clients: Int, steps: Int, editChance: Double, cutChance: Double) -> SimulatedNetwork {
        var net = SimulatedNetwork(seed: seed, clients: clients)
        for _ in 0..<steps { net.step(editChance: editChance, cutChance: cutChance) }
        let settled = net.settle()
        if !settled { net.failures.append("did not settle") }
        return net
    }

    static func check(_ net: SimulatedNetwork, seed: UInt64) {
        #expect(net.failures.isEmpty, "seed \(seed): \(net.failures.prefix(3).joined(separator: "\n"))")
        let server = net.sequencer.director
        for (i, client) in net.clients.enumerated() {
            let list = client.session.lists[SimulatedNetwork.list]!
            #expect(
                list.position == net.sequencer.position,
                "seed \(seed) client \(i): at \(String(describing: list.position)), server at \(net.sequencer.position)"
            )
            #expect(
                list.confirmed == server && list.confirmed.digest == server.digest,
                "seed \(seed) client \(i): replica differs from the server")
            #expect(
                list.view == list.confirmed,
                "seed \(seed) client \(i): view differs from confirmed with nothing pending")
            #expect(
                client.recorder.table == list.view, "seed \(seed) client \(i): the changes do not add up to the view")
            // Every write answered once; every committed one is in the server's log once.
            #expect(
                Set(client.completions.keys) == client.submitted,
                "seed \(seed) client \(i): unanswered writes \(client.submitted.subtracting(client.completions.keys).sorted())"
            )
            for (seq, result) in client.completions {
                if case .success(let version) = result, version.version > 0 {
                    let id = MutationID(clientID: "c\(i)", seq: seq)
                    // An empty resolution completes without a commit; others must be logged.
                    if let at = net.committed[id] {
                        #expect(at == version, "seed \(seed): \(id) acked at \(version), committed at \(at)")
                    }
                }
            }
        }
    }

    @Test("converges without cuts", arguments: 0..<20)
    func convergesWithoutCuts(seed: Int) {
        let net = Self.run(seed: UInt64(seed), clients: 3, steps: 400, editChance: 0.15, cutChance: 0)
        Self.check(net, seed: UInt64(seed))
        #expect(!net.committed.isEmpty)
    }

    @Test("converges with connections cut at random", arguments: 100..<140)
    func convergesWithCuts(seed: Int) {
        let net = Self.run(seed: UInt64(seed), clients: 3, steps: 500, editChance: 0.15, cutChance: 0.02)
        Self.check(net, seed: UInt64(seed))
    }

    @Test("many writers, heavy contention", arguments: 200..<210)
    func heavyContention(seed: Int) {
        let net = Self.run(seed: UInt64(seed), clients: 6, steps: 1_500, editChance: 0.3, cutChance: 0.01)
        Self.check(net, seed: UInt64(seed))
    }
}
