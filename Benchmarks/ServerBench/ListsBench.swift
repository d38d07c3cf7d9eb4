// flowsync-server-bench --lists [--quick] [--counts 10000,100000] [--touch 100000] [--backup]:
// lists on demand (issue #21) against a real release flowsyncd. The data directories are
// generated with the store API (FileStore appends, no fsync), not through the protocol.
import FlowSyncCore
import FlowSyncLoop
import FlowSyncProcess
import FlowSyncProtocol
import FlowSyncServer
import FlowSyncTestSupport
import Foundation

enum ListsBench {
    static func run(arguments: [String], daemonPath: String, quick: Bool) async throws -> Int32 {
        func value(_ flag: String) -> String? {
            arguments.firstIndex(of: flag).flatMap { $0 + 1 < arguments.count ? arguments[$0 + 1] : nil }
        }
        let counts =
            value("--counts").map { $0.split(separator: ",").compactMap { Int($0) } }
            ?? (quick ? [2_000, 10_000] : [10_000, 100_000])
        let touch = value("--touch").flatMap(Int.init) ?? (quick ? 5_000 : 100_000)
        let active = quick ? 200 : 1_000
        say("# flowsync-server-bench --lists\(quick ? " (quick)" : "")\n")
        say(
            "Release flowsyncd, file store, fsync always. Each stored list: 5 batches (a section, 4 rows). Data generated with the store API. "
                + "Start = spawn to the listening line. The machine is shared (2 cores, other builds running): compare ratios within one run.\n"
        )
        say(
            "| lists on disk | data dir | mode | start to listening | RSS after start | \(active) cold subscribes p50 | p99 | RSS with \(active) active |"
        )
        say("| --- | --- | --- | --- | --- | --- | --- | --- |")
        let thread = try EventLoopThread()
        defer { _ = thread.shutdown() }
        var largest: String?
        for count in counts {
            let directory = NSTemporaryDirectory() + "flowsync-lists-bench-\(count)-\(UUID().uuidString)"
            let generated = now()
            try generate(count, in: directory)
            progress("generated \(count) lists in \(String(format: "%.1f", now() - generated)) s")
            let size = directorySize(directory)
            // Eager (today's default) only where it is quick enough to be worth a row.
            for mode in count <= 100_000 ? Mode.allCases : [.onDemand, .onDemandAfterCrash] {
                if mode == .onDemandAfterCrash {
                    // As after a kill: RUNNING, no manifest. Lists load under the torn-tail
                    // rule, with no OPENED marker to write (and sync) per load.
                    try? FileManager.default.removeItem(atPath: directory + "/STOPPED")
                    try "fsync=always\n".write(toFile: directory + "/RUNNING", atomically: true, encoding: .utf8)
                }
                let row = try await measure(
                    directory: directory, count: count, active: active, onDemand: mode != .atStart,
                    daemonPath: daemonPath, thread: thread)
                say(
                    "| \(count) | \(size / 1_048_576) MB | \(mode.rawValue) | \(row.start) | \(row.rss) MiB | \(row.p50) | \(row.p99) | \(row.activeRSS) MiB |"
                )
            }
            if let previous = largest { try? FileManager.default.removeItem(atPath: previous) }
            largest = directory
        }
        if let directory = largest, let count = counts.last {
            if arguments.contains("--backup") {
                try await backupOnDemand(directory: directory, count: count, daemonPath: daemonPath, thread: thread)
            }
            try await touchEach(min(touch, count), directory: directory, daemonPath: daemonPath, thread: thread)
            try? FileManager.default.removeItem(atPath: directory)
        }
        return 0
    }

    static func name(_ k: Int) -> String { "user-\(k)" }

    enum Mode: String, CaseIterable {
        case atStart = "at start"
        case onDemand = "on demand (after a clean stop)"
        case onDemandAfterCrash = "on demand (after a crash)"
    }

    /// `count` lists of 5 batches each, written with a ``FileStore`` whose syncs are
    /// no-ops (the data lands in the page cache; durability is not what is measured),
    /// then closed cleanly (a clean-stop manifest, as after `systemctl stop`).
    static func generate(_ count: Int, in directory: String) throws {
        let store = FileStore(
            directory: directory, options: FileStore.Options(fsync: .never, maxOpenLogs: 64), io: NoSyncFileIO())
        _ = try store.recover(RecoveryOptions())
        for k in 0..<count {
            var sequencer = Sequencer(director: Director(), position: ListVersion(epoch: UInt64(k + 1), version: 0))
            for step in 0..<5 {
                let ops: [FlowSyncCore.Operation] =
                    step == 0
                    ? [.insertSections([Section(id: "s")], at: 0)]
                    : [
                        .insertRows(
                            [Row(id: "r\(step)", kind: "t", payload: Array("row \(step) of list \(k)".utf8))],
                            in: .index(0), at: 0)
                    ]
                sequencer.submit(
                    MutationRequest(clientID: "gen", seq: UInt64(step + 1), base: sequencer.position, operations: ops),
                    tag: 0)
                guard let commit = sequencer.seal().commit else { fatalError("generator mutation refused") }
                _ = try store.append(StoredBatch(listName: name(k), commit: commit))
            }
            if k % 20_000 == 19_999 { progress("\(k + 1) lists written") }
        }
        try store.close()
    }

