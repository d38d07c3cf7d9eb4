// flowsync-server-bench: figures for the daemon, measured against a real flowsyncd
// process on loopback (its own process, so its RSS and CPU are its own).
//
//   swift build -c release --product flowsyncd --product ... (see Makefile: make bench-server)
//   .build/release/flowsync-server-bench [--daemon .build/release/flowsyncd] [--quick]
//   .build/release/flowsync-server-bench --stall [--quick]   (loop stalls, StallBench.swift)
//   .build/release/flowsync-server-bench --write-baseline [--quick]   (write calls: libuv vs io_uring)
//   .build/release/flowsync-server-bench --compare-write-paths [--rounds N]   (the daemon: write_path libuv vs io_uring)
//   .build/release/flowsync-server-bench --compare-daemons BASE,NEW [--write-path P] [--rounds N]   (two flowsyncd builds)
//   .build/release/flowsync-server-bench --write-path io_uring   (the whole run with that write path)
//   .build/release/flowsync-server-bench --idle 5000,14960   (daemon RSS per idle connection)
//   .build/release/flowsync-server-bench --lists [--quick] [--backup]   (lists on demand, ListsBench.swift)
//   .build/release/flowsync-server-bench --tls [--quick] [--rounds N] [--send-only]   (TLS against plaintext, TLSBench.swift)
//   .build/release/flowsync-server-bench --slow-consumer-soak [--rounds 20]   (slow consumers' memory, SlowConsumerSoak.swift)
//   .build/release/flowsync-server-bench --million-lists [--count N]   (the shipped config on 1,000,000 stored lists, MillionListsBench.swift)
//
// Subscribers only split frames by their length prefix (cheap), so the client side
// does not hide the server's cost; one subscriber per scenario decodes everything and
// checks its replica's digest against the server's, so a fast wrong answer cannot pass.
import FlowSyncCore
import FlowSyncLoop
import FlowSyncProcess
import FlowSyncProtocol
import FlowSyncTLS
import FlowSyncTestSupport
import Foundation

let arguments = CommandLine.arguments
let quick = arguments.contains("--quick")
let daemonPath = arguments.firstIndex(of: "--daemon").map { arguments[$0 + 1] } ?? ".build/release/flowsyncd"

/// Unbuffered output (stdout to a pipe is fully buffered; a stuck run must show where).
func say(_ text: String) { FileHandle.standardOutput.write(Data((text + "\n").utf8)) }
func progress(_ text: String) { FileHandle.standardError.write(Data(("… " + text + "\n").utf8)) }

func now() -> Double { Double(MonotonicClock.nanoseconds()) / 1e9 }

// MARK: The daemon process

/// The daemon under test: the shared launcher (its own temporary store, metrics on port
/// 0, stopped with SIGTERM and awaited without blocking a thread).
func startDaemon(
    configText: String? = nil, binary: String = daemonPath, logLevel: String? = nil
) async throws -> DaemonProcess {
    var options = DaemonProcess.Options(binary: binary)
    options.metrics = true
    if let configText { options.configText = configText }
    if let logLevel { options.logLevel = logLevel }
    return try await DaemonProcess.start(options)
}

extension DaemonProcess {
    /// Resident set size in KiB, from /proc.
    var rssKiB: Int { sample()?.rssKiB ?? 0 }
}

// MARK: A light subscriber: counts frames by their length prefix

final class FrameCounter: @unchecked Sendable {
    var frames = 0
    var bytes = 0
    /// Size of the last complete frame, prefix included.
    var lastFrameBytes = 0
    private var frameBytes = 0
    private var need = 4
    private var header: [UInt8] = []
    private var inBody = false
    var lastFrameAt = 0.0
    /// TLS handshakes completed on this connection (TLSBench.swift).
    var handshakes = 0
    /// Called after each complete frame (TLSBench.swift's set-ups).
    var onFrame: (() -> Void)?

