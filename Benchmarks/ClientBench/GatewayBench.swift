// flowsync-client-bench --gateway: the gateway's figures beside the native protocol's,
// in the same process and the same run (docs/BENCHMARKS.md, "Gateway").
//
//   swift build -c release --product flowsync-client-bench
//   .build/release/flowsync-client-bench --gateway [--quick] [--parts abc] [--ws-deflate]
//   (`--ws-deflate`: part (b)'s WebSocket subscribers offer permessage-deflate like a browser)
//
// (a) HTTP write: POST /v1/lists/{list}/mutations over keep-alive connections (one
//     request in flight per connection), requests/s and p50/p99 from the request's first
//     byte to the answer's last, un-keyed (a pooled daemon link) and with a fresh
//     Idempotency-Key each (a link of its own per request); beside the SDK's write → Ack
//     (FlowSyncClient, one write in flight per client), on the same daemon.
//     Rounds alternate SDK, HTTP, HTTP keyed, so a drift of the shared machine hits all.
//
// The daemon (EmbeddedServer: the daemon's Server on its own libuv loop thread), the
// gateway (Hummingbird on NIO's singleton group, one thread per core) and the clients
// share one process and the machine's cores.
import Dispatch
import FlowSyncClient
import FlowSyncCore
import FlowSyncGateway
import FlowSyncTestSupport
import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#endif

enum GatewayBench {
    struct Figure {
        var requests = 0
        var seconds = 0.0
        var latenciesMicros: [Double] = []

        var perSecond: Double { Double(requests) / seconds }
        func line(_ name: String) -> String {
            String(
                format: "%@: %d requests in %.2f s = %.0f/s; p50 %.0f µs p99 %.0f µs max %.0f µs", name, requests,
                seconds, perSecond, percentile(latenciesMicros, 0.5), percentile(latenciesMicros, 0.99),
                latenciesMicros.max() ?? 0)
        }

        mutating func add(_ other: Figure) {
            requests += other.requests
            seconds += other.seconds
            latenciesMicros += other.latenciesMicros
        }
    }

    static func run(server: EmbeddedServer, quick: Bool) async throws {
        var logger = Logger(label: "gateway-bench")
        logger.logLevel = .critical
        let gateway = try Gateway(
            configuration: GatewayConfiguration(
                host: "127.0.0.1", port: 0, endpoints: [Endpoint(host: "127.0.0.1", port: server.port)]),
            logger: logger)
        let (ports, portSink) = AsyncStream<Int>.makeStream()
        let serving = Task { try await gateway.run { portSink.yield($0) } }
        var portIterator = ports.makeAsyncIterator()
        guard let port = await portIterator.next() else { fatalError("the gateway did not start") }
        print(
            "flowsync-client-bench --gateway\(quick ? " (quick)" : ""): gateway on 127.0.0.1:\(port), daemon on \(server.port)"
        )

        let parts = CommandLine.arguments.drop { $0 != "--parts" }.dropFirst().first ?? "abc"
        let rounds = quick ? 1 : 3
        for concurrency in parts.contains("a") ? [1, 16] : [] {
            let perClient = (quick ? 200 : 2_000) / concurrency
            var sdk = Figure()
            var http = Figure()
            var keyed = Figure()
            // A warm-up of each, not counted.
            _ = try await sdkWrites(
                port: server.port, list: "warm-sdk-\(concurrency)", clients: concurrency, writes: 20)
            _ = try await httpWrites(
                port: port, list: "warm-http-\(concurrency)", clients: concurrency, writes: 20, keyed: false)
            for round in 0..<rounds {
                sdk.add(
                    try await sdkWrites(
                        port: server.port, list: "sdk-\(concurrency)-\(round)", clients: concurrency, writes: perClient)
                )
                http.add(
                    try await httpWrites(
                        port: port, list: "http-\(concurrency)-\(round)", clients: concurrency, writes: perClient,
                        keyed: false))
                keyed.add(
                    try await httpWrites(
                        port: port, list: "keyed-\(concurrency)-\(round)", clients: concurrency, writes: perClient,
                        keyed: true))
            }
            print("(a) write, \(concurrency) in flight (\(rounds) rounds of \(perClient * concurrency) writes each):")
            print("  " + sdk.line("SDK write → Ack        "))
            print("  " + http.line("HTTP POST, keep-alive  "))
            print("  " + keyed.line("HTTP POST + Idem.-Key  "))
            print(
                String(
                    format: "  HTTP/SDK throughput %.2f×, keyed/SDK %.2f×", http.perSecond / sdk.perSecond,
                    keyed.perSecond / sdk.perSecond))
        }
        if parts.contains("b") {
            print("(b) fan-out through the WebSocket beside native subscribers (GatewayFanout.swift):")
            try await GatewayFanout.run(
                daemonPort: server.port, gatewayPort: port, quick: quick,
                deflate: CommandLine.arguments.contains("--ws-deflate"))
        }
        serving.cancel()
        _ = try? await serving.value
        if parts.contains("c") {
            try await GatewayWebhookBench.run(server: server, quick: quick)
        }
    }

    // MARK: The SDK