    struct Figures {
        var start: String
        var rss: Int
        var p50: String
        var p99: String
        var activeRSS: Int
    }

    /// Starts the daemon (timed), then subscribes to `active` lists one after another
    /// (each a cold load on demand) and keeps them subscribed.
    static func measure(
        directory: String, count: Int, active: Int, onDemand: Bool, daemonPath: String, thread: EventLoopThread
    ) async throws -> Figures {
        var options = DaemonProcess.Options(binary: daemonPath, dataDirectory: directory)
        options.configText =
            "[lists]\non_demand = \(onDemand)\nidle_unload_ms = 0\n[limits]\nmax_lists_per_connection = 100000\n"
        options.startTimeout = .seconds(600)
        let began = now()
        let daemon = try await DaemonProcess.start(options)
        let start = now() - began
        try await Task.sleep(for: .milliseconds(300))
        let rss = daemon.rssKiB / 1024
        let client = try await TestClient.connect(port: daemon.port, on: thread, clientID: "bench")
        var latencies: [Double] = []
        var random = SeededRandom(seed: 21)
        var picked = Set<Int>()
        while picked.count < active { picked.insert(random.int(0..<count)) }
        for k in picked.sorted() {
            let list = name(k)
            let sent = now()
            client.send(.subscribe(Subscribe(listName: list)))
            guard
                case .snapshot? = await client.waitFor(
                    timeout: 30, { if case .snapshot(let s) = $0 { return s.listName == list } else { return false } })
            else {
                throw CrashTestError("no snapshot of \(list)")
            }
            latencies.append(now() - sent)
            _ = client.drain()
        }
        latencies.sort()
        let activeRSS = daemon.rssKiB / 1024
        client.close()
        _ = await daemon.terminate()
        func ms(_ q: Double) -> String {
            String(format: "%.2f ms", latencies[min(latencies.count - 1, Int(Double(latencies.count) * q))] * 1000)
        }
        return Figures(
            start: String(format: "%.2f s", start), rss: rss, p50: ms(0.5), p99: ms(0.99), activeRSS: activeRSS)
    }

    /// Subscribes to and leaves `count` lists once each, in order, with a 1 s idle
    /// timeout: the daemon's RSS every tenth of the run must level off.
    static func touchEach(_ count: Int, directory: String, daemonPath: String, thread: EventLoopThread) async throws {
        var options = DaemonProcess.Options(binary: daemonPath, dataDirectory: directory)
        options.configText =
            "[lists]\non_demand = true\nidle_unload_ms = 1000\n[limits]\nmax_lists_per_connection = 100000\n"
        options.startTimeout = .seconds(600)
        let daemon = try await DaemonProcess.start(options)
        let client = try await TestClient.connect(port: daemon.port, on: thread, clientID: "toucher")
        say("\n## RSS while \(count) lists are each subscribed to once (idle_unload_ms = 1000)\n")
        say("| lists touched | elapsed | daemon RSS |")
        say("| --- | --- | --- |")
        let began = now()
        say("| 0 | 0 s | \(daemon.rssKiB / 1024) MiB |")
        for k in 0..<count {
            let list = name(k)
            client.send(.subscribe(Subscribe(listName: list)))
            guard
                case .snapshot? = await client.waitFor(
                    timeout: 30, { if case .snapshot(let s) = $0 { return s.listName == list } else { return false } })
            else {
                throw CrashTestError("no snapshot of \(list)")
            }
            client.send(.unsubscribe(Unsubscribe(listName: list)))
            _ = client.drain()
            if (k + 1) % (count / 10) == 0 {
                say("| \(k + 1) | \(String(format: "%.0f", now() - began)) s | \(daemon.rssKiB / 1024) MiB |")
            }
        }
        try await Task.sleep(for: .milliseconds(2_500))
        say("| (2.5 s later) | \(String(format: "%.0f", now() - began)) s | \(daemon.rssKiB / 1024) MiB |")
        client.close()
        _ = await daemon.terminate()
    }