    /// Loop thread only.
    func consume(_ buffer: UnsafeRawBufferPointer) {
        bytes += buffer.count
        frameBytes += buffer.count
        var i = 0
        while i < buffer.count {
            let take = min(need, buffer.count - i)
            if !inBody { header.append(contentsOf: buffer[i..<(i + take)]) }
            need -= take
            i += take
            if need == 0 {
                if inBody {
                    frames += 1
                    // Bytes of this buffer past the frame's end belong to the next one.
                    lastFrameBytes = frameBytes - (buffer.count - i)
                    frameBytes = buffer.count - i
                    lastFrameAt = now()
                    onFrame?()
                    inBody = false
                    need = 4
                    header = []
                } else {
                    need = Int(
                        UInt32(header[0]) << 24 | UInt32(header[1]) << 16 | UInt32(header[2]) << 8 | UInt32(header[3]))
                    inBody = true
                }
            }
        }
    }
}

let thread = try EventLoopThread()

/// Opens `count` raw connections, handshakes and subscribes them to `list`; returns
/// their counters once every snapshot arrived (Welcome + snapshot = 2 frames). With
/// `tls`, each connection speaks TLS first (TLSBench.swift, issue #32).
func subscribers(_ count: Int, port: Int, list: String, tls: TLSContext? = nil) async -> [FrameCounter] {
    let counters = (0..<count).map { _ in FrameCounter() }
    let opened = Shared(0)
    let hello = FrameEncoder(configuration: .disabled).encode(
        .hello(Hello(minVersion: 1, maxVersion: 1, clientName: "bench", clientID: "sub", authToken: nil)))
    let subscribe = FrameEncoder(configuration: .disabled).encode(
        .subscribe(Subscribe(listName: list, resumeFrom: nil, digest: nil)))
    // Open in waves of 100 so the listen backlog never overflows.
    for wave in stride(from: 0, to: count, by: 100) {
        let end = min(wave + 100, count)
        thread.loop.execute {
            for k in wave..<end {
                TCPConnection.connect(loop: thread.loop, to: try! SocketAddress(host: "127.0.0.1", port: port)) {
                    result in
                    guard case .success(let tcp) = result else { return }
                    let counter = counters[k]
                    if let tls {
                        BenchTLS.start(tls, on: tcp, counter: counter, first: [hello, subscribe])
                    } else {
                        tcp.onRead = { counter.consume($0) }
                        try? tcp.startReading()
                        _ = try? tcp.write([hello, subscribe])
                    }
                    opened.update { $0 += 1 }
                }
            }
        }
        _ = await eventually(timeout: 30) { opened.get() >= end }
    }
    _ = await eventually(timeout: 60) { counters.allSatisfy { $0.frames >= 2 } }
    return counters
}

func stats(_ client: TestClient, list: String) async -> [String: Int64] {
    client.send(.statsRequest(StatsRequest(requestID: 1, listName: list)))
    guard
        case .statsReply(let reply)? = await client.waitFor(
            timeout: 10, { if case .statsReply = $0 { return true } else { return false } })
    else { return [:] }
    _ = client.drain()
    return Dictionary(uniqueKeysWithValues: reply.entries.map { ($0.name, $0.value) })
}

func commit(
    _ client: TestClient, list: String, seq: UInt64, base: ListVersion, _ ops: [FlowSyncCore.Operation]
) async -> ListVersion? {
    client.send(.mutate(Mutate(listName: list, clientID: client.clientID, seq: seq, base: base, operations: ops)))
    let reply = await client.waitFor(timeout: 10) { m in
        if case .ack(let a) = m, a.seq == seq { return true }
        if case .reject(let r) = m, r.seq == seq { return true }
        return false
    }
    _ = client.drain()
    if case .ack(let a)? = reply { return a.committed }
    return nil
}

func format(_ x: Double) -> String {
    x >= 100 ? String(Int(x.rounded())) : String(format: "%.2f", x)
}

