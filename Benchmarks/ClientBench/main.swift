// flowsync-client-bench: the SDK's figures for docs/BENCHMARKS.md.
//
//   swift build -c release --product flowsync-client-bench
//   .build/release/flowsync-client-bench [--quick]
//   .build/release/flowsync-client-bench --gateway [--quick]   (GatewayBench.swift)
//
// 1. Local edit → visible: the time an edit call takes to show in the replica (it
//    returns once the snapshot has it), and to reach an observer on its queue.
// 2. Edit → server ack on loopback: one write at a time, p50/p99.
// 3. Memory of a replica of 100,000 rows (process RSS before/after loading it).
// 4. Offline persistence (issue #19): cold start from disk (1,000 / 100,000 rows, no
//    network), bytes written per batch at the default cadence, a local edit's cost with
//    its pending file fsynced, and resume after a relaunch (Diff) vs a fresh load
//    (Snapshot), in bytes the server sent.
//
// The server runs in this process (EmbeddedServer, same code as flowsyncd) on its own
// loop thread; the client runs its own loop thread, as in an app.
import Dispatch
import FlowSyncClient
import FlowSyncCore
import FlowSyncServer
import FlowSyncTestSupport
import Foundation

struct Item: FlowModel {
    static let flowKind = "item"
    var id: String
    var title: String
}

let quick = CommandLine.arguments.contains("--quick")

func now() -> UInt64 { MonotonicClock.nanoseconds() }

func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * p))]
}

func rssKiB() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        return Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
    }
    return 0
}

func client(port: Int) throws -> FlowSyncClient {
    try FlowSyncClient(configuration: .init(port: port, callbackQueue: DispatchQueue(label: "bench")))
}

/// Fills `list` with `rows` rows in sections of at most 10,000, in writes of 1,000.
func fill(_ list: ListDirector, rows: Int) async throws {
    var written = 0
    var section = 0
    while written < rows {
        let id = "s\(section)"
        try await list.add(section: NewSection(id: id)).committed()
        var inSection = 0
        while inSection < 10_000 && written < rows {
            let n = min(1_000, rows - written, 10_000 - inSection)
            let models: [any FlowModel] = (0..<n).map {
                Item(id: "r\(written + $0)", title: "Row number \(written + $0)")
            }
            try await list.section(id: id)!.add(models: models).committed()
            written += n
            inSection += n
        }
        section += 1
    }
}

let server = try await EmbeddedServer()
if CommandLine.arguments.contains("--gateway") {
    // The gateway's figures beside the SDK's (GatewayBench.swift), and nothing else.
    try await GatewayBench.run(server: server, quick: quick)
    _ = await server.stop()
    exit(0)
}
print("flowsync-client-bench\(quick ? " (quick)" : "")")

// MARK: 1. Local edit → visible

/// What an app's data source holds: the last snapshot it was shown. Holding it across
/// the next edit is what made an observed edit O(n) before the ID maps were sharded.
final class HeldSnapshot: @unchecked Sendable {
    // Touched only on the observer's serial queue.
    var snapshot: ListSnapshot?
}

for rows in quick ? [100] : [100, 10_000, 100_000] {
    for holdsSnapshot in [false, true] {
        let writer = try client(port: server.port)
        let list = writer.director("visible-\(rows)-\(holdsSnapshot)")
        try await list.waitUntilLoaded()
        try await fill(list, rows: rows)
        let seen = DispatchSemaphore(value: 0)
        let dataSource = HeldSnapshot()
        let observation = list.observe(on: DispatchQueue(label: "observer")) { change in
            if holdsSnapshot { dataSource.snapshot = change.snapshot }
            if case .local = change.cause { seen.signal() }
        }
        var call: [Double] = [], observed: [Double] = []
        var tickets: [WriteTicket] = []
        let iterations = quick ? 50 : 500
        for i in 0..<iterations {
            let start = now()
            let ticket = try list.section(at: 0)!.add(model: Item(id: "v\(i)", title: "visible"), at: 0)
            let shown = now()
            seen.wait()
            let delivered = now()
            call.append(Double(shown - start) / 1000)
            observed.append(Double(delivered - start) / 1000)
            tickets.append(ticket)
            if i % 50 == 49 {
                for t in tickets { _ = try await t.committed() }
                tickets = []
            }
        }
        for t in tickets { _ = try await t.committed() }
        observation.cancel()
        let label =
            "local edit → visible, " + String(repeating: " ", count: max(0, 7 - String(rows).count)) + "\(rows) rows"
            + (holdsSnapshot ? ", snapshot held" : "")
        print(
            label
                + String(
                    format: ": call p50 %.1f µs p99 %.1f µs; observer p50 %.1f µs p99 %.1f µs",
                    percentile(call, 0.5), percentile(call, 0.99), percentile(observed, 0.5), percentile(observed, 0.99)
                ))
        writer.close()
    }
}

