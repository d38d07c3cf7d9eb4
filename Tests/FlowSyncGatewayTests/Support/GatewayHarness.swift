import FlowSyncClient
import FlowSyncGatewayCore
import FlowSyncServer
import FlowSyncTestSupport
import Foundation
import Logging
import NIOCore
import NIOPosix

@testable import FlowSyncGateway

/// A real daemon (``EmbeddedServer``: the daemon's `Server` on its own libuv loop, on
/// 127.0.0.1 port 0), or a cluster's `flowsyncd` nodes, with a real gateway in front of
/// it, also on port 0.
final class GatewayHarness: Sendable {
    let port: Int
    /// The gateway itself (its gauges).
    let gateway: Gateway
    private let task: Task<Void, any Error>

    /// Starts a gateway in front of `server`.
    convenience init(server: EmbeddedServer, configure: (inout GatewayConfiguration) -> Void = { _ in }) async throws {
        try await self.init(endpoints: [Endpoint(host: "127.0.0.1", port: server.port)], configure: configure)
    }

    /// Starts a gateway in front of the daemons at `endpoints` (a cluster's nodes).
    init(endpoints: [Endpoint], configure: (inout GatewayConfiguration) -> Void = { _ in }) async throws {
        var configuration = GatewayConfiguration(host: "127.0.0.1", port: 0, endpoints: endpoints)
        configure(&configuration)
        var logger = Logger(label: "gateway-test")
        logger.logLevel = .critical  // Hummingbird logs its own cancellation at stop as an error
        let gateway = try Gateway(configuration: configuration, logger: logger)
        self.gateway = gateway
        let listening = OneShot<Int>()
        task = Task { try await gateway.run { port in listening.succeed(port) } }
        let timer = MultiThreadedEventLoopGroup.singleton.next().scheduleTask(in: .seconds(20)) {
            listening.fail(CancellationError())
        }
        defer { timer.cancel() }
        self.port = try await listening.value
    }

    /// Stops the gateway (not the daemon) and waits until it has.
    func stop() async {
        task.cancel()
        _ = try? await task.value
    }

    /// One request on a fresh connection (`Connection: close`), read to the end.
    func request(
        _ method: String, _ path: String, headers: [String: String] = [:], body: String? = nil
    ) async throws -> HTTPAnswer {
        try await RawConnection.request(port: port, method, path, headers: headers, body: body)
    }

    func json(
        _ method: String, _ path: String, headers: [String: String] = [:], body: String? = nil
    ) async throws -> (HTTPAnswer, [String: Any]) {
        let answer = try await request(method, path, headers: headers, body: body)
        let object = (try? JSONSerialization.jsonObject(with: Data(answer.body))) as? [String: Any] ?? [:]
        return (answer, object)
    }
}

/// A parsed HTTP/1.1 response.
struct HTTPAnswer: Sendable, CustomStringConvertible {
    var status: Int
    var headers: [String: String]  // lower-cased names
    var body: [UInt8]

    var text: String { String(decoding: body, as: UTF8.self) }
    var description: String { "\(status) \(headers) \(text.prefix(400))" }