/// One fan-out measurement (closed loop: the next mutation after the ack) with `count`
/// subscribers of `list` on `daemon`, over `duration` seconds: the table row, the
/// deliveries per daemon CPU-second, and whether the checked replica matched.
func fanOutRow(
    daemon: DaemonProcess, writer: TestClient, count: Int, list: String, duration: Double, tls: TLSContext? = nil
) async throws -> (line: String, perCPUSecond: Double, userPerDelivery: Double, rowChangesPerSecond: Double, ok: Bool) {
    progress("fan-out: connecting \(count) subscribers")
    let counters = await subscribers(count, port: daemon.port, list: list, tls: tls)
    progress("fan-out: \(counters.filter { $0.frames >= 2 }.count) subscribed")
    let checker = try await TestClient.connect(port: daemon.port, on: thread, clientID: "checker-\(list)", tls: tls)
    progress("checker connected")
    checker.send(.subscribe(Subscribe(listName: list, resumeFrom: nil, digest: nil)))
    guard
        case .snapshot(let snap)? = await checker.waitFor({
            if case .snapshot = $0 { return true } else { return false }
        })
    else { fatalError("no snapshot") }
    var base = snap.position
    progress("checker subscribed at \(base)")
    base = await commit(writer, list: list, seq: 0, base: base, [.insertSections([Section(id: "s")], at: 0)])!
    progress("section created")
    let before = counters.map(\.frames)
    let sampleBefore = daemon.sample()
    let cpuBefore = sampleBefore?.cpuSeconds ?? 0
    let userBefore = sampleBefore?.userSeconds ?? 0
    var seq: UInt64 = 1
    var next = 0
    var latencies: [Double] = []
    let start = now()
    while now() - start < duration {
        var ops: [FlowSyncCore.Operation] = [
            .insertRows(
                (0..<10).map {
                    Row(id: "r\(next + $0)", kind: "item", text: "{\"n\":\(next + $0),\"title\":\"row \(next + $0)\"}")
                }, in: .id("s"), at: 0)
        ]
        if next >= 10 { ops.append(.removeRows((0..<10).map { .id("r\(next - 10 + $0)") })) }
        let sent = now()
        guard let v = await commit(writer, list: list, seq: seq, base: base, ops) else { fatalError("rejected") }
        latencies.append(now() - sent)
        base = v
        seq += 1
        next += 10
    }
    let batches = Int(seq) - 1
    _ = await eventually(timeout: 60) { zip(counters, before).allSatisfy { $0.0.frames - $0.1 >= batches } }
    let end = counters.map(\.lastFrameAt).max() ?? now()
    let elapsed = end - start
    let sampleAfter = daemon.sample()
    let cpu = (sampleAfter?.cpuSeconds ?? 0) - cpuBefore
    let user = (sampleAfter?.userSeconds ?? 0) - userBefore
    let deliveries = Double(batches * count)
    _ = await checker.waitFor(timeout: 30) { if case .diff(let d) = $0 { return d.to == base } else { return false } }
    var replica = Replica()
    replica.apply(checker.messages, list: list)
    let serverDigest = await stats(writer, list: list)["list.digest"].map { UInt64(bitPattern: $0) }
    let ok = replica.problems.isEmpty && replica.position == base && serverDigest == replica.director.digest.rawValue
    latencies.sort()
    checker.close()
    let line =
        "| \(count) | \(batches) | \(format(Double(batches) / elapsed)) | \(format(Double(batches * count) / elapsed)) | \(format(Double(batches * count * 20) / elapsed)) | \(format(latencies[latencies.count / 2] * 1e6)) µs | \(String(format: "%.2f", cpu)) s (\(format(100 * cpu / elapsed)) %) | \(cpu > 0 ? format(deliveries / cpu) : "-") | \(cpu > 0 ? String(format: "%.1f µs", cpu / deliveries * 1e6) : "-") | \(cpu > 0 ? String(format: "%.2f µs", user / deliveries * 1e6) : "-") | \(ok ? "digest equal" : "MISMATCH \(replica.problems.prefix(2))") |"
    return (line, cpu > 0 ? deliveries / cpu : 0, user / deliveries * 1e6, Double(batches * count * 20) / elapsed, ok)
}

