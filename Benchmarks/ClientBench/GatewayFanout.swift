// flowsync-client-bench --gateway, part (b): fan-out to N subscribers through the
// gateway's WebSocket (`/v1/ws`, JSON) beside N native subscribers of the daemon, in the
// same run, on the same daemon, from the same SDK writer.
//
// The subscribers are lean on both sides, so the client side costs little: native ones are
// ``LeanSubscriber`` (counts frames by type, decodes none); WebSocket ones are
// ``LeanWebSocketSubscriber`` below (upgrade, one subscribe message, then counts text
// frames whose JSON starts with {"type":"diff"). Both live on one libuv loop thread.
// By default not browser-like in one respect: it does not offer permessage-deflate, so the
// gateway sends plain JSON. With `--ws-deflate` every WebSocket subscriber offers it as
// Chromium does (`Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits`) and
// checks that the 101 accepted it; the gateway then runs hummingbird-websocket's
// per-message-deflate extension on every socket. The subscriber does not inflate (that
// would add the client's inflate cost to the same 2 cores): a compressed frame (RSV1 set)
// cannot be read, so the first data frame is taken as the snapshot and every later one as
// a diff. That holds for this bench's subscribers, which only subscribe and never write:
// the gateway sends them a snapshot, then diffs (an error would also count as a diff; none
// was seen). Frames under the extension's `minFrameSizeToCompress` (256 bytes) go out
// uncompressed and are still told apart by their JSON prefix; the round's line reports how
// many data frames came compressed.
//
// 1. Latency: W writes one at a time; after each, wait until every subscriber holds it.
//    A subscriber's delivery time is when its frame arrived (nothing else is in flight),
//    so p50/p99 are over all (subscriber, write) deliveries: write call → delivery.
// 2. Throughput: writes back to back (each awaits its Ack) for D seconds, then until every
//    subscriber holds the last one (or 30 s): deliveries/s = diff frames received / time
//    from the first write to the last delivery.
import FlowSyncClient
import FlowSyncCore
import FlowSyncLoop
import FlowSyncTestSupport
import Foundation

/// A WebSocket subscriber that counts frames (see the file's comment). Loop-confined
/// state; the tally is behind a lock.
final class LeanWebSocketSubscriber: @unchecked Sendable {
    struct Tally {
        var diffs = 0
        var lastDiffAt: UInt64 = 0
        var snapshot = false
        var closed = false
        var other = 0
        /// Data frames that arrived with RSV1 set (compressed by permessage-deflate).
        var compressed = 0
    }

    let thread: EventLoopThread
    private var connection: TCPConnection?  // loop only
    private var buffer: [UInt8] = []  // loop only
    private var upgraded = false  // loop only
    private var sawData = false  // loop only: the first data frame (the snapshot) has arrived
    private let deflate: Bool
    private let tally = Locked(Tally())

    private init(thread: EventLoopThread, deflate: Bool) {
        self.thread = thread
        self.deflate = deflate
    }

    var current: Tally { tally.withLock { $0 } }