    /// Parses one response from `bytes` (Content-Length or chunked; else to the end).
    static func parse(_ bytes: [UInt8]) -> HTTPAnswer? {
        let crlf2: [UInt8] = [13, 10, 13, 10]
        guard let end = (0..<max(0, bytes.count - 3)).first(where: { Array(bytes[$0..<$0 + 4]) == crlf2 }) else {
            return nil
        }
        let head = String(decoding: bytes[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = head[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { return nil }
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
        }
        var body = Array(bytes[(end + 4)...])
        if let length = headers["content-length"].flatMap({ Int($0) }) {
            guard body.count >= length else { return nil }
            body = Array(body[..<length])
        } else if headers["transfer-encoding"]?.lowercased() == "chunked" {
            body = dechunk(body)
        }
        return HTTPAnswer(status: status, headers: headers, body: body)
    }

    static func dechunk(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var i = 0
        while i < bytes.count {
            guard let lineEnd = (i..<bytes.count - 1).first(where: { bytes[$0] == 13 && bytes[$0 + 1] == 10 }) else {
                break
            }
            let sizeText = String(decoding: bytes[i..<lineEnd], as: UTF8.self).split(separator: ";")[0]
            guard let size = Int(sizeText, radix: 16) else { break }
            if size == 0 { break }
            let start = lineEnd + 2
            guard start + size <= bytes.count else {
                out += bytes[start...]
                break
            }
            out += bytes[start..<start + size]
            i = start + size + 2
        }
        return out
    }
}

/// A raw TCP connection to the gateway: bytes in, bytes out, so tests can send what no
/// HTTP client would (a dripped head, a half body, garbage) and read streams as they come.
final class RawConnection: @unchecked Sendable {
    private let channel: any Channel
    private let collector: Collector

    private final class Collector: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = ByteBuffer
        let state = Locked((bytes: [UInt8](), closed: false))

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var buffer = unwrapInboundIn(data)
            let bytes = buffer.readBytes(length: buffer.readableBytes) ?? []
            state.withLock { $0.bytes += bytes }
        }

        func channelInactive(context: ChannelHandlerContext) {
            state.withLock { $0.closed = true }
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)
        }
    }

    private init(channel: any Channel, collector: Collector) {
        self.channel = channel
        self.collector = collector
    }

    /// Connects; `firstBytes`, if given, are written on the event loop the moment the
    /// connection is up. Why: a test's task may resume seconds after the connect when
    /// CPU-bound tests hold Swift's two cooperative threads (a soak run saw two requests
    /// fail this way, "I/O on closed channel"): the gateway's header timeout (10 s) runs
    /// from the accept, and a request that waits for the test's task to send it can miss
    /// it through no fault of the gateway.
    static func connect(port: Int, firstBytes: String? = nil) async throws -> RawConnection {
        let collector = Collector()
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.seconds(5))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(collector) }
            }
            .connect(host: "127.0.0.1", port: port)
            .flatMap { channel in
                guard let firstBytes else { return channel.eventLoop.makeSucceededFuture(channel) }
                return channel.writeAndFlush(channel.allocator.buffer(string: firstBytes)).map { channel }
            }
            .get()
        return RawConnection(channel: channel, collector: collector)
    }

    static func request(
        port: Int, _ method: String, _ path: String, headers: [String: String] = [:], body: String? = nil
    ) async throws -> HTTPAnswer {
        let connection = try await connect(
            port: port, firstBytes: requestText(method, path, headers: headers, body: body))
        defer { connection.close() }
        guard
            await connection.waitUntil(
                timeout: .seconds(30), { $0.closed || HTTPAnswer.parse($0.bytes) != nil && !isStreaming($0.bytes) }),
            let answer = HTTPAnswer.parse(connection.bytes)
        else {
            throw GatewayTestError(
                "no complete answer to \(method) \(path): \(String(decoding: connection.bytes, as: UTF8.self).prefix(300))"
            )
        }
        return answer
    }

    static func isStreaming(_ bytes: [UInt8]) -> Bool {
        guard let answer = HTTPAnswer.parse(bytes) else { return true }
        return answer.headers["content-length"] == nil && answer.headers["transfer-encoding"] == "chunked"
            && !String(decoding: bytes, as: UTF8.self).hasSuffix("0\r\n\r\n")
    }

    static func requestText(
        _ method: String, _ path: String, headers: [String: String] = [:], body: String? = nil
    ) -> String {
        var text = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        var headers = headers
        if let body {
            headers["Content-Length"] = headers["Content-Length"] ?? "\(body.utf8.count)"
            headers["Content-Type"] = headers["Content-Type"] ?? "application/json"
        }
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { text += "\(name): \(value)\r\n" }
        return text + "\r\n" + (body ?? "")
    }

    func send(_ text: String) async throws {
        try await channel.writeAndFlush(channel.allocator.buffer(string: text)).get()
    }

    func send(bytes: [UInt8]) async throws {
        try await channel.writeAndFlush(channel.allocator.buffer(bytes: bytes)).get()
    }

    var bytes: [UInt8] { collector.state.withLock { $0.bytes } }
    var text: String { String(decoding: bytes, as: UTF8.self) }
    var isClosed: Bool { collector.state.withLock { $0.closed } }

    /// Polls every 5 ms until `condition` holds or `timeout` passes; never blocks a thread.
    func waitUntil(timeout: Duration, _ condition: @escaping ((bytes: [UInt8], closed: Bool)) -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if collector.state.withLock({ condition($0) }) { return true }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return collector.state.withLock { condition($0) }
    }

    func close() { channel.close(promise: nil) }
}

struct GatewayTestError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