// MARK: 2. Edit → ack on loopback

do {
    let writer = try client(port: server.port)
    let list = writer.director("ack")
    try await list.waitUntilLoaded()
    try await list.add(section: NewSection(id: "s")).committed()
    var latencies: [Double] = []
    let iterations = quick ? 100 : 2_000
    for i in 0..<iterations {
        let start = now()
        _ = try await list.section(at: 0)!.add(model: Item(id: "a\(i)", title: "acked"), at: 0).committed()
        latencies.append(Double(now() - start) / 1000)
    }
    print(
        String(
            format: "edit → ack (loopback, one in flight, %d writes): p50 %.0f µs p90 %.0f µs p99 %.0f µs max %.0f µs",
            iterations, percentile(latencies, 0.5), percentile(latencies, 0.9), percentile(latencies, 0.99),
            latencies.max()!))
    writer.close()
}

// MARK: 3. Memory of a 100,000-row replica

do {
    let rows = quick ? 10_000 : 100_000
    let writer = try client(port: server.port)
    let source = writer.director("memory")
    try await source.waitUntilLoaded()
    try await fill(source, rows: rows)
    writer.close()
    // Settle the allocator, then load the list in a fresh client.
    try await Task.sleep(nanoseconds: 200_000_000)
    let before = rssKiB()
    let reader = try client(port: server.port)
    let replica = reader.director("memory")
    let start = now()
    try await replica.waitUntilLoaded()
    let loaded = Double(now() - start) / 1e6
    let after = rssKiB()
    precondition(replica.numberOfModels == rows)
    let payload = replica.snapshot.director.sections.reduce(0) {
        $0 + $1.rows.reduce(0) { $0 + $1.payload.count + $1.id.utf8.count + $1.kind.utf8.count }
    }
    print(
        String(
            format:
                "replica of %d rows (%.1f MB of ids+kinds+payloads): RSS +%.1f MB (%.0f bytes/row), loaded in %.0f ms",
            rows, Double(payload) / 1e6, Double(after - before) / 1024, Double((after - before) * 1024) / Double(rows),
            loaded))
    reader.close()
}

// MARK: 4. Offline persistence

func persistent(port: Int, directory: String, waitsForDisk: Bool = true) throws -> FlowSyncClient {
    try FlowSyncClient(
        configuration: .init(
            port: port, callbackQueue: DispatchQueue(label: "bench-offline"),
            persistence: PersistenceOptions(directory: directory, waitsForDisk: waitsForDisk)))
}

/// Waits (bounded) until `list` shows the server's version of it, nothing pending.
func caughtUp(_ list: ListDirector, to other: ListDirector) async throws {
    for _ in 0..<60_000 {
        if list.snapshot.version == other.snapshot.version && list.snapshot.pendingWrites == 0
            && list.snapshot.version != nil
        {
            return
        }
        try await Task.sleep(nanoseconds: 1_000_000)
    }
    fatalError("\(list.name) did not catch up")
}

func bytesSent(_ server: EmbeddedServer) async -> Int { await server.withServer { $0.statistics.bytesSent } }

