import FlowSyncLoop

/// A minimal HTTP/1.1 endpoint on the event loop that answers `GET /metrics` with the
/// text `body()` produces (the Prometheus exposition), and 404/405/431 otherwise.
///
/// Deliberately tiny and strict: one request per connection (`Connection: close`), a
/// request head of at most 8 KiB, 5 s to send it. It listens on its own admin address
/// (default 127.0.0.1:7401), never on the clients' port. Loop-confined.
public final class MetricsEndpoint {
    private let listener: TCPListener
    private let body: () -> [UInt8]
    private var open: [ObjectIdentifier: (connection: TCPConnection, deadline: UInt64)] = [:]
    private let sweep: LoopTimer
    private let loop: EventLoop

    /// The largest request head accepted.
    public static let maxRequestBytes = 8 * 1024
    /// Time allowed to send the request head, in ms.
    public static let requestTimeout: UInt64 = 5_000

    public init(loop: EventLoop, address: SocketAddress, body: @escaping () -> [UInt8]) throws(UVError) {
        self.loop = loop
        self.body = body
        listener = try TCPListener(loop: loop, address: address, backlog: 64)
        sweep = LoopTimer(loop: loop)
        listener.onConnection = { [weak self] connection in self?.accept(connection) }
        sweep.start(after: 1_000, repeat: 1_000) { [weak self] in self?.expire() }
        sweep.unref()
    }

    /// The bound port.
    public var port: Int { listener.port }

    private func accept(_ connection: TCPConnection) {
        let key = ObjectIdentifier(connection)
        open[key] = (connection, loop.now + Self.requestTimeout)
        var head: [UInt8] = []
        connection.onRead = { [weak self, weak connection] bytes in
            guard let self, let connection else { return }
            head.append(contentsOf: bytes)
            if let end = Self.endOfHead(head) {
                respond(to: Array(head[..<end]), on: connection)
            } else if head.count > Self.maxRequestBytes {
                reply(431, "Request Header Fields Too Large", [], on: connection)
            }
        }
        connection.onEnd = { [weak self, weak connection] _ in
            guard let connection else { return }
            self?.open[ObjectIdentifier(connection)] = nil
            connection.close()
        }
        connection.onClose = { [weak self] in self?.open[key] = nil }
        do { try connection.startReading() } catch { connection.close() }
    }

    private static func endOfHead(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for i in 0...(bytes.count - 4)
        where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 {
            return i
        }
        return nil
    }

    private func respond(to head: [UInt8], on connection: TCPConnection) {
        let requestLine = String(decoding: head.prefix { $0 != 13 }, as: UTF8.self).split(separator: " ")
        guard requestLine.count == 3, requestLine[2].hasPrefix("HTTP/1.") else {
            return reply(400, "Bad Request", [], on: connection)
        }
        guard requestLine[0] == "GET" || requestLine[0] == "HEAD" else {
            return reply(405, "Method Not Allowed", [], on: connection)
        }
        let path = requestLine[1].split(separator: "?", maxSplits: 1).first.map(String.init) ?? ""
        guard path == "/metrics" else { return reply(404, "Not Found", [], on: connection) }
        let payload = body()
        reply(
            200, "OK", requestLine[0] == "HEAD" ? [] : payload, length: payload.count,
            contentType: "text/plain; version=0.0.4; charset=utf-8", on: connection)
    }

    private func reply(
        _ status: Int, _ reason: String, _ payload: [UInt8], length: Int? = nil,
        contentType: String = "text/plain; charset=utf-8", on connection: TCPConnection
    ) {
        connection.onRead = nil
        let head =
            "HTTP/1.1 \(status) \(reason)\r\nContent-Type: \(contentType)\r\nContent-Length: \(length ?? payload.count)\r\nConnection: close\r\n\r\n"
        _ = try? connection.write([Array(head.utf8), payload])
        connection.shutdownAndClose()
    }

    private func expire() {
        let now = loop.now
        for (key, entry) in open where now >= entry.deadline {
            open[key] = nil
            entry.connection.close()
        }
    }

    /// Stops listening and closes open requests.
    public func close() {
        listener.close()
        sweep.close()
        for entry in open.values { entry.connection.close() }
        open = [:]
    }
}
