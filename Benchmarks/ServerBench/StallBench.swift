// flowsync-server-bench --stall: how long one legal request holds the event loop
// (issue #15, section 2). An embedded server on 127.0.0.1 port 0 (this process), one
// list whose sections are seeded through the store (one section per --sizes entry:
// 100,000 and 1,000,000 rows by default); a requesting client, and a second client on
// its own loop thread that pings every 20 ms. For each request: its service time
// (send → Ack, or Subscribe → the whole Snapshot frame) and the worst ping round trip
// the second client saw meanwhile — the time every other client of the daemon waited.
//
//   .build/release/flowsync-server-bench --stall [--sizes 100000,1000000] [--rows 20000]
//       [--moves 1000] [--skip insert0@1000000,remove0@1000000] [--snapshot-only]
//       [--offload-snapshot-rows N] [--quick]
//
// --skip takes case@rows keys (insert0, remove0, insertEnd, removeEnd, moves) and
// `snapshot`; --offload-snapshot-rows sets the server's threshold (a huge value encodes
// every snapshot on the loop, as before issue #15).
//
// Not a timed test: it prints figures (docs/BENCHMARKS.md, "Loop stalls"); it fails
// only when the server answers wrongly (a reject, a digest that differs).
import FlowSyncCore
import FlowSyncLoop
import FlowSyncProtocol
import FlowSyncServer
import FlowSyncTestSupport
import Foundation
import Synchronization

enum StallBench {
    static let list = "stall"

    struct Options {
        var sizes: [Int]
        var rows: Int
        var moves: Int
        var skip: Set<String>
        var snapshotOnly: Bool
        var offloadSnapshotRows: Int?
    }

    static func run(arguments: [String], quick: Bool) async throws -> Int32 {
        func value(_ flag: String) -> String? {
            arguments.firstIndex(of: flag).flatMap { $0 + 1 < arguments.count ? arguments[$0 + 1] : nil }
        }
        let options = Options(
            sizes: value("--sizes").map { $0.split(separator: ",").compactMap { Int($0) } }
                ?? (quick ? [2_000, 20_000] : [100_000, 1_000_000]),
            rows: value("--rows").flatMap(Int.init) ?? (quick ? 1_000 : 20_000),
            moves: value("--moves").flatMap(Int.init) ?? (quick ? 100 : 1_000),
            skip: Set((value("--skip") ?? "").split(separator: ",").map(String.init)),
            snapshotOnly: arguments.contains("--snapshot-only"),
            offloadSnapshotRows: value("--offload-snapshot-rows").flatMap(Int.init)
        )
        return try await measure(options, quick: quick) ? 0 : 1
    }

    // MARK: The run

