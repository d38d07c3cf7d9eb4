// flowsync-server-bench --storage: figures of the durable store (issue #9), against a
// real release flowsyncd per fsync policy, plus recovery of a 1,000,000-mutation log.
// flowsync-server-bench --crash-test [--cycles N]: the SIGKILL crash test (also
// scripts/crash-test.sh).
import FlowSyncCore
import FlowSyncLoop
import FlowSyncProcess
import FlowSyncProtocol
import FlowSyncTestSupport
import Foundation

enum StorageBench {
    static func run(arguments: [String], daemonPath: String, quick: Bool) async throws -> Int32 {
        func value(_ flag: String) -> String? {
            arguments.firstIndex(of: flag).flatMap { $0 + 1 < arguments.count ? arguments[$0 + 1] : nil }
        }
        if arguments.contains("--crash-test") {
            let cycles = value("--cycles").flatMap(Int.init) ?? 500
            let directory = NSTemporaryDirectory() + "flowsync-crash-\(UUID().uuidString)"
            defer { try? FileManager.default.removeItem(atPath: directory) }
            var options = CrashTestDriver.Options(binary: daemonPath, dataDirectory: directory)
            options.cycles = cycles
            options.seed = value("--seed").flatMap(UInt64.init) ?? 1
            options.log = { progress($0) }
            let result = try await CrashTestDriver(options).run()
            say("crash test: \(result)")
            for p in result.problems { say("  problem: \(p)") }
            say(
                "final versions: \(result.finalVersions.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))"
            )
            return result.problems.isEmpty && result.cycles == cycles ? 0 : 1
        }
        say("# flowsync-server-bench --storage\(quick ? " (quick)" : "")\n")
        if !arguments.contains("--recovery-only") { try await policies(daemonPath: daemonPath, quick: quick) }
        try await recovery(
            daemonPath: daemonPath,
            mutations: quick ? 50_000 : value("--recovery-mutations").flatMap(Int.init) ?? 1_000_000)
        return 0
    }

    // MARK: Throughput and ack latency per fsync policy

