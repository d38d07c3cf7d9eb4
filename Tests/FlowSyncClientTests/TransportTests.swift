import Dispatch
import FlowSyncCore
import FlowSyncLoop
import FlowSyncTestSupport
import Foundation
import Glibc
import Testing

@testable import FlowSyncClient

/// The transports that run here, through the one contract of ``ClientTransport``.
enum TransportKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case libuv, posix
    var testDescription: String { rawValue }

    func make() throws -> any ClientTransport {
        switch self {
        case .libuv: return try LibUVTransport()
        case .posix: return POSIXSocketTransport()
        }
    }
}

/// What a transport reported, in order.
final class EventLog: Sendable {
    private let events = Locked<[TransportEvent]>([])
    var handler: @Sendable (TransportEvent) -> Void { { [events] event in events.withLock { $0.append(event) } } }
    var all: [TransportEvent] { events.withLock { $0 } }
    var connected: Int { all.filter { if case .connected = $0 { true } else { false } }.count }
    var closed: Int { all.filter { if case .closed = $0 { true } else { false } }.count }
    var received: [UInt8] {
        var bytes: [UInt8] = []
        for case .received(let chunk) in all { bytes += chunk }
        return bytes
    }
}

@Suite(.serialized, .timeLimit(.minutes(2))) struct TransportTests {
    @Test(arguments: TransportKind.allCases)
    func aClientSyncsOverEachTransport(kind: TransportKind) async throws {
        let server = try await EmbeddedServer()
        let writer = try FlowSyncClient(
            configuration: .init(
                port: server.port, clientID: "writer-\(kind)", callbackQueue: DispatchQueue(label: "w"), randomSeed: 1),
            transport: try kind.make())
        let reader = try ClientTests.client(port: server.port, id: "reader-\(kind)")
        defer {
            writer.close()
            reader.close()
        }
        let list = writer.director("transport/\(kind)")
        try await list.waitUntilLoaded()
        try await list.add(section: NewSection(id: "over-\(kind)", models: [Contact(id: "1", name: "Ada")])).committed()
        let mirror = reader.director("transport/\(kind)")
        try await mirror.waitUntilLoaded()
        #expect(await ClientTests.settled(mirror, server: server))
        #expect(
            try mirror.section(id: "over-\(kind)")?.snapshot?.models(as: Contact.self) == [
                Contact(id: "1", name: "Ada")
            ])
        writer.close()
        #expect(await server.stop())
    }

    @Test(arguments: TransportKind.allCases)
    func aRefusedConnectionIsOneClosedEvent(kind: TransportKind) async throws {
        let transport = try kind.make()
        defer { transport.shutdown() }
        let log = EventLog()
        transport.connect(host: "127.0.0.1", port: try freeLoopbackPort(), handler: log.handler)
        #expect(await ClientTests.until(timeout: 10) { log.closed == 1 })
        try await Task.sleep(nanoseconds: 50_000_000)
        #expect(log.connected == 0 && log.closed == 1, "\(log.all)")
    }

    @Test(arguments: TransportKind.allCases)
    func bytesFlowBothWaysAndDisconnectClosesOnce(kind: TransportKind) async throws {
        let server = try await EmbeddedServer()
        let transport = try kind.make()
        defer { transport.shutdown() }
        let log = EventLog()
        transport.connect(host: "localhost", port: server.port, handler: log.handler)
        #expect(await ClientTests.until(timeout: 10) { log.connected == 1 })
        // Not a Hello: the server answers with an error frame and closes.
        transport.send([[0, 0, 0, 4], Array("junk".utf8)])
        #expect(await ClientTests.until(timeout: 10) { log.closed == 1 })
        #expect(!log.received.isEmpty, "the server's error frame arrives before the close")

        let second = EventLog()
        transport.connect(host: "127.0.0.1", port: server.port, handler: second.handler)
        #expect(await ClientTests.until(timeout: 10) { second.connected == 1 })
        transport.disconnect()
        #expect(await ClientTests.until(timeout: 10) { second.closed == 1 })
        try await Task.sleep(nanoseconds: 50_000_000)
        #expect(second.closed == 1 && log.closed == 1, "one .closed per connection: \(second.all)")
        #expect(await server.stop())
    }

    @Test(arguments: TransportKind.allCases)
    func scheduledWorkRunsAndStopsAtShutdown(kind: TransportKind) async throws {
        let transport = try kind.make()
        let ran = Locked(0)
        transport.schedule(after: 5) { ran.withLock { $0 += 1 } }
        #expect(await ClientTests.until(timeout: 10) { ran.withLock { $0 } == 1 })
        transport.schedule(after: 200) { ran.withLock { $0 += 1 } }
        transport.shutdown()
        try await Task.sleep(nanoseconds: 400_000_000)
        #expect(ran.withLock { $0 } == 1, "nothing runs after shutdown() returns")
    }
}

/// `SIGPIPE` stays the app's business: no library code changes the process's disposition,
/// and a write to a vanished peer fails with `EPIPE` instead of killing the process.
@Suite(.serialized, .timeLimit(.minutes(2))) struct SIGPIPETests {
    /// Whether the process ignores SIGPIPE (Linux: bit 12 of SigIgn in /proc/self/status).
    static func processIgnoresSIGPIPE() throws -> Bool {
        let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("SigIgn:") })
        let mask = try #require(UInt64(line.dropFirst(7).trimmingCharacters(in: .whitespaces), radix: 16))
        return mask & (1 << (UInt64(SIGPIPE) - 1)) != 0
    }

    @Test func loopsAndTransportsLeaveTheDispositionAlone() async throws {
        let before = try Self.processIgnoresSIGPIPE()
        let thread = try EventLoopThread()
        let transport = try LibUVTransport()
        let posix = POSIXSocketTransport()
        #expect(try Self.processIgnoresSIGPIPE() == before)
        transport.shutdown()
        posix.shutdown()
        #expect(thread.shutdown())
    }

    /// A socket pair whose other end is closed: the next write raises SIGPIPE unless
    /// the writer prevents it.
    static func brokenPipe() -> Int32 {
        var fds: [Int32] = [0, 0]
        _ = socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds)
        close(fds[1])
        return fds[0]
    }

    @Test func theLoopThreadGetsEPIPENotSIGPIPE() async throws {
        let thread = try EventLoopThread()
        let result = Locked<Int32?>(nil)
        thread.loop.execute {
            let fd = Self.brokenPipe()
            let n = write(fd, "x", 1)  // plain write(2), as libuv's uv_write does
            result.withLock { $0 = n < 0 ? errno : 0 }
            close(fd)
        }
        #expect(await ClientTests.until(timeout: 10) { result.withLock { $0 } != nil })
        #expect(result.withLock { $0 } == EPIPE)
        #expect(thread.shutdown())
    }

    @Test func thePOSIXTransportSendsWithoutSIGPIPE() throws {
        let fd = Self.brokenPipe()
        defer { close(fd) }
        // On this (cooperative) thread SIGPIPE is not blocked: only MSG_NOSIGNAL saves us.
        let n = "x".withCString { POSIXSocketTransport.sendNoSignal(fd, $0, 1) }
        #expect(n == -1 && errno == EPIPE)
    }
}
