import FlowSyncCore
import FlowSyncLoop
import FlowSyncProtocol
import FlowSyncTestSupport
import Foundation
import Testing

@testable import FlowSyncServer

/// Lists on demand (`lists.on_demand`, docs/STORAGE.md "Lists on demand"), end to end on
/// an in-process server over a file store: lists load on first use, unload when idle,
/// and come back with their state, history and idempotency window; damaged lists refuse
/// only themselves; the clean-stop record keeps binding lists that were not loaded.
@Suite(.serialized, .timeLimit(.minutes(3))) struct ListsOnDemandTests {
    static func configuration(idleMilliseconds: Int = 50) -> ServerConfiguration {
        var c = ServerConfiguration()
        c.listsOnDemand = true
        c.idleUnloadMilliseconds = idleMilliseconds
        // Compaction while lists load and unload; history long enough for every resume.
        c.snapshotEveryBatches = 16
        c.historyMaxBatches = 40
        return c
    }

    static func isFirstFrame(of list: String) -> (Message) -> Bool {
        { m in
            switch m {
            case .snapshot(let s): return s.listName == list
            case .diff(let d): return d.listName == list
            case .error(let e): return e.listName == list
            default: return false
            }
        }
    }

    /// The seeded simulation: rounds of resuming subscribers, writers and retries over
    /// eight lists, each round ending with every list idle and unloaded. Every
    /// acknowledged row is there at the end (and after a restart), every resume gets a
    /// diff from exactly the position it left at (digest-checked by the replica), and
    /// retries of old `(clientID, seq)` get their original version.
    @Test func seededSimulationLoadsUnloadsAndReloads() async throws {
        let seed: UInt64 = 0x21_0D
        var random = SeededRandom(seed: seed)
        let directory = TemporaryDirectory("on-demand-sim")
        defer { directory.remove() }
        let clients = try EventLoopThread()
        defer { _ = clients.shutdown() }
        let names = (0..<8).map { "sim-\($0)" }
        let server = try await EmbeddedServer(
            configuration: Self.configuration(), storage: .file(directory: directory.path))
        let writers = [
            try await TestClient.connect(port: server.port, on: clients, clientID: "w0"),
            try await TestClient.connect(port: server.port, on: clients, clientID: "w1"),
            try await TestClient.connect(port: server.port, on: clients, clientID: "w2"),
        ]
        var seqs = [UInt64](repeating: 0, count: writers.count)
        var acked: [String: Set<String>] = [:]
        var lastVersion: [String: ListVersion] = [:]
        var sent: [(writer: Int, mutate: Mutate, version: ListVersion)] = []
        func write(_ w: Int, _ list: String, _ ops: [FlowSyncCore.Operation]) async -> ListVersion? {
            seqs[w] += 1
            let mutate = Mutate(
                listName: list, clientID: writers[w].clientID, seq: seqs[w], base: ListVersion(epoch: 0, version: 0),
                operations: ops)
            writers[w].send(.mutate(mutate))
            let reply = await writers[w].waitFor { ackOrReject($0, seq: mutate.seq) }
            // Drained: a later retry of this seq must be answered anew, not find this ack.
            _ = writers[w].drain()
            guard case .ack(let ack)? = reply else { return nil }
            sent.append((w, mutate, ack.committed))
            lastVersion[list] = ack.committed
            return ack.committed
        }
        for list in names {
            #expect(await write(0, list, [.insertSections([Section(id: "s")], at: 0)]) != nil, "seed \(seed)")
        }
        var replicas: [Int: [String: Replica]] = [:]
        var resumesAsDiff = 0
        var retriesAnswered = 0
        let rounds = 6
        for round in 0..<rounds {
            // 1. Subscribers: two lists each, resumed from where they left (or fresh).
            var subscribers: [(client: TestClient, lists: [String])] = []
            for k in 0..<3 {
                let client = try await TestClient.connect(port: server.port, on: clients, clientID: "sub-\(k)")
                var lists: [String] = []
                while lists.count < 2 {
                    let l = names[random.int(0..<names.count)]
                    if !lists.contains(l) { lists.append(l) }
                }
                for list in lists {
                    if let replica = replicas[k]?[list], let position = replica.position {
                        client.send(
                            .subscribe(Subscribe(listName: list, resumeFrom: position, digest: replica.director.digest))
                        )
                    } else {
                        client.send(.subscribe(Subscribe(listName: list)))
                    }
                }
                for list in lists {
                    let first = await client.waitFor(Self.isFirstFrame(of: list))
                    var replica = replicas[k]?[list] ?? Replica()
                    if let position = replica.position {
                        guard case .diff(let diff)? = first, diff.from == position, diff.to == lastVersion[list] else {
                            Issue.record(
                                "seed \(seed) round \(round): sub-\(k) resuming \(list) from \(position) got \(String(describing: first)), at \(String(describing: lastVersion[list]))"
                            )
                            continue
                        }
                        resumesAsDiff += 1
                    }
                    if let first { replica.apply(first, list: list) }
                    replicas[k, default: [:]][list] = replica
                }
                // The first frames are applied; only what the writers cause comes next.
                _ = client.drain()
                subscribers.append((client, lists))
            }
            // 2. Writers: twelve rows on random lists.
            for _ in 0..<12 {
                let w = random.int(0..<writers.count)
                let list = names[random.int(0..<names.count)]
                let row = "r\(round)-w\(w)-\(seqs[w] + 1)"
                if await write(w, list, insertRow(row)) != nil {
                    acked[list, default: []].insert(row)
                } else {
                    Issue.record("seed \(seed) round \(round): \(row) on \(list) not acknowledged")
                }
            }
            // 3. Retries of old (clientID, seq): answered with their original version,
            // from a window that came back from the log (the lists were unloaded).
            for _ in 0..<3 where round > 0 {
                let old = sent[random.int(0..<sent.count)]
                writers[old.writer].send(.mutate(old.mutate))
                let reply = await writers[old.writer].waitFor { ackOrReject($0, seq: old.mutate.seq) }
                _ = writers[old.writer].drain()
                if case .ack(let ack)? = reply, ack.committed == old.version {
                    retriesAnswered += 1
                } else {
                    Issue.record(
                        "seed \(seed) round \(round): retry of \(old.mutate.clientID)/\(old.mutate.seq) got \(String(describing: reply)), \(old.version) expected"
                    )
                }
            }
            // 4. Subscribers take every diff up to the last version, then leave.
            for (k, subscriber) in subscribers.enumerated() {
                for list in subscriber.lists {
                    guard let last = lastVersion[list], replicas[k]?[list]?.position != last else { continue }
                    _ = await subscriber.client.waitFor {
                        if case .diff(let d) = $0 { return d.listName == list && d.to == last } else { return false }
                    }
                }
                let messages = subscriber.client.drain()
                for list in subscriber.lists {
                    var replica = replicas[k]?[list] ?? Replica()
                    replica.problems = []
                    replica.apply(messages, list: list)
                    for problem in replica.problems {
                        Issue.record("seed \(seed) round \(round): sub-\(k), \(list): \(problem)")
                    }
                    #expect(replica.position == lastVersion[list], "seed \(seed) round \(round): sub-\(k), \(list)")
                    replicas[k, default: [:]][list] = replica
                }
                subscriber.client.close()
            }
            // 5. Everyone idle: every list is unloaded (idle time on the server's own
            // clock; the test only polls, bounded: 400 × 25 ms).
            var empty = false
            for _ in 0..<400 where !empty {
                empty = await server.withServer { $0.listNames.isEmpty && $0.listsLoading == 0 }
                if !empty { try await Task.sleep(for: .milliseconds(25)) }
            }
            let stillLoaded = await server.withServer { $0.listNames }
            #expect(empty, "seed \(seed) round \(round): lists still loaded: \(stillLoaded)")
        }
        let statistics = await server.withServer { $0.statistics }
        #expect(
            statistics.listUnloads >= rounds * 2 && statistics.listLoads >= rounds * 2,
            "\(statistics.listLoads) loads, \(statistics.listUnloads) unloads")
        #expect(resumesAsDiff >= (rounds - 1) * 2, "seed \(seed): \(resumesAsDiff) resumes as diffs")
        #expect(retriesAnswered == (rounds - 1) * 3)
        #expect(await server.withServer { $0.refusedListNames }.isEmpty)

        // Every acknowledged row, now and after a clean restart (which loads each list
        // under the exact clean-stop rules).
        for restart in [false, true] {
            let target =
                restart
                ? try await EmbeddedServer(
                    configuration: Self.configuration(), storage: .file(directory: directory.path)) : server
            let checker = try await TestClient.connect(port: target.port, on: clients, clientID: "checker")
            for list in names {
                checker.send(.subscribe(Subscribe(listName: list)))
                guard case .snapshot(let snapshot)? = await checker.waitFor(Self.isFirstFrame(of: list)) else {
                    Issue.record("seed \(seed): no snapshot of \(list) (restart: \(restart))")
                    continue
                }
                let rows = Set(snapshot.sections.flatMap { $0.rows.map(\.id) })
                #expect(
                    (acked[list] ?? []).isSubset(of: rows),
                    "seed \(seed), \(list): acknowledged rows missing (restart: \(restart))")
                #expect(snapshot.position == lastVersion[list], "seed \(seed), \(list) (restart: \(restart))")
            }
            checker.close()
            for writer in writers where !restart { writer.close() }
            #expect(await target.stop())
        }
    }

    /// Three damaged lists among six after a clean stop — a flipped byte, a log cut short
    /// (data lost: refused, never served short), a list directory gone: the daemon
    /// starts, serves the three healthy lists and refuses each damaged one with
    /// `internal-error` on the same connection. The refusal survives the next clean
    /// stop (the manifest still records the damaged lists).
    @Test func damagedListsAreRefusedOneByOneAndTheRestServed() async throws {
        let directory = TemporaryDirectory("on-demand-damage")
        defer { directory.remove() }
        let clients = try EventLoopThread()
        defer { _ = clients.shutdown() }
        let names = (0..<6).map { "d-\($0)" }
        let first = try await EmbeddedServer(
            configuration: Self.configuration(), storage: .file(directory: directory.path))
        let writer = try await TestClient.connect(port: first.port, on: clients, clientID: "writer")
        var seq: UInt64 = 0
        var last: [String: ListVersion] = [:]
        for list in names {
            seq += 1
            #expect(await commit(writer, list, seq: seq, [.insertSections([Section(id: "s")], at: 0)]) != nil)
            for row in 0..<5 {
                seq += 1
                last[list] = await commit(writer, list, seq: seq, insertRow("\(list)-\(row)"))
            }
        }
        writer.close()
        #expect(await first.stop())

        func segment(of list: String) throws -> String {
            let path = directory.path + "/lists/" + list
            return path + "/"
                + (try #require(
                    try FileManager.default.contentsOfDirectory(atPath: path).sorted().last { $0.hasSuffix(".fsl") }))
        }
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: try segment(of: "d-1"))))
        bytes[bytes.count / 2] ^= 0x10
        try Data(bytes).write(to: URL(fileURLWithPath: try segment(of: "d-1")))
        let cut = try segment(of: "d-3")
        bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: cut)))
        try Data(bytes.dropLast(7)).write(to: URL(fileURLWithPath: cut))
        try FileManager.default.removeItem(atPath: directory.path + "/lists/d-5")
        let damaged = ["d-1", "d-3", "d-5"]

        // Eagerly, the same directory refuses to start (today's rule).
        var eager = Self.configuration()
        eager.listsOnDemand = false
        do {
            let refused = try await EmbeddedServer(configuration: eager, storage: .file(directory: directory.path))
            Issue.record("an eager start served damaged data")
            _ = await refused.stop()
        } catch {}

        for pass in 0..<2 {
            let server = try await EmbeddedServer(
                configuration: Self.configuration(), storage: .file(directory: directory.path))
            let client = try await TestClient.connect(port: server.port, on: clients, clientID: "reader")
            for list in names {
                client.send(.subscribe(Subscribe(listName: list)))
                let first = await client.waitFor(Self.isFirstFrame(of: list))
                if damaged.contains(list) {
                    guard case .error(let error)? = first else {
                        Issue.record("pass \(pass): \(list) got \(String(describing: first))")
                        continue
                    }
                    #expect(error.code == .internalError && !error.closesConnection, "\(error)")
                } else {
                    guard case .snapshot(let snapshot)? = first else {
                        Issue.record("pass \(pass): \(list) got \(String(describing: first))")
                        continue
                    }
                    #expect(
                        snapshot.position == last[list]
                            && snapshot.sections.first?.rows.count == 5 + (list == "d-0" ? pass : 0),
                        "pass \(pass): \(list) at \(snapshot.position)")
                }
            }
            // Writes: refused on a damaged list, served on a healthy one, same connection.
            client.send(
                .mutate(
                    Mutate(
                        listName: "d-1", clientID: "reader", seq: UInt64(10 + pass),
                        base: ListVersion(epoch: 0, version: 0), operations: insertRow("x"))))
            guard case .reject(let reject)? = await client.waitFor({ ackOrReject($0, seq: UInt64(10 + pass)) }) else {
                Issue.record("pass \(pass): a write to a damaged list was not refused")
                continue
            }
            #expect(reject.code == .internalError)
            #expect(await commit(client, "d-0", seq: UInt64(20 + pass), insertRow("extra-\(pass)")) != nil)
            last["d-0"] = ListVersion(epoch: last["d-0"]!.epoch, version: last["d-0"]!.version + 1)
            #expect(await server.withServer { $0.refusedListNames } == damaged)
            client.close()
            #expect(await server.stop())
        }
    }

    /// A list loaded and written after a clean stop, then a crash: that list is
    /// recovered under the unclean rules (its `OPENED` marker voids its record) with
    /// every acknowledged write; a list not loaded in that run is still held to the
    /// record, so data it lost meanwhile is refused, not served short.
    @Test func aCrashKeepsTheRecordOfListsNotLoaded() async throws {
        let directory = TemporaryDirectory("on-demand-marker")
        defer { directory.remove() }
        let clients = try EventLoopThread()
        defer { _ = clients.shutdown() }
        let first = try await EmbeddedServer(
            configuration: Self.configuration(idleMilliseconds: 0), storage: .file(directory: directory.path))
        let writer = try await TestClient.connect(port: first.port, on: clients, clientID: "writer")
        var seq: UInt64 = 0
        for list in ["a", "b"] {
            seq += 1
            #expect(await commit(writer, list, seq: seq, [.insertSections([Section(id: "s")], at: 0)]) != nil)
            for row in 0..<4 {
                seq += 1
                _ = await commit(writer, list, seq: seq, insertRow("\(list)-\(row)"))
            }
        }
        writer.close()
        #expect(await first.stop())

        let second = try await EmbeddedServer(
            configuration: Self.configuration(idleMilliseconds: 0), storage: .file(directory: directory.path))
        let again = try await TestClient.connect(port: second.port, on: clients, clientID: "writer")
        var lastOfA: ListVersion?
        for row in 4..<8 {
            seq += 1
            lastOfA = await commit(again, "a", seq: seq, insertRow("a-\(row)"))
        }
        #expect(FileManager.default.fileExists(atPath: directory.path + "/lists/a/OPENED"))
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/lists/b/OPENED"))
        again.close()
        second.crash()

        // b lost its last bytes while nobody loaded it.
        let path = directory.path + "/lists/b"
        let segment =
            path + "/"
            + (try #require(
                try FileManager.default.contentsOfDirectory(atPath: path).sorted().last { $0.hasSuffix(".fsl") }))
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: segment)))
        try Data(bytes.dropLast(5)).write(to: URL(fileURLWithPath: segment))

        let third = try await EmbeddedServer(
            configuration: Self.configuration(idleMilliseconds: 0), storage: .file(directory: directory.path))
        let reader = try await TestClient.connect(port: third.port, on: clients, clientID: "reader")
        reader.send(.subscribe(Subscribe(listName: "a")))
        guard case .snapshot(let snapshot)? = await reader.waitFor(Self.isFirstFrame(of: "a")) else {
            Issue.record("a not served after the crash")
            return
        }
        #expect(snapshot.position == lastOfA && snapshot.sections.first?.rows.count == 8)
        reader.send(.subscribe(Subscribe(listName: "b")))
        guard case .error(let error)? = await reader.waitFor(Self.isFirstFrame(of: "b")) else {
            Issue.record("b, cut short after the clean stop, was served")
            return
        }
        #expect(error.code == .internalError && error.message.contains("clean stop"), "\(error)")
        reader.close()
        #expect(await third.stop())
    }

    /// `[history] total_max_bytes`: the budget empties the history in memory (every
    /// second, least recently active first), and a resume older than memory holds is
    /// rebuilt from the log on a worker — a diff from exactly its position, not a
    /// snapshot. The memory store has no log: there the same resume gets a snapshot.
    @Test(arguments: [true, false]) func aCatchUpOlderThanMemoryIsReadFromTheLog(fileStore: Bool) async throws {
        let directory = TemporaryDirectory("on-demand-log")
        defer { directory.remove() }
        let clients = try EventLoopThread()
        defer { _ = clients.shutdown() }
        var configuration = Self.configuration(idleMilliseconds: 0)
        configuration.historyTotalMaxBytes = 1
        configuration.snapshotEveryBatches = 0
        let server = try await EmbeddedServer(
            configuration: configuration, storage: fileStore ? .file(directory: directory.path) : .memory)
        let writer = try await TestClient.connect(port: server.port, on: clients, clientID: "writer")
        #expect(await commit(writer, "h", seq: 1, [.insertSections([Section(id: "s")], at: 0)]) != nil)
        var seen: ListVersion?
        // Forty rows, then five more batches: a diff, not the (larger) snapshot.
        for seq in 2...41 { seen = await commit(writer, "h", seq: UInt64(seq), insertRow("r\(seq)")) }
        let subscriber = try await TestClient.connect(port: server.port, on: clients, clientID: "sub")
        subscriber.send(.subscribe(Subscribe(listName: "h")))
        guard case .snapshot(let first)? = await subscriber.waitFor(Self.isFirstFrame(of: "h")) else {
            Issue.record("no snapshot")
            return
        }
        var replica = Replica()
        replica.apply(.snapshot(first), list: "h")
        subscriber.close()
        var last: ListVersion?
        for seq in 42...46 { last = await commit(writer, "h", seq: UInt64(seq), insertRow("r\(seq)")) }
        // The budget (1 byte) is enforced within about a second: the history goes.
        var trimmed = false
        for _ in 0..<200 where !trimmed {
            trimmed = await server.withServer { $0.historyBytes(of: "h") ?? 0 } <= 1
            if !trimmed { try await Task.sleep(for: .milliseconds(25)) }
        }
        #expect(trimmed)
        let resumer = try await TestClient.connect(port: server.port, on: clients, clientID: "sub")
        resumer.send(.subscribe(Subscribe(listName: "h", resumeFrom: seen!, digest: replica.director.digest)))
        let reply = await resumer.waitFor(Self.isFirstFrame(of: "h"))
        if fileStore {
            guard case .diff(let diff)? = reply else {
                Issue.record("resume got \(String(describing: reply))")
                return
            }
            #expect(diff.from == seen && diff.to == last)
            replica.apply(.diff(diff), list: "h")
            #expect(replica.problems.isEmpty, "\(replica.problems)")
            #expect(await server.withServer { $0.statistics.catchUpsFromLog } == 1)
        } else {
            guard case .snapshot(let snapshot)? = reply else {
                Issue.record("resume got \(String(describing: reply))")
                return
            }
            #expect(snapshot.reason == .resumeTooOld && snapshot.position == last)
        }
        resumer.close()
        writer.close()
        #expect(await server.stop())
    }
}