    /// - Parameter deflate: offer permessage-deflate as a browser does (see the file's comment).
    static func connect(
        port: Int, on thread: EventLoopThread, list: String, deflate: Bool = false
    ) async throws
        -> LeanWebSocketSubscriber
    {
        let subscriber = LeanWebSocketSubscriber(thread: thread, deflate: deflate)
        let result = Locked<Result<Void, UVError>?>(nil)
        // Chromium's offer, verbatim.
        let extensions = deflate ? "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n" : ""
        let request = Array(
            ("GET /v1/ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n" + extensions
                + "\r\n").utf8)
        let subscribe = maskedTextFrame(Array(#"{"type":"subscribe","list":"\#(list)"}"#.utf8))
        thread.loop.execute {
            TCPConnection.connect(loop: thread.loop, to: try! SocketAddress(host: "127.0.0.1", port: port)) { outcome in
                switch outcome {
                case .failure(let error):
                    result.withLock { $0 = .failure(error) }
                case .success(let tcp):
                    subscriber.connection = tcp
                    tcp.onRead = { bytes in subscriber.received(bytes, subscribe: subscribe) }
                    tcp.onEnd = { _ in subscriber.tally.withLock { $0.closed = true } }
                    tcp.onClose = { subscriber.tally.withLock { $0.closed = true } }
                    try? tcp.startReading()
                    _ = try? tcp.write([request])
                    result.withLock { $0 = .success(()) }
                }
            }
        }
        guard await eventually({ result.withLock { $0 } != nil }), let outcome = result.withLock({ $0 }) else {
            throw UVError(code: -1, operation: "connect timed out")
        }
        if case .failure(let error) = outcome { throw error as any Error }
        return subscriber
    }

    func close() {
        thread.loop.execute { [self] in connection?.close() }
    }

    static func maskedTextFrame(_ payload: [UInt8]) -> [UInt8] {
        precondition(payload.count < 126)
        let mask: [UInt8] = [1, 2, 3, 4]
        return [0x81, 0x80 | UInt8(payload.count)] + mask + payload.enumerated().map { $1 ^ mask[$0 % 4] }
    }

    private static let diffPrefix = Array(#"{"type":"diff""#.utf8)
    private static let snapshotPrefix = Array(#"{"type":"snapshot""#.utf8)

    /// Loop thread only.
    private func received(_ bytes: UnsafeRawBufferPointer, subscribe: [UInt8]) {
        let now = MonotonicClock.nanoseconds()
        buffer += bytes
        if !upgraded {
            guard
                let end = (0..<max(0, buffer.count - 3)).first(where: {
                    buffer[$0] == 13 && buffer[$0 + 1] == 10 && buffer[$0 + 2] == 13 && buffer[$0 + 3] == 10
                })
            else { return }
            precondition(buffer.starts(with: Array("HTTP/1.1 101".utf8)), "no upgrade")
            let head = String(decoding: buffer[..<end], as: UTF8.self).lowercased()
            let accepted = head.split(separator: "\r\n").contains {
                $0.hasPrefix("sec-websocket-extensions:") && $0.contains("permessage-deflate")
            }
            precondition(accepted == deflate, "permessage-deflate offered: \(deflate), accepted: \(accepted)")
            buffer.removeFirst(end + 4)
            upgraded = true
            _ = try? connection?.write([subscribe])
        }
        var diffs = 0, snapshot = false, other = 0, compressed = 0
        var offset = 0
        while buffer.count - offset >= 2 {
            let opcode = buffer[offset] & 0x0F
            let rsv1 = buffer[offset] & 0x40 != 0
            var length = Int(buffer[offset + 1] & 0x7F)
            var header = 2
            if length == 126 {
                guard buffer.count - offset >= 4 else { break }
                length = Int(buffer[offset + 2]) << 8 | Int(buffer[offset + 3])
                header = 4
            } else if length == 127 {
                guard buffer.count - offset >= 10 else { break }
                length = (0..<8).reduce(0) { $0 << 8 | Int(buffer[offset + 2 + $1]) }
                header = 10
            }
            guard buffer.count - offset >= header + length else { break }
            let payload = buffer[(offset + header)..<(offset + header + length)]
            if opcode == 1 && rsv1 {
                // Compressed: unreadable without inflating (see the file's comment).
                precondition(deflate, "RSV1 set without permessage-deflate")
                compressed += 1
                if sawData { diffs += 1 } else { snapshot = true }
                sawData = true
            } else if opcode == 1 && payload.starts(with: Self.diffPrefix) {
                diffs += 1
                sawData = true
            } else if opcode == 1 && payload.starts(with: Self.snapshotPrefix) {
                snapshot = true
                sawData = true
            } else if opcode == 9 {
                // A ping: answer with a masked pong carrying the same payload.
                let mask: [UInt8] = [5, 6, 7, 8]
                let pong =
                    [0x8A, 0x80 | UInt8(min(length, 125))] + mask
                    + payload.prefix(125).enumerated().map { $1 ^ mask[$0 % 4] }
                _ = try? connection?.write([pong])
            } else {
                other += 1
            }
            offset += header + length
        }
        buffer.removeFirst(offset)
        if diffs > 0 || snapshot || other > 0 {
            tally.withLock {
                $0.compressed += compressed
                $0.diffs += diffs
                if diffs > 0 { $0.lastDiffAt = now }
                $0.snapshot = $0.snapshot || snapshot
                $0.other += other
            }
        }
    }
}

enum GatewayFanout {
    struct Row {
        var subscribers = 0
        var writes = 0
        var p50 = 0.0, p99 = 0.0, max = 0.0  // µs, write call → delivery
        var frames = 0
        var expected = 0
        var seconds = 0.0
        var deliveriesPerSecond: Double { Double(frames) / seconds }

        func line(_ name: String) -> String {
            String(
                format:
                    "%@ %d subscribers: latency over %d writes: p50 %.0f µs p99 %.0f µs max %.0f µs; throughput: %d of %d diff frames in %.2f s = %.0f deliveries/s",
                name, subscribers, writes, p50, p99, max, frames, expected, seconds, deliveriesPerSecond)
        }
    }

    /// Counts of diffs per subscriber, and each one's last arrival (ns).
    typealias Probe = @Sendable () -> [(diffs: Int, lastAt: UInt64)]

    /// - Parameter deflate: the WebSocket subscribers offer permessage-deflate (`--ws-deflate`).
    static func run(daemonPort: Int, gatewayPort: Int, quick: Bool, deflate: Bool = false) async throws {
        let count = quick ? 100 : 1_000
        let rounds = quick ? 1 : 2
        let thread = try EventLoopThread()
        var native: [Row] = [], web: [Row] = []
        for round in 1...rounds {
            // Alternate which goes first, so a drift of the machine hits both.
            for kind in round % 2 == 1 ? ["native", "ws"] : ["ws", "native"] {
                let list = "fan-\(kind)-\(round)"
                let writer = try client(port: daemonPort)
                let director = writer.director(list)
                try await director.waitUntilLoaded()
                try await director.add(section: NewSection(id: "s")).committed()
                let probe: Probe
                let closeAll: () -> Void
                var compressedFrames: () -> Int = { 0 }
                var closedSockets: () -> Int = { 0 }
                if kind == "native" {
                    var subscribers: [LeanSubscriber] = []
                    for i in 0..<count {
                        subscribers.append(
                            try await LeanSubscriber.connect(
                                port: daemonPort, on: thread, list: list, clientID: "lean-\(round)-\(i)"))
                    }
                    let all = subscribers
                    probe = { all.map { ($0.current.diffs, $0.current.lastReceivedAt) } }
                    closeAll = { for s in all { s.close() } }
                    guard await eventually(timeout: 60, { all.allSatisfy { !$0.current.snapshots.isEmpty } }) else {
                        fatalError("native subscribers got no snapshot")
                    }
                } else {
                    var subscribers: [LeanWebSocketSubscriber] = []
                    for _ in 0..<count {
                        subscribers.append(
                            try await LeanWebSocketSubscriber.connect(
                                port: gatewayPort, on: thread, list: list, deflate: deflate))
                    }
                    let all = subscribers
                    probe = { all.map { ($0.current.diffs, $0.current.lastDiffAt) } }
                    closeAll = { for s in all { s.close() } }
                    compressedFrames = { all.map(\.current.compressed).reduce(0, +) }
                    closedSockets = { all.filter(\.current.closed).count }
                    guard await eventually(timeout: 60, { all.allSatisfy { $0.current.snapshot } }) else {
                        fatalError(
                            "WebSocket subscribers got no snapshot: \(all.filter { !$0.current.snapshot }.count) missing"
                        )
                    }
                }
                let row = try await measure(
                    director: director, probe: probe, count: count, quick: quick, tag: "\(kind)-\(round)")
                print(
                    "  round \(round) "
                        + row.line(kind == "native" ? "native   " : deflate ? "WS+deflate" : "WebSocket"))
                if kind == "ws" {
                    // A socket the gateway closed (4008 for a slow member, GATEWAY.md) before
                    // the round ended explains a round with fewer frames than expected.
                    print(
                        "    (\(closedSockets()) of \(count) sockets closed by the gateway during the round"
                            + (deflate ? "; \(compressedFrames()) data frames arrived compressed, RSV1 set)" : ")"))
                }
                if kind == "native" { native.append(row) } else { web.append(row) }
                closeAll()
                writer.close()
                try await Task.sleep(for: .milliseconds(500))
            }
        }
        let n = native.map(\.deliveriesPerSecond).reduce(0, +) / Double(native.count)
        let w = web.map(\.deliveriesPerSecond).reduce(0, +) / Double(web.count)
        print(String(format: "  WebSocket/native deliveries/s (means of rounds): %.0f / %.0f = %.2f×", w, n, w / n))
    }

    static func measure(director: ListDirector, probe: Probe, count: Int, quick: Bool, tag: String) async throws -> Row
    {
        var row = Row()
        row.subscribers = count
        // 1. Latency, one write at a time.
        let writes = quick ? 20 : 100
        var latencies: [Double] = []
        var base = probe().map(\.diffs)
        for i in 0..<writes {
            let start = MonotonicClock.nanoseconds()
            _ = try await director.section(at: 0)!.add(model: Item(id: "l\(tag)-\(i)", title: "fan"), at: 0).committed()
            let target = base
            guard await eventually(timeout: 30, { zip(probe(), target).allSatisfy { $0.diffs > $1 } }) else {
                print("  \(tag): write \(i) not delivered to all within 30 s")
                break
            }
            let now = probe()
            for s in now { latencies.append(Double(s.lastAt &- start) / 1000) }
            base = now.map(\.diffs)
        }
        row.writes = writes
        row.p50 = percentile(latencies, 0.5)
        row.p99 = percentile(latencies, 0.99)
        row.max = latencies.max() ?? 0
        // 2. Throughput, writes back to back.
        let before = probe().map(\.diffs).reduce(0, +)
        let duration: UInt64 = (quick ? 1 : 3) * 1_000_000_000
        let start = MonotonicClock.nanoseconds()
        var written = 0
        while MonotonicClock.nanoseconds() - start < duration {
            _ = try await director.section(at: 0)!.add(model: Item(id: "t\(tag)-\(written)", title: "fan"), at: 0)
                .committed()
            written += 1
        }
        // Every write is its own batch here (one in flight), so each subscriber should
        // receive `written` diffs, unless the daemon coalesced some for a lagging one.
        let target = base.map { $0 + written }
        _ = await eventually(timeout: 30, { zip(probe(), target).allSatisfy { $0.diffs >= $1 } })
        let after = probe()
        let last = after.map(\.lastAt).max() ?? start
        row.frames = after.map(\.diffs).reduce(0, +) - before
        row.expected = written * count
        row.seconds = Double(last &- start) / 1e9
        return row
    }
}
