import FlowSyncCore
import FlowSyncCoreTestSupport
import Testing

/// N writers, each holding a replica fed by the server's commits through a delayed,
/// ordered channel, generating random mutations against whatever version they last saw
/// (so bases go stale), one mutation in flight each, sometimes resending it (a
/// reconnect). Through the real sequencer. At the end: every replica equals the
/// server, every acked mutation is in exactly one batch, nothing was applied twice, and
/// every batch passed the UIKit validator.
@Suite(.timeLimit(.minutes(2))) struct OrderingSimulationTests {
    enum Message {
        case commit(Sequencer.Commit)
        case outcome(Sequencer.Outcome)
    }

    struct Client {
        var replica = Director()
        var position: ListVersion
        var nextSeq: UInt64 = 1
        var inFlight: MutationRequest?
        /// Messages from the server, in order, each with the step it arrives at.
        var inbox: [(at: Int, message: Message)] = []
        var acked: [MutationID: ListVersion] = [:]
    }

    struct Report { var mutations = 0, acked = 0, rejected = 0, retries = 0, batches = 0, rebasedBatches = 0 }

    static func simulate(seed: UInt64, clients count: Int, mutations target: Int) -> (Report, [String]) {
        var random = SeededRandom(seed: seed)
        var generator = DirectorGenerator(seed: seed &* 31 &+ 7)
        var server = Sequencer(
            position: ListVersion(epoch: 42, version: 0), historyLimits: .init(maxBatches: 64, maxBytes: 1 << 30))
        var clients = [Client](repeating: Client(position: server.position), count: count)
        var toServer: [(at: Int, request: MutationRequest, client: Int)] = []
        var report = Report()
        var problems: [String] = []
        var committedIn: [MutationID: Int] = [:]  // mutation → how many commits contain it
        var step = 0

        func deliver(_ message: Message, to client: Int, at step: Int) {
            // FIFO per client: never before the previous message.
            let earliest = clients[client].inbox.last?.at ?? step
            clients[client].inbox.append((max(step + random.int(0...6), earliest), message))
        }

        while (report.mutations < target || toServer.contains(where: { _ in true })
            || clients.contains { $0.inFlight != nil || !$0.inbox.isEmpty }) && step < target * 50
        {
            step += 1
            // Writers: an idle one starts a mutation against its (possibly stale) replica.
            if report.mutations < target {
                for _ in 0..<random.int(0...3) where report.mutations < target {
                    let k = random.int(0..<count)
                    guard clients[k].inFlight == nil else {
                        // Sometimes resend the in-flight one (a reconnect).
                        if random.chance(0.05), let request = clients[k].inFlight {
                            toServer.append((step + random.int(0...4), request, k))
                            report.retries += 1
                        }
                        continue
                    }
                    let ops = generator.group(for: clients[k].replica, maxOps: 4)
                    let request = MutationRequest(
                        clientID: "c\(k)", seq: clients[k].nextSeq, base: clients[k].position, operations: ops)
                    clients[k].nextSeq += 1
                    clients[k].inFlight = request
                    toServer.append((step + random.int(0...4), request, k))
                    report.mutations += 1
                }
            }
            // The server: everything that arrived this step is one turn, one batch.
            let arrived = toServer.filter { $0.at <= step }
            toServer.removeAll { $0.at <= step }
            if !arrived.isEmpty {
                for item in arrived { server.submit(item.request, tag: item.client) }
                let before = server.director
                let sealed = server.seal()
                if let commit = sealed.commit {
                    report.batches += 1
                    if arrived.contains(where: { $0.request.base != commit.from }) { report.rebasedBatches += 1 }
                    if let problem = UIKitBatchSimulator.check(commit.changeset, from: before, to: server.director) {
                        problems.append("seed \(seed) batch \(commit.to): \(problem)")
                    }
                    for id in commit.mutations { committedIn[id, default: 0] += 1 }
                    for k in 0..<count { deliver(.commit(commit), to: k, at: step) }
                }
                for outcome in sealed.outcomes { deliver(.outcome(outcome), to: outcome.tag, at: step) }
            }
            // Clients read what has arrived, in order.
            for k in 0..<count {
                while let first = clients[k].inbox.first, first.at <= step {
                    clients[k].inbox.removeFirst()
                    switch first.message {
                    case .commit(let commit):
                        guard commit.from == clients[k].position else {
                            problems.append(
                                "seed \(seed) client \(k): gap at \(clients[k].position), commit from \(commit.from)")
                            continue
                        }
                        do {
                            try commit.changeset.apply(to: &clients[k].replica)
                        } catch {
                            problems.append("seed \(seed) client \(k): commit \(commit.to) does not apply: \(error)")
                        }
                        if clients[k].replica.digest != commit.digest {
                            problems.append("seed \(seed) client \(k): digest mismatch at \(commit.to)")
                        }
                        clients[k].position = commit.to
                    case .outcome(let outcome):
                        guard let inFlight = clients[k].inFlight, inFlight.seq == outcome.id.seq else {
                            // A late answer to a resent mutation: it must agree with the first.
                            if case .success(let v) = outcome.result, let first = clients[k].acked[outcome.id],
                                first != v
                            {
                                problems.append("seed \(seed): \(outcome.id) acked twice with different versions")
                            }
                            continue
                        }
                        switch outcome.result {
                        case .success(let version):
                            clients[k].acked[outcome.id] = version
                            report.acked += 1
                            // Commits come before their acks on the same channel.
                            if clients[k].position.version < version.version {
                                problems.append("seed \(seed): ack \(version) before its commit at client \(k)")
                            }
                        case .failure:
                            report.rejected += 1
                        }
                        clients[k].inFlight = nil
                    }
                }
            }
        }
        for (k, client) in clients.enumerated()
        where client.replica != server.director || client.position != server.position {
            problems.append(
                "seed \(seed) client \(k) at \(client.position) differs from the server at \(server.position)")
        }
        for client in clients {
            for (id, version) in client.acked {
                if committedIn[id] != 1 {
                    problems.append("seed \(seed): acked \(id) is in \(committedIn[id] ?? 0) batches")
                }
                if version.version > server.position.version {
                    problems.append("seed \(seed): \(id) acked with a future version")
                }
            }
        }
        for (id, n) in committedIn where n > 1 { problems.append("seed \(seed): \(id) applied \(n) times") }
        server.director.checkInvariants()
        return (report, problems)
    }

    /// 10 seeds × 5,000 mutations = 50,000 mutations per run; 2 to 50 clients.
    /// The cases run one at a time (`.serialized`) and off the cooperative pool: each is
    /// seconds of CPU in a debug build, and ten at once on 2 cores made every one of them
    /// ten times slower, past its time limit on a loaded machine.
    @Test(
        .serialized,
        arguments: [(UInt64(1), 2), (2, 5), (3, 10), (4, 20), (5, 50), (6, 50), (7, 8), (8, 30), (9, 3), (10, 40)])
    func writersConvergeThroughTheSequencer(seed: UInt64, clients: Int) async throws {
        let mutations = 5_000
        let (report, problems) = try await offThePool {
            Self.simulate(seed: seed, clients: clients, mutations: mutations)
        }
        #expect(problems.isEmpty, "\(problems.prefix(5).joined(separator: "\n"))")
        #expect(report.mutations == mutations)
        #expect(report.acked + report.rejected == mutations, "every mutation was answered: \(report)")
        #expect(report.acked > mutations / 2, "most mutations commit: \(report)")
        #expect(report.rebasedBatches > 50, "stale bases were exercised: \(report)")
        #expect(report.retries > 5, "retries were exercised: \(report)")
    }
}