    static func measure(_ options: Options, quick: Bool) async throws -> Bool {
        say("## Loop stalls\(quick ? " (quick)" : "")\n")
        say(
            "One list, sections of \(options.sizes.map(String.init).joined(separator: " and ")) rows (~60-byte payloads); an embedded server (in-memory store, "
                + "release build); a second client pings every 20 ms from its own thread. Requests are sequential (each waits for its ack). "
                + "Service time: request sent → Ack (or Subscribe → whole Snapshot frame received). Worst ping: the longest ping round trip seen "
                + "while the request was served (a ping still unanswered counts its age).\n")
        let started = now()
        progress("stall: seeding \(options.sizes.reduce(0, +)) rows")
        var configuration = ServerConfiguration()
        configuration.director = DirectorLimits(maxRows: 20_000_000)
        configuration.maxFrameBytes = 256 << 20
        configuration.maxInflatedBytes = 1 << 30
        // A 1,000,000-row snapshot is tens of MB: not a slow consumer here.
        configuration.highWatermarkBytes = 1 << 30
        configuration.hardLimitBytes = 2 << 30
        configuration.historyMaxBytes = 256 << 20
        if let rows = options.offloadSnapshotRows { configuration.offloadSnapshotRows = rows }
        say(
            "Snapshots of lists from \(configuration.offloadSnapshotRows) rows are built off the loop (`offload_snapshot_rows`).\n"
        )
        let sizes = options.sizes
        let server = try await EmbeddedServer(
            configuration: configuration,
            storage: .custom {
                let store = InMemoryStore(snapshotEveryBatches: 0)
                try! store.startEpoch(seed(sizes: sizes))
                return store
            })
        progress("stall: seeded in \(format((now() - started) * 1e3)) ms")
        let clients = try EventLoopThread()
        let pingThread = try EventLoopThread()
        defer {
            _ = clients.shutdown()
            _ = pingThread.shutdown()
        }
        let writer = try await TestClient.connect(port: server.port, on: clients, clientID: "stall-writer")
        let probe = try await PingProbe.start(port: server.port, on: pingThread)
        guard var base = await server.withServer({ $0.state(of: list)?.position }) else { fatalError("no list") }
        var seq: UInt64 = 0
        var ok = true

        say("| request | section rows | service time | worst ping |")
        say("| --- | --- | --- | --- |")
        func row(_ request: String, _ rows: Int, _ service: String, _ ping: String) {
            say("| \(request) | \(rows) | \(service) | \(ping) |")
        }
        /// One Mutate, pre-encoded (uncompressed) so the client's own encode is not timed.
        func request(_ ops: [FlowSyncCore.Operation]) async -> (seconds: Double, worstPing: Double)? {
            seq += 1
            let frame = FrameEncoder(configuration: .disabled).encode(
                .mutate(Mutate(listName: list, clientID: writer.clientID, seq: seq, base: base, operations: ops)))
            let mine = seq
            probe.resetWorst()
            let sent = now()
            writer.sendRaw(frame)
            let reply = await writer.waitFor(timeout: 3_600) { m in
                if case .ack(let a) = m, a.seq == mine { return true }
                if case .reject(let r) = m, r.seq == mine { return true }
                return false
            }
            let seconds = now() - sent
            let worst = probe.worst()
            _ = writer.drain()
            guard case .ack(let ack)? = reply else {
                say("FAILED: request \(mine) answered \(String(describing: reply))")
                return nil
            }
            base = ack.committed
            return (seconds, worst)
        }

        var random = SeededRandom(seed: 15)
        for (index, size) in sizes.enumerated() where !options.snapshotOnly {
            let section = "s\(index)"
            let k = options.rows
            let inserted = (0..<k).map { Row(id: "x\(index)-\($0)", kind: "contact", text: payload($0)) }
            let atEnd = (0..<k).map { Row(id: "y\(index)-\($0)", kind: "contact", text: payload($0)) }
            let cases: [(key: String, label: String, ops: [FlowSyncCore.Operation])] = [
                ("insert0", "insert \(k) rows at index 0", [.insertRows(inserted, in: .id(section), at: 0)]),
                ("remove0", "remove those \(k) rows by ID", [.removeRows(inserted.map { .id($0.id) })]),
                ("insertEnd", "insert \(k) rows at the end", [.insertRows(atEnd, in: .id(section), at: size)]),
                ("removeEnd", "remove those \(k) rows by ID (end)", [.removeRows(atEnd.map { .id($0.id) })]),
            ]
            for c in cases {
                if options.skip.contains("\(c.key)@\(size)") {
                    row(c.label, size, "skipped (--skip)", "—")
                    continue
                }
                progress("stall: \(c.label) in \(size)")
                guard let r = await request(c.ops) else {
                    ok = false
                    continue
                }
                row(c.label, size, ms(r.seconds), ms(r.worstPing))
            }
            if options.skip.contains("moves@\(size)") {
                row("\(options.moves) random single-row moves", size, "skipped (--skip)", "—")
                continue
            }
            progress("stall: \(options.moves) moves in \(size)")
            var times: [Double] = []
            var worst = 0.0
            for _ in 0..<options.moves {
                let from = Int.random(in: 0..<size, using: &random)
                let to = Int.random(in: 0..<size, using: &random)
                guard let r = await request([.moveRow(.index(from, in: .id(section)), toSection: .id(section), at: to)])
                else {
                    ok = false
                    break
                }
                times.append(r.seconds)
                worst = max(worst, r.worstPing)
            }
            times.sort()
            if !times.isEmpty {
                row(
                    "\(options.moves) random single-row moves (sequential; p50 / max each, total)", size,
                    "\(ms(times[times.count / 2])) / \(ms(times.last!)), \(ms(times.reduce(0, +)))", ms(worst))
            }
        }

        // A fresh subscriber's snapshot of the whole list, counted by length prefix only
        // (no decode on the client), so the figure is the server's and the wire's.
        let total = await server.withServer { $0.state(of: list)?.director.rowCount ?? 0 }
        if options.skip.contains("snapshot") {
            row("fresh subscriber's snapshot of the list", total, "skipped (--skip)", "—")
        } else {
            progress("stall: snapshot of \(total) rows")
            let (seconds, bytes, worst) = await freshSnapshot(port: server.port, on: clients, probe: probe)
            row("fresh subscriber's snapshot of the list (\(bytes) bytes)", total, ms(seconds), ms(worst))
        }

        // The answers were right: a replica of the final state equals the server's.
        let check = try await TestClient.connect(port: server.port, on: clients, clientID: "stall-check")
        check.send(.subscribe(Subscribe(listName: list, resumeFrom: nil, digest: nil)))
        if case .snapshot(let snapshot)? = await check.waitFor(
            timeout: 600, { if case .snapshot = $0 { return true } else { return false } })
        {
            let director = try? Director(sections: snapshot.sections, limits: configuration.director)
            let serverDigest = await server.withServer { $0.state(of: list)?.director.digest }
            let equal =
                director?.digest == snapshot.digest && snapshot.digest == serverDigest && snapshot.position == base
            say(
                "\nchecked: a fresh replica at \(snapshot.position) \(equal ? "has the server's digest" : "DIFFERS from the server")"
            )
            ok = ok && equal
        } else {
            say("\nFAILED: no snapshot for the check")
            ok = false
        }
        let stats = await server.withServer { $0.statistics }
        say(
            "server: \(stats.batchesCommitted) batches, \(stats.snapshotsEncoded) snapshots encoded (\(stats.framesBuiltOffLoop) off the loop); run took \(format(now() - started)) s"
        )
        check.close()
        writer.close()
        probe.close()
        _ = await server.stop()
        return ok
    }

