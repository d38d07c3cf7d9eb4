// flowsync-client-bench --gateway, part (c): webhook delivery to one receiver, beside a
// native subscriber of the same list in the same run.
//
// A second gateway with one hook on list "hook" posts to a receiver in this process (a
// blocking HTTP/1.1 server on threads of its own that answers 200 at once and notes when
// each POST's body was complete and its Idempotency-Key, EPOCH:VERSION).
// 1. Latency: W writes one at a time (SDK, awaiting each Ack); for each, the time from
//    the write call to the receiver holding its version, and to a native LeanSubscriber's
//    Diff; p50/p99 over the writes.
// 2. Throughput: writes back to back for D seconds; batches/s = versions the receiver got
//    / time from the first write to the last delivery. The hook may coalesce a backlog
//    into catch-up deliveries: both the POSTs and the versions are counted.
import FlowSyncClient
import FlowSyncCore
import FlowSyncGateway
import FlowSyncLoop
import FlowSyncTestSupport
import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// The receiver: version → arrival (ns), and the POST count.
final class BenchWebhookReceiver: @unchecked Sendable {
    let port: Int
    private let listener: Int32
    let arrivals = Locked<(posts: Int, versions: [UInt64: UInt64], highest: UInt64)>((0, [:], 0))

    init() throws {
        let (fd, port) = try LoopbackSocket.listen()
        self.port = port
        listener = fd
        LoopbackSocket.acceptOnThreads(fd) { [self] in serve($0) }
    }

    private func serve(_ fd: Int32) {
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let ok = Array("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n".utf8)
        while true {
            // One request: head, then Content-Length bytes.
            var headEnd: Int?
            var length = 0
            var key = ""
            while true {
                if headEnd == nil, buffer.count >= 4,
                    let end = (0...(buffer.count - 4)).first(where: {
                        buffer[$0] == 13 && buffer[$0 + 1] == 10 && buffer[$0 + 2] == 13 && buffer[$0 + 3] == 10
                    })
                {
                    headEnd = end
                    for line in String(decoding: buffer[..<end], as: UTF8.self).components(separatedBy: "\r\n") {
                        let lower = line.lowercased()
                        if lower.hasPrefix("content-length:") {
                            length = Int(line.dropFirst(15).trimmingCharacters(in: .whitespaces)) ?? 0
                        } else if lower.hasPrefix("idempotency-key:") {
                            key = line.dropFirst(16).trimmingCharacters(in: .whitespaces)
                        }
                    }
                }
                if let end = headEnd, buffer.count >= end + 4 + length { break }
                let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                guard n > 0 else {
                    _ = close(fd)
                    return
                }
                buffer += chunk[..<n]
            }
            let now = MonotonicClock.nanoseconds()
            buffer.removeFirst(headEnd! + 4 + length)
            let version = UInt64(key.split(separator: ":").last ?? "") ?? 0
            arrivals.withLock { state in
                state.posts += 1
                if version > state.highest {
                    // A catch-up delivery covers every version up to its own.
                    for v in (state.highest + 1)...version where state.versions[v] == nil { state.versions[v] = now }
                    state.highest = version
                }
            }
            _ = ok.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }
    }
}

enum GatewayWebhookBench {
    static func run(server: EmbeddedServer, quick: Bool) async throws {
        let receiver = try BenchWebhookReceiver()
        let list = "hook"
        let writer = try client(port: server.port)
        let director = writer.director(list)
        try await director.waitUntilLoaded()
        try await director.add(section: NewSection(id: "s")).committed()
        let thread = try EventLoopThread()
        let native = try await LeanSubscriber.connect(
            port: server.port, on: thread, list: list, clientID: "hook-native")

        var logger = Logger(label: "gateway-bench-hooks")
        logger.logLevel = .critical
        let gateway = try Gateway(
            configuration: GatewayConfiguration(
                host: "127.0.0.1", port: 0, endpoints: [Endpoint(host: "127.0.0.1", port: server.port)],
                webhooks: [
                    WebhookConfiguration(
                        name: "bench", url: URL(string: "http://127.0.0.1:\(receiver.port)/hook")!, lists: [list],
                        secret: String(repeating: "k", count: 32))
                ]),
            logger: logger)
        let serving = Task { try await gateway.run() }
        // The hook's first delivery (a snapshot: no cursor yet).
        guard await eventually(timeout: 30, { receiver.arrivals.withLock { $0.posts } > 0 }) else {
            fatalError("the webhook delivered nothing")
        }
        print("(c) webhook delivery to one receiver (GatewayWebhookBench.swift), beside a native subscriber:")

        // 1. Latency.
        let writes = quick ? 20 : 200
        var hook: [Double] = [], diff: [Double] = [], fromAck: [Double] = []
        for i in 0..<writes {
            let diffsBefore = native.current.diffs
            let start = MonotonicClock.nanoseconds()
            let ticket = try director.section(at: 0)!.add(model: Item(id: "h\(i)", title: "hook"), at: 0)
            let committed = try await ticket.committed()
            let acked = MonotonicClock.nanoseconds()
            let version = committed.version
            guard await eventually(timeout: 30, { receiver.arrivals.withLock { $0.versions[version] } != nil }),
                await eventually(timeout: 30, { native.current.diffs > diffsBefore })
            else {
                print("  write \(i) (version \(version)) not delivered within 30 s")
                break
            }
            let arrived = receiver.arrivals.withLock { $0.versions[version]! }
            hook.append(Double(arrived &- start) / 1000)
            fromAck.append((Double(arrived) - Double(acked)) / 1000)
            diff.append(Double(native.current.lastReceivedAt &- start) / 1000)
        }
        func show(_ name: String, _ values: [Double]) {
            print(
                String(
                    format: "  %@: p50 %.0f µs p99 %.0f µs max %.0f µs (%d writes)", name, percentile(values, 0.5),
                    percentile(values, 0.99), values.max() ?? 0, values.count))
        }
        show("write call → webhook at the receiver  ", hook)
        show("write's Ack → webhook at the receiver  ", fromAck)
        show("write call → native subscriber's Diff  ", diff)

        // 2. Throughput.
        let (postsBefore, highestBefore) = receiver.arrivals.withLock { ($0.posts, $0.highest) }
        let duration: UInt64 = (quick ? 1 : 3) * 1_000_000_000
        let start = MonotonicClock.nanoseconds()
        var last: UInt64 = highestBefore
        var written = 0
        while MonotonicClock.nanoseconds() - start < duration {
            last = try await director.section(at: 0)!.add(model: Item(id: "ht\(written)", title: "hook"), at: 0)
                .committed().version
            written += 1
        }
        let writeSeconds = Double(MonotonicClock.nanoseconds() - start) / 1e9
        let target = last
        _ = await eventually(timeout: 60, { receiver.arrivals.withLock { $0.highest } >= target })
        let (posts, highest, lastArrival) = receiver.arrivals.withLock {
            ($0.posts, $0.highest, $0.versions[$0.highest] ?? 0)
        }
        let seconds = Double(lastArrival &- start) / 1e9
        print(
            String(
                format:
                    "  throughput: %d batches written in %.2f s (%.0f/s); the receiver got versions %d…%d in %d POSTs, the last %.2f s after the first write: %.0f batches/s, %.0f POSTs/s",
                written, writeSeconds, Double(written) / writeSeconds, highestBefore + 1, highest, posts - postsBefore,
                seconds, Double(highest - highestBefore) / seconds, Double(posts - postsBefore) / seconds))
        native.close()
        serving.cancel()
        _ = try? await serving.value
        writer.close()
    }
}