// Issue #32's TLS figures (--tls, TLSBench.swift), each against plaintext in the same run.
if arguments.contains("--tls") {
    exit(try await TLSBench.run(quick: quick))
}
// The storage figures (--storage) and the crash test (--crash-test) are their own runs.
if arguments.contains("--storage") || arguments.contains("--crash-test") {
    exit(try await StorageBench.run(arguments: arguments, daemonPath: daemonPath, quick: quick))
}
// Lists on demand (--lists, ListsBench.swift): start time, RSS, cold subscribes.
if arguments.contains("--lists") {
    exit(try await ListsBench.run(arguments: arguments, daemonPath: daemonPath, quick: quick))
}
// The million-list start with the shipped config (--million-lists, MillionListsBench.swift; issue #33).
if arguments.contains("--million-lists") {
    exit(try await MillionListsBench.run(arguments: arguments, daemonPath: daemonPath))
}
// The slow-consumer soak (--slow-consumer-soak, SlowConsumerSoak.swift; issue #33).
if arguments.contains("--slow-consumer-soak") {
    let soakThread = try EventLoopThread()
    let code = try await SlowConsumerSoak.run(arguments: arguments, daemonPath: daemonPath, thread: soakThread)
    _ = soakThread.shutdown()
    exit(code)
}
// The loop-stall figures (--stall, StallBench.swift) are their own run too; --quick
// runs them at small sizes after the rest.
if arguments.contains("--stall") {
    exit(try await StallBench.run(arguments: arguments, quick: quick))
}

// `--compare-write-paths`: the daemon's two write paths in one run (issue #20), see
// docs/BENCHMARKS.md, "The daemon's write path: libuv vs io_uring".
if arguments.contains("--compare-write-paths") || arguments.contains("--compare-daemons") {
    exit(try await compareWritePaths())
}

say("# flowsync-server-bench\(quick ? " (quick)" : "")\n")
/// Daemon RSS per idle subscribed connection: `count` connections each send Hello and
/// Subscribe, receive Welcome and the empty Snapshot, then stay idle. The counts grow
/// in one daemon, so each row is measured from the previous one's RSS.
func idleMemory(daemon: DaemonProcess, counts: [Int]) async throws {
    say("| idle subscribed connections | daemon RSS before | after | per connection |")
    say("| --- | --- | --- | --- |")
    var held: [FrameCounter] = []
    for count in counts {
        try await Task.sleep(for: .milliseconds(500))
        let before = daemon.rssKiB
        let counters = await subscribers(count, port: daemon.port, list: "idle")
        try await Task.sleep(for: .milliseconds(500))
        let after = daemon.rssKiB
        let established = counters.filter { $0.frames >= 2 }.count
        held += counters
        say(
            "| \(established) | \(before) KiB | \(after) KiB | \(format(Double(after - before) * 1024 / Double(max(established, 1)))) bytes |"
        )
    }
    _ = held
}

// `--write-baseline`: the write call alone, libuv against io_uring (WriteBaseline.swift).
if arguments.contains("--write-baseline") {
    exit(try await WriteBaseline.run(arguments: arguments, quick: quick))
}

// `--idle N[,N…]`: only the idle-connection memory, for the given counts (issue #20's
// 4 KB target is measured at 19,960: the fd limit of 20,000 less a margin).
if let i = arguments.firstIndex(of: "--idle") {
    let counts = arguments[i + 1].split(separator: ",").compactMap { Int($0) }
    // Above the default of 10,000 connections; the fd limit (20,000 here) binds first.
    let daemon = try await startDaemon(configText: "[limits]\nmax_connections = 30000\n")
    say("# flowsync-server-bench --idle\n")
    do {
        try await idleMemory(daemon: daemon, counts: counts)
    } catch {
        FileHandle.standardError.write(Data("flowsync-server-bench: \(error)\n".utf8))
    }
    await daemon.terminate()
    _ = thread.shutdown()
    exit(0)
}