    /// Subscribe → the whole Snapshot frame received (Welcome + Snapshot = 2 frames).
    static func freshSnapshot(
        port: Int, on thread: EventLoopThread, probe: PingProbe
    ) async -> (seconds: Double, bytes: Int, worstPing: Double) {
        probe.resetWorst()
        let (seconds, bytes) = await timeFreshSnapshot(
            port: port, list: list, clientID: "stall-snap", on: thread, timeout: 3_600)
        return (seconds, bytes, probe.worst())
    }

    // MARK: Data

    static func payload(_ n: Int) -> String {
        "{\"id\":\(n),\"name\":\"Person \(n)\",\"email\":\"person\(n)@example.com\"}"
    }

    /// The seeded list: one section per size, as a stored snapshot (recovered before the
    /// listener opens — the fast way to a 1,000,000-row list).
    static func seed(sizes: [Int]) -> StoredSnapshot {
        let sections = sizes.enumerated().map { index, size in
            Section(
                id: "s\(index)", rows: (0..<size).map { Row(id: "r\(index)-\($0)", kind: "contact", text: payload($0)) }
            )
        }
        let director = try! Director(sections: sections, limits: DirectorLimits(maxRows: 20_000_000))
        return StoredSnapshot(
            listName: list, position: ListVersion(epoch: 15, version: 1), digest: director.digest, sections: sections,
            dedupe: [])
    }

    static func ms(_ seconds: Double) -> String { format(seconds * 1e3) + " ms" }
}

/// The second client: a Ping every 20 ms from its own loop thread, each answered by the
/// server's loop with a Pong; it keeps the worst round trip since the last reset.
final class PingProbe: Sendable {
    private struct State {
        var sent: [UInt64: Double] = [:]
        var worst = 0.0
        var resetAt = 0.0
    }
    private let state = Mutex(State())
    private let connection = LoopConfined<TCPConnection?>(nil)
    private let timer = LoopConfined<LoopTimer?>(nil)
    private let thread: EventLoopThread

    private init(thread: EventLoopThread) { self.thread = thread }

    static func start(port: Int, on thread: EventLoopThread) async throws -> PingProbe {
        let probe = PingProbe(thread: thread)
        let welcomed = Shared(false)
        thread.loop.execute {
            TCPConnection.connect(loop: thread.loop, to: try! SocketAddress(host: "127.0.0.1", port: port)) { result in
                guard case .success(let tcp) = result else { return }
                probe.connection.value = tcp
                let decoder = FrameDecoder(limits: .client)
                let encoder = FrameEncoder(configuration: .disabled)
                tcp.onRead = { bytes in
                    decoder.feed(bytes)
                    while let message = try? decoder.next() {
                        switch message {
                        case .welcome:
                            welcomed.set(true)
                        case .pong(let pong):
                            let t = now()
                            probe.state.withLock { s in
                                if let sent = s.sent.removeValue(forKey: pong.nonce) {
                                    s.worst = max(s.worst, t - max(sent, s.resetAt))
                                }
                            }
                        default:
                            break
                        }
                    }
                }
                try? tcp.startReading()
                _ = try? tcp.write([
                    encoder.encode(
                        .hello(
                            Hello(
                                minVersion: 1, maxVersion: 1, clientName: "ping", clientID: "stall-ping", authToken: nil
                            )))
                ])
                var nonce: UInt64 = 0
                let timer = LoopTimer(loop: thread.loop)
                timer.start(after: 20, repeat: 20) {
                    nonce += 1
                    let n = nonce
                    probe.state.withLock { $0.sent[n] = now() }
                    _ = try? tcp.write([encoder.encode(.ping(Ping(nonce: n)))])
                }
                probe.timer.value = timer
            }
        }
        guard await eventually(timeout: 30, { welcomed.get() }) else {
            throw UVError(code: -1, operation: "ping client: no Welcome")
        }
        return probe
    }

    /// Starts a new window: pings sent before it count only from now.
    func resetWorst() {
        let t = now()
        state.withLock { s in
            s.worst = 0
            s.resetAt = t
        }
    }

    /// The worst round trip in this window, counting the age of pings still unanswered.
    func worst() -> Double {
        let t = now()
        return state.withLock { s in
            let waiting = s.sent.values.map { t - max($0, s.resetAt) }.max() ?? 0
            return max(s.worst, waiting)
        }
    }

    func close() {
        let connection = self.connection
        let timer = self.timer
        thread.loop.execute {
            timer.value?.close()
            connection.value?.close()
        }
    }
}