    static func sdkWrites(port: Int, list name: String, clients: Int, writes: Int) async throws -> Figure {
        var directors: [(FlowSyncClient, ListDirector)] = []
        for _ in 0..<clients {
            let writer = try client(port: port)
            let list = writer.director(name)
            try await list.waitUntilLoaded()
            directors.append((writer, list))
        }
        try await directors[0].1.add(section: NewSection(id: "s")).committed()
        for (_, list) in directors.dropFirst() {
            while list.numberOfSections == 0 { try await Task.sleep(for: .milliseconds(1)) }
        }
        let start = now()
        let latencies = try await withThrowingTaskGroup(of: [Double].self) { group in
            for (c, (_, list)) in directors.enumerated() {
                group.addTask {
                    var latencies: [Double] = []
                    latencies.reserveCapacity(writes)
                    for i in 0..<writes {
                        let t = now()
                        _ = try await list.section(at: 0)!.add(model: Item(id: "c\(c)-\(i)", title: "acked"), at: 0)
                            .committed()
                        latencies.append(Double(now() - t) / 1000)
                    }
                    return latencies
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        let seconds = Double(now() - start) / 1e9
        for (writer, _) in directors { writer.close() }
        return Figure(requests: latencies.count, seconds: seconds, latenciesMicros: latencies)
    }

    // MARK: HTTP (blocking sockets on threads of their own: never a cooperative thread)

    static func httpWrites(port: Int, list: String, clients: Int, writes: Int, keyed: Bool) async throws -> Figure {
        let setup = try HTTPConnection(port: port)
        let seeded = try setup.request(
            post: "/v1/lists/\(list)/mutations",
            body: #"{"operations":[{"op":"setSections","sections":[{"id":"s"}]}]}"#, key: nil)
        precondition(seeded == 200, "seeding \(list): HTTP \(seeded)")
        setup.close()
        let results = Locked<[[Double]]>([])
        let start = now()
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let remaining = Locked(clients)
            for c in 0..<clients {
                let thread = Thread {
                    var latencies: [Double] = []
                    latencies.reserveCapacity(writes)
                    do {
                        let connection = try HTTPConnection(port: port)
                        for i in 0..<writes {
                            let body =
                                #"{"operations":[{"op":"insertRows","section":"s","at":0,"rows":[{"id":"c\#(c)-\#(i)","kind":"item","payload":{"title":"acked"}}]}]}"#
                            let t = now()
                            let status = try connection.request(
                                post: "/v1/lists/\(list)/mutations", body: body,
                                key: keyed ? "bench-\(list)-\(c)-\(i)" : nil)
                            latencies.append(Double(now() - t) / 1000)
                            precondition(status == 200, "HTTP \(status)")
                        }
                        connection.close()
                    } catch {
                        fatalError("HTTP client: \(error)")
                    }
                    results.withLock { $0.append(latencies) }
                    let last = remaining.withLock { count -> Bool in
                        count -= 1
                        return count == 0
                    }
                    if last { done.resume() }
                }
                thread.start()
            }
        }
        let seconds = Double(now() - start) / 1e9
        let latencies = results.withLock { $0.flatMap { $0 } }
        return Figure(requests: latencies.count, seconds: seconds, latenciesMicros: latencies)
    }
}

/// A lock around a value (the bench's own; the gateway's is internal).
final class Locked<Value>: @unchecked Sendable {
    private var value: Value
    private let lock = NSLock()
    init(_ value: Value) { self.value = value }
    func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

/// One keep-alive HTTP/1.1 connection on a blocking socket: a request, then its whole
/// answer (Content-Length bodies only: what the gateway sends for a POST).
final class HTTPConnection {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    private let fd: Int32
    private var buffer: [UInt8] = []

    init(port: Int) throws {
        fd = try LoopbackSocket.connect(port: port, noDelay: true)
    }

    func close() { _ = Glibc.close(fd) }

    /// Sends one POST and reads its answer; returns the status.
    func request(post path: String, body: String, key: String?) throws -> Int {
        var head = "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        if let key { head += "Idempotency-Key: \(key)\r\n" }
        head += "Content-Length: \(body.utf8.count)\r\n\r\n"
        let bytes = Array((head + body).utf8)
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw Failure(description: "send: \(errno)") }
            sent += n
        }
        // Head, then Content-Length bytes.
        while true {
            if let end = headEnd() {
                let headText = String(decoding: buffer[..<end], as: UTF8.self)
                let lines = headText.components(separatedBy: "\r\n")
                let status = Int(lines[0].split(separator: " ")[1]) ?? 0
                var length = 0
                for line in lines.dropFirst() where line.lowercased().hasPrefix("content-length:") {
                    length = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) ?? 0
                }
                while buffer.count < end + 4 + length { try fill() }
                buffer.removeFirst(end + 4 + length)
                return status
            }
            try fill()
        }
    }

    private func headEnd() -> Int? {
        guard buffer.count >= 4 else { return nil }
        for i in 0...(buffer.count - 4)
        where buffer[i] == 13 && buffer[i + 1] == 10 && buffer[i + 2] == 13 && buffer[i + 3] == 10 {
            return i
        }
        return nil
    }

    private func fill() throws {
        var chunk = [UInt8](repeating: 0, count: 16_384)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { throw Failure(description: "recv: \(n) errno \(errno)") }
        buffer += chunk[..<n]
    }
}