    static func policies(daemonPath: String, quick: Bool) async throws {
        let lists = 4
        let seconds = quick ? 1.0 : 5.0
        say("## Committed mutations/s and ack latency by fsync policy\n")
        say(
            "Closed-loop writers (one mutation in flight each) over \(lists) lists, \(Int(seconds)) s per row; each mutation inserts one ~60-byte row. "
                + "Latency is send→ack at the writer. Syncs/s are group commits (each covers every list written in its loop turn). "
                + "Disk bytes are the data directory after the run (logs, snapshots) per committed mutation.\n")
        say(
            "| writers | fsync | mutations/s | batches/s | mutations per batch | p50 ack | p99 ack | syncs/s | disk bytes/mutation |"
        )
        say("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        let thread = try EventLoopThread()
        defer { _ = thread.shutdown() }
        for writers in quick ? [16] : [16, 64] {
            for (policy, parallel) in [("always", true), ("always", false), ("interval", true), ("never", true)]
            where writers == 16 || parallel {
                let directory = NSTemporaryDirectory() + "flowsync-storage-bench-\(UUID().uuidString)"
                defer { try? FileManager.default.removeItem(atPath: directory) }
                let config = directory + ".toml"
                try "[storage]\nfsync = \"\(policy)\"\nfsync_interval_ms = 1000\nparallel_sync = \(parallel)\n".write(
                    toFile: config, atomically: true, encoding: .utf8)
                defer { unlink(config) }
                let daemon = try await DaemonProcess.start(binary: daemonPath, dataDirectory: directory, config: config)
                // On a thrown error the daemon is released and its ChildProcess kills it.
                var clients: [TestClient] = []
                for w in 0..<writers {
                    clients.append(
                        try await TestClient.connect(port: daemon.port, on: thread, clientID: "bench-writer-\(w)"))
                }
                // 64 sections per list, so inserts stay cheap.
                for l in 0..<lists {
                    _ = await benchCommit(
                        clients[l], list: "bench-\(l)", seq: 1, [.setSections((0..<64).map { Section(id: "s\($0)") })])
                }
                let stopAt = now() + seconds
                let started = now()
                let latencies = Shared<[Double]>([])
                await withTaskGroup(of: [Double].self) { group in
                    for (w, client) in clients.enumerated() {
                        group.addTask {
                            var mine: [Double] = []
                            var seq: UInt64 = 10
                            let list = "bench-\(w % lists)"
                            while now() < stopAt {
                                let row = Row(
                                    id: "w\(w)-\(seq)", kind: "item",
                                    payload: Array("{\"title\":\"row \(seq) of writer \(w)\",\"done\":false}".utf8))
                                let t0 = now()
                                guard
                                    await benchCommit(
                                        client, list: list, seq: seq,
                                        [.insertRows([row], in: .index(Int(seq % 64)), at: 0)]) != nil
                                else { break }
                                mine.append(now() - t0)
                                seq += 1
                            }
                            return mine
                        }
                    }
                    for await mine in group { latencies.update { $0 += mine } }
                }
                let elapsed = now() - started
                let control = clients[0]
                var batches: Int64 = 0
                var syncs = 0
                control.send(.statsRequest(StatsRequest(requestID: 7, listName: nil)))
                if case .statsReply(let reply)? = await control.waitFor(
                    timeout: 10, { if case .statsReply = $0 { return true } else { return false } })
                {
                    batches = reply.entries.first { $0.name == "batches" }?.value ?? 0
                    syncs = Int(reply.entries.first { $0.name == "store.syncs" }?.value ?? 0)
                }
                for c in clients { c.close() }
                let sorted = latencies.get().sorted()
                let count = sorted.count
                await daemon.terminate()
                let bytes = directorySize(directory)
                func pct(_ p: Double) -> String {
                    count == 0 ? "-" : String(format: "%.2f ms", sorted[min(count - 1, Int(Double(count) * p))] * 1000)
                }
                say(
                    "| \(writers) | \(policy)\(policy == "always" ? (parallel ? " (parallel_sync)" : " (serial sync)") : "") | \(Int(Double(count) / elapsed)) | \(Int(Double(batches) / elapsed)) | \(String(format: "%.2f", batches > 0 ? Double(count) / Double(batches) : 0)) | \(pct(0.5)) | \(pct(0.99)) | \(Int(Double(syncs) / elapsed)) | \(count > 0 ? bytes / count : 0) |"
                )
            }
        }
        say("")
    }

    // MARK: Recovery of a long log

    static func recovery(daemonPath: String, mutations: Int) async throws {
        let directory = NSTemporaryDirectory() + "flowsync-recovery-bench-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let perBatch = 10
        say("## Recovery of a log of \(mutations) mutations\n")
        say(
            "One list, no snapshot (snapshot_every_batches = 0): \(mutations / perBatch) batches of \(perBatch) mutations, each one op on a list of 256 sections "
                + "(70% insert a ~60-byte row at a random index, 20% replace a row, 10% remove one), written through FileStore as the daemon writes them.\n"
        )
        var generate = now()
        let log = try StoreBenchmarks.writeSyntheticLog(directory: directory, mutations: mutations, perBatch: perBatch)
        generate = now() - generate
        let bytes = directorySize(directory)
        say(
            "Generated in \(String(format: "%.1f", generate)) s: \(log.batches) batches, \(log.rows) rows at the end, log \(bytes) bytes (\(bytes / mutations) bytes per mutation).\n"
        )
        say("| measured | time |")
        say("| --- | --- |")
        for run in 1...2 {
            let t0 = now()
            let replayed = try StoreBenchmarks.recover(directory: directory)
            let t = now() - t0
            say(
                "| FileStore.recover, in process (run \(run); \(replayed) batches replayed) | \(String(format: "%.2f s", t)) |"
            )
        }
        let t0 = now()
        let daemon = try await DaemonProcess.start(binary: daemonPath, dataDirectory: directory, config: nil)
        let t = now() - t0
        await daemon.terminate()
        say("| flowsyncd start to \"listening on\" (process start + recovery) | \(String(format: "%.2f s", t)) |")
        // Compaction of that list (what the loop thread pays when a snapshot is due),
        // then a start from the snapshot alone.
        let compaction = try StoreBenchmarks.compactAll(directory: directory, clock: now)
        say(
            "| compaction: snapshot of the final state (\(compaction.rows) rows, \(directorySize(directory)) bytes) written, log dropped | \(String(format: "%.2f s", compaction.seconds)) |"
        )
        let t1 = now()
        _ = try StoreBenchmarks.recover(directory: directory)
        say("| FileStore.recover from that snapshot | \(String(format: "%.2f s", now() - t1)) |")
        say("")
    }

    static func directorySize(_ path: String) -> Int {
        guard let enumerator = FileManager.default.enumerator(atPath: path) else { return 0 }
        var total = 0
        for case let name as String in enumerator {
            let attributes = try? FileManager.default.attributesOfItem(atPath: path + "/" + name)
            if (attributes?[.type] as? FileAttributeType) == .typeRegular { total += (attributes?[.size] as? Int) ?? 0 }
        }
        return total
    }
}

func benchCommit(_ client: TestClient, list: String, seq: UInt64, _ ops: [FlowSyncCore.Operation]) async -> ListVersion?
{
    client.send(
        .mutate(
            Mutate(
                listName: list, clientID: client.clientID, seq: seq, base: ListVersion(epoch: 0, version: 0),
                operations: ops)))
    let reply = await client.waitFor(timeout: 10) { m in
        if case .ack(let a) = m, a.seq == seq { return true }
        if case .reject(let r) = m, r.seq == seq { return true }
        return false
    }
    _ = client.drain()
    if case .ack(let a)? = reply { return a.committed }
    return nil
}