/// `--write-path libuv|io_uring|auto`: the daemon's `[server] write_path` for this run.
let writePathConfig = arguments.firstIndex(of: "--write-path").map {
    "[server]\nwrite_path = \"\(arguments[$0 + 1])\"\n"
}
let daemon = try await startDaemon(configText: writePathConfig)
// A thrown error must not leave the spawned daemon running.
do {
    let writer = try await TestClient.connect(port: daemon.port, on: thread, clientID: "writer")

    // MARK: Fan-out

    say("## Fan-out: one writer (closed loop: next mutation after the ack), one list\n")
    say("Each mutation inserts 10 rows and removes the 10 oldest (20 row changes per batch, ~60-byte JSON payloads).\n")
    say(
        "Daemon CPU is the daemon process's user + system time over the same interval (/proc, 10 ms ticks): deliveries per daemon CPU-second is the rate one fully used core would give, the figure issue #20's target (≥ 150 k/s on one core) is about, whatever else the machine runs.\n"
    )
    say(
        "| subscribers | batches | batches/s | frame deliveries/s | row changes delivered/s | p50 write→ack | daemon CPU | deliveries per daemon CPU-s | CPU per delivery | of which user | checked replica |"
    )
    say("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for count in quick ? [1, 20] : [1, 100, 1_000] {
        say(
            try await fanOutRow(
                daemon: daemon, writer: writer, count: count, list: "fan-\(count)", duration: quick ? 1.0 : 5.0
            ).line)
    }

    // MARK: Snapshot of a 100,000-row list

    say("\n## Snapshot of a large list\n")
    do {
        let rows = quick ? 10_000 : 100_000
        let list = "big"
        // Epoch 0 = "at head": the writer needs no subscription to know the version.
        var base = ListVersion(epoch: 0, version: 0)
        _ = await commit(
            writer, list: list, seq: 1_000_000, base: base,
            [.insertSections((0..<10).map { Section(id: "sec\($0)") }, at: 0)])!
        base = ListVersion(epoch: 0, version: 0)
        for chunk in 0..<(rows / 1_000) {
            let section = chunk % 10
            let batch = (0..<1_000).map { k -> Row in
                let n = chunk * 1_000 + k
                return Row(
                    id: "row-\(n)", kind: "contact",
                    text:
                        "{\"id\":\(n),\"name\":\"Person \(n)\",\"email\":\"person\(n)@example.com\",\"updated\":\"2026-11-22T04:00:00Z\"}"
                )
            }
            _ = await commit(
                writer, list: list, seq: UInt64(1_000_001 + chunk), base: base,
                [.insertRows(batch, in: .id("sec\(section)"), at: 0)])!
        }
        say("| subscriber | rows | snapshot frame bytes | subscribe → snapshot received |")
        say("| --- | --- | --- | --- |")
        for label in ["first at this version (encode + deflate)", "second at the same version (cached frame)"] {
            let (elapsed, bytes) = await timeFreshSnapshot(
                port: daemon.port, list: list, clientID: "snap", on: thread, timeout: 60)
            say("| \(label) | \(rows) | \(bytes) | \(format(elapsed * 1e3)) ms |")
        }
    }

    // MARK: Idle connections

    say("\n## Memory per idle connection\n")
    try await idleMemory(daemon: daemon, counts: [quick ? 200 : 5_000])

    writer.close()
} catch {
    await daemon.terminate()
    FileHandle.standardError.write(Data("flowsync-server-bench: \(error)\n".utf8))
    exit(1)
}
await daemon.terminate()
_ = thread.shutdown()
if quick {
    say("")
    // Against an embedded server (not the daemon process): small sizes, a smoke run.
    if try await StallBench.run(arguments: arguments, quick: true) != 0 { exit(1) }
} else {
    say("\n(Loop stalls: `flowsync-server-bench --stall`.)")
}