    /// An online backup with lists on demand (`--backup`): 1,000 lists loaded and
    /// subscribed, every other list on disk only. While the backup runs, a second client
    /// subscribes to cold lists one after another (each a load, some held by the
    /// backup's read of their chunk): their latency, and the daemon's RSS, sampled.
    static func backupOnDemand(directory: String, count: Int, daemonPath: String, thread: EventLoopThread) async throws
    {
        var options = DaemonProcess.Options(binary: daemonPath, dataDirectory: directory)
        // No heartbeat: the holder and the admin client (a TestClient, which never pings)
        // stay silent for as long as the backup takes.
        options.configText =
            "[lists]\non_demand = true\nidle_unload_ms = 0\n[limits]\nmax_lists_per_connection = 100000\nheartbeat_ms = 0\n"
        options.startTimeout = .seconds(600)
        let daemon = try await DaemonProcess.start(options)
        let holder = try await TestClient.connect(port: daemon.port, on: thread, clientID: "holder")
        for k in 0..<min(1_000, count) {
            holder.send(.subscribe(Subscribe(listName: name(k))))
            guard
                case .snapshot? = await holder.waitFor(
                    timeout: 30,
                    { if case .snapshot(let s) = $0 { return s.listName == name(k) } else { return false } })
            else {
                throw CrashTestError("no snapshot of \(name(k))")
            }
            _ = holder.drain()
        }
        let rssBefore = daemon.rssKiB / 1024
        let target = NSTemporaryDirectory() + "flowsync-lists-bench-backup-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: target) }
        let admin = try await TestClient.connect(port: daemon.port, on: thread, clientID: "admin")
        let probe = try await TestClient.connect(port: daemon.port, on: thread, clientID: "probe")
        let began = now()
        admin.send(.backupRequest(BackupRequest(requestID: 1, directory: target)))
        var latencies: [Double] = []
        var peakRSS = rssBefore
        var k = count - 1
        var reply: BackupReply?
        while reply == nil && now() - began < 1_800 && k >= 1_000 {
            if case .backupReply(let r)? = admin.drain().first(where: {
                if case .backupReply = $0 { return true } else { return false }
            }) {
                reply = r
                break
            }
            // A cold list from the far end, so it is still on disk when asked for.
            let list = name(k)
            k -= 1
            let sent = now()
            probe.send(.subscribe(Subscribe(listName: list)))
            guard
                case .snapshot? = await probe.waitFor(
                    timeout: 60, { if case .snapshot(let s) = $0 { return s.listName == list } else { return false } })
            else {
                throw CrashTestError("no snapshot of \(list) during the backup")
            }
            latencies.append(now() - sent)
            probe.send(.unsubscribe(Unsubscribe(listName: list)))
            _ = probe.drain()
            if latencies.count % 50 == 0 { peakRSS = max(peakRSS, daemon.rssKiB / 1024) }
        }
        if reply == nil,
            case .backupReply(let r)? = await admin.waitFor(
                timeout: 1_800, { if case .backupReply = $0 { return true } else { return false } })
        {
            reply = r
        }
        let elapsed = now() - began
        guard let reply, reply.failure == nil else {
            throw CrashTestError("backup failed: \(String(describing: reply))")
        }
        latencies.sort()
        func ms(_ q: Double) -> String {
            latencies.isEmpty
                ? "—"
                : String(
                    format: "%.2f ms", latencies[min(latencies.count - 1, Int(Double(latencies.count) * q))] * 1000)
        }
        say("\n## Online backup with lists on demand (\(count) lists stored, 1,000 loaded and subscribed)\n")
        say(
            "| lists in the backup | bytes | elapsed (request → reply) | RSS before | RSS peak during | cold subscribes during it | p50 | p99 |"
        )
        say("| --- | --- | --- | --- | --- | --- | --- | --- |")
        say(
            "| \(reply.lists) | \(reply.bytes / 1_048_576) MB | \(String(format: "%.1f", elapsed)) s | \(rssBefore) MiB | \(peakRSS) MiB | \(latencies.count) | \(ms(0.5)) | \(ms(0.99)) |"
        )
        holder.close()
        admin.close()
        probe.close()
        _ = await daemon.terminate()
    }

    static func directorySize(_ path: String) -> Int {
        guard let walker = FileManager.default.enumerator(atPath: path) else { return 0 }
        var total = 0
        while let file = walker.nextObject() as? String {
            total += (try? FileManager.default.attributesOfItem(atPath: path + "/" + file)[.size] as? Int) ?? 0
        }
        return total
    }
}

/// ``PosixFileIO`` without syncs: for generating benchmark data quickly.
final class NoSyncFileIO: FileIO, Sendable {
    private let base = PosixFileIO()
    func makeDirectory(_ path: String) throws(StoreError) { try base.makeDirectory(path) }
    func listDirectory(_ path: String) throws(StoreError) -> [String] { try base.listDirectory(path) }
    func exists(_ path: String) -> Bool { base.exists(path) }
    func readFile(_ path: String) throws(StoreError) -> [UInt8] { try base.readFile(path) }
    func openForAppend(_ path: String, create: Bool, truncate: Bool) throws(StoreError) -> Int32 {
        try base.openForAppend(path, create: create, truncate: truncate)
    }
    func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String) throws(StoreError) {
        try base.write(fd, bytes, path: path)
    }
    func sync(_ fd: Int32, path: String) throws(StoreError) {}
    func close(_ fd: Int32) { base.close(fd) }
    func truncate(_ path: String, to length: Int) throws(StoreError) { try base.truncate(path, to: length) }
    func rename(_ from: String, to: String) throws(StoreError) { try base.rename(from, to: to) }
    func remove(_ path: String) throws(StoreError) { try base.remove(path) }
    func syncDirectory(_ path: String) throws(StoreError) {}
    func syncFileSystem(_ path: String) throws(StoreError) {}
    func lock(_ path: String) throws(StoreError) -> Int32 { try base.lock(path) }
}