for rows in quick ? [1_000] : [1_000, 100_000] {
    let directory = NSTemporaryDirectory() + "flowsync-bench-\(UInt64.random(in: 0...UInt64.max))"
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let writer = try client(port: server.port)
    let source = writer.director("offline-\(rows)")
    try await source.waitUntilLoaded()
    try await fill(source, rows: rows)

    // First launch: load from the server; close writes the replica.
    do {
        let first = try persistent(port: server.port, directory: directory)
        try await caughtUp(first.director(source.name), to: source)
        first.close()
    }
    let files = try FileManager.default.contentsOfDirectory(atPath: directory)
    let replicaBytes = try files.filter { $0.hasSuffix(".replica") }.reduce(0) {
        $0 + ((try FileManager.default.attributesOfItem(atPath: directory + "/" + $1)[.size] as? Int) ?? 0)
    }

    // Cold starts with no network (nothing listens on port 1): client + director + rows.
    var cold: [Double] = []
    for _ in 0..<(quick ? 3 : 7) {
        let start = now()
        let offline = try persistent(port: 1, directory: directory)
        let list = offline.director(source.name)
        precondition(list.snapshot.numberOfModels == rows && list.snapshot.isFromDisk)
        cold.append(Double(now() - start) / 1e6)
        offline.close()
    }
    print(
        String(
            format: "cold start from disk, %7d rows: p50 %.1f ms (min %.1f ms); replica file %.1f KB (%.1f bytes/row)",
            rows, percentile(cold, 0.5), cold.min()!, Double(replicaBytes) / 1e3, Double(replicaBytes) / Double(rows)))

    // Bytes written per batch while following a list others edit (default cadence:
    // 100 batches or 5 s), and a local edit with its pending file.
    let follower = try persistent(port: server.port, directory: directory)
    let followed = follower.director(source.name)
    try await caughtUp(followed, to: source)
    let before = follower.persistenceStatistics!
    let batches = quick ? 200 : 1_000
    let started = now()
    for i in 0..<batches {
        _ = try await source.section(at: 0)!.update(model: Item(id: "r\(i % min(rows, 10_000))", title: "edited \(i)"))
            .committed()
    }
    try await caughtUp(followed, to: source)
    let seconds = Double(now() - started) / 1e9
    let after = follower.persistenceStatistics!
    let written = after.replicaBytesWritten - before.replicaBytesWritten
    print(
        String(
            format:
                "following %7d rows, %d batches in %.1f s: %d replica writes, %.0f bytes written per batch (%.1f MB in all)",
            rows, batches, seconds, after.replicaFilesWritten - before.replicaFilesWritten,
            Double(written) / Double(batches), Double(written) / 1e6))
    // A local edit, in both modes: the call (with waitsForDisk, the default, it
    // returns once its pending file is written and fsynced; without, at once), and
    // edit → committed (the file is on disk before the Mutate may leave either way).
    follower.close()
    for waits in [true, false] {
        let editor = try persistent(port: server.port, directory: directory, waitsForDisk: waits)
        let edited = editor.director(source.name)
        try await caughtUp(edited, to: source)
        var editCalls: [Double] = []
        var editCommits: [Double] = []
        let edits = quick ? 20 : 200
        let pendingBefore = editor.persistenceStatistics!
        for i in 0..<edits {
            let start = now()
            let ticket = try edited.section(at: 0)!.update(model: Item(id: "r\(i)", title: "local \(i)"))
            editCalls.append(Double(now() - start) / 1000)
            _ = try await ticket.committed()
            editCommits.append(Double(now() - start) / 1000)
        }
        let pendingAfter = editor.persistenceStatistics!
        print(
            String(
                format:
                    "local edit with persistence (waitsForDisk: %@), %7d rows: call p50 %.0f µs p99 %.0f µs; edit → committed p50 %.0f µs p99 %.0f µs; %.0f pending-file bytes per edit",
                waits ? "true" : "false", rows, percentile(editCalls, 0.5), percentile(editCalls, 0.99),
                percentile(editCommits, 0.5), percentile(editCommits, 0.99),
                Double(pendingAfter.pendingBytesWritten - pendingBefore.pendingBytesWritten) / Double(edits)))
        // A burst (a drag that makes many edits at once).
        let burst = 100
        let burstBefore = editor.persistenceStatistics!
        let burstStart = now()
        var tickets: [WriteTicket] = []
        for i in 0..<burst {
            tickets.append(try edited.section(at: 0)!.update(model: Item(id: "r\(i)", title: "burst \(i)")))
        }
        let burstCalls = Double(now() - burstStart) / 1e6
        editor.flushPersistence()
        let burstDurable = Double(now() - burstStart) / 1e6
        for ticket in tickets { _ = try await ticket.committed() }
        let burstAfter = editor.persistenceStatistics!
        print(
            String(
                format:
                    "burst of %d edits (waitsForDisk: %@), %7d rows: calls %.1f ms in all, on disk after %.1f ms, %d pending-file writes",
                burst, waits ? "true" : "false", rows, burstCalls, burstDurable,
                burstAfter.pendingFilesWritten - burstBefore.pendingFilesWritten))
        try await caughtUp(edited, to: source)
        editor.close()
    }

    // Resume after a relaunch: 100 batches happen while the app is not running.
    for i in 0..<100 {
        _ = try await source.section(at: 0)!.update(model: Item(id: "r\(i)", title: "while away \(i)")).committed()
    }
    var sent = await bytesSent(server)
    let relaunched = try persistent(port: server.port, directory: directory)
    try await caughtUp(relaunched.director(source.name), to: source)
    let diffBytes = await bytesSent(server) - sent
    relaunched.close()
    sent = await bytesSent(server)
    let fresh = try client(port: server.port)
    try await caughtUp(fresh.director(source.name), to: source)
    let snapshotBytes = await bytesSent(server) - sent
    fresh.close()
    print(
        String(
            format:
                "resume after relaunch, %7d rows, 100 batches missed: %d bytes from the server (Diff) vs %d for a fresh load (Snapshot), %.1f%%",
            rows, diffBytes, snapshotBytes, 100 * Double(diffBytes) / Double(snapshotBytes)))
    writer.close()
}

_ = await server.stop()
