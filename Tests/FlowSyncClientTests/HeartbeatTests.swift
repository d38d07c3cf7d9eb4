import Dispatch
import FlowSyncCore
import FlowSyncLoop
import FlowSyncProtocol
import FlowSyncServer
import FlowSyncTestSupport
import Foundation
import Testing

@testable import FlowSyncClient

/// Dead connections are found on both sides: a proxy silently blackholes a phone's path
/// (no bytes, no FIN, either way); the daemon closes its side with `heartbeat-timeout`
/// and the SDK drops its side and reconnects, each within twice the announced interval
/// (plus scheduling slack); once the path is back the replica catches up.
@Suite(.serialized, .timeLimit(.minutes(2))) struct HeartbeatTests {
    /// 1 s, not shorter: under a loaded suite a loop thread can be descheduled for a
    /// few hundred ms, and at 500 ms the daemon once saw two intervals of silence.
    static let interval: UInt64 = 1_000

    @Test func theDaemonAnnouncesItsIntervalAndClosesASilentConnectionWithItsCode() async throws {
        var configuration = ServerConfiguration()
        configuration.heartbeatMilliseconds = 200
        let server = try await EmbeddedServer(configuration: configuration)
        let thread = try EventLoopThread()
        defer { thread.shutdown(timeout: 5) }
        let silent = try await TestClient.connect(port: server.port, on: thread)
        let welcome = await silent.waitFor { if case .welcome = $0 { true } else { false } }
        guard case .welcome(let w)? = welcome else {
            Issue.record("no Welcome")
            return
        }
        #expect(w.heartbeatMilliseconds == 200)
        let error = await silent.waitFor { if case .error = $0 { true } else { false } }
        guard case .error(let e)? = error else {
            Issue.record("not closed")
            return
        }
        #expect(e.code == .heartbeatTimeout && e.closesConnection)
        // "Not before twice the interval" on the server's own clock, as its message says
        // (the test task may see the Welcome late on a loaded machine, so a stopwatch
        // started here could start after the close; ConnectionStateMachineTests pins
        // the exact threshold without a socket).
        let silence = e.message.split(separator: " ").dropFirst(3).first.flatMap { Int($0) }
        #expect(e.message.hasPrefix("nothing received for "), "\(e.message)")
        #expect(
            (silence ?? 0) > 400,
            "closed after \(silence ?? -1) ms of silence, not more than twice the 200 ms interval: \(e.message)")
        #expect(await ClientTests.until { silent.isClosed })
        #expect(await server.stop())
    }

    @Test func aBlackholedPathIsFoundOnBothSidesAndTheReplicaCatchesUpAfterward() async throws {
        var configuration = ServerConfiguration()
        configuration.heartbeatMilliseconds = Int(Self.interval)
        let server = try await EmbeddedServer(configuration: configuration)
        let proxy = try await ChaosProxy(upstreamPort: server.port)
        defer { proxy.stop() }
        let phone = try FlowSyncClient(
            configuration: .init(
                port: proxy.port, clientID: "phone",
                reconnect: ReconnectPolicy(initialDelayMilliseconds: 20, maxDelayMilliseconds: 200),
                pingIntervalMilliseconds: 15_000, handshakeTimeoutMilliseconds: 1_000,
                callbackQueue: DispatchQueue(label: "phone"), randomSeed: 3))
        let writer = try ClientTests.client(port: server.port, id: "desk")
        defer {
            phone.close()
            writer.close()
        }
        let statuses = Shared<[(at: ContinuousClock.Instant, status: ConnectionStatus)]>([])
        phone.observeStatus(on: DispatchQueue(label: "statuses")) { status in
            statuses.update { $0.append((.now, status)) }
        }

        let list = phone.director("feed")
        let recorder = LiveRecorder(list)
        try await list.add(section: NewSection(id: "news", models: [Contact(id: "a", name: "A")])).committed()
        let desk = writer.director("feed")
        #expect(await ClientTests.settled(desk, server: server))

        // Idle for three intervals: the pings keep both sides alive.
        let idleUntil = ContinuousClock.now + .milliseconds(Int(3 * Self.interval))
        #expect(await ClientTests.until { ContinuousClock.now >= idleUntil })
        #expect(await server.withServer { $0.statistics.closedByReason[ErrorCode.heartbeatTimeout.rawValue] ?? 0 } == 0)
        if case .connected = phone.status {} else { Issue.record("idle but alive, yet \(phone.status)") }

        let cut = ContinuousClock.now
        await proxy.blackhole(true)
        // The daemon's side: closed for silence.
        #expect(
            await ClientTests.until {
                await server.withServer { $0.statistics.closedByReason[ErrorCode.heartbeatTimeout.rawValue] ?? 0 } >= 1
            })
        let serverFound = ContinuousClock.now - cut
        // The phone's side: the status stream reports the drop.
        #expect(
            await ClientTests.until {
                statuses.get().contains {
                    $0.at > cut && { if case .disconnected = $0 { true } else { false } }($0.status)
                }
            })
        let phoneFound =
            try #require(
                statuses.get().first {
                    $0.at > cut && { if case .disconnected = $0 { true } else { false } }($0.status)
                }
            ).at - cut
        print(
            "heartbeat \(Self.interval) ms: the daemon found the dead path after \(serverFound), the phone after \(phoneFound)"
        )
        // Twice the interval, plus the sweep (100 ms) or tick (interval / 4) granularity
        // and scheduling slack on a loaded 2-core machine. The phone's time is stamped
        // on its status queue; the daemon's is when this test task's poll saw the
        // counter move, which waits for a turn on the 2-thread cooperative pool (up to
        // seconds while 8 tests run at once), so it gets more slack. The exact
        // threshold is pinned without sockets in ConnectionStateMachineTests.
        let bound = Duration.milliseconds(Int(2 * Self.interval) + 1_500)
        #expect(phoneFound <= bound, "the phone found the dead path after \(phoneFound)")
        #expect(
            serverFound <= bound + .seconds(3),
            "the daemon found the dead path after \(serverFound) (as this task saw it)")

        // Meanwhile others write; then the path comes back and the replica catches up.
        for k in 0..<5 {
            _ = try await desk.section(id: "news")!.add(model: Contact(id: "d\(k)", name: "D")).committed()
        }
        await proxy.blackhole(false)
        #expect(await ClientTests.settled(list, server: server))
        #expect(list.snapshot.director == desk.snapshot.director)
        #expect(recorder.failures.isEmpty, "\(recorder.failures)")
        #expect(await server.stop())
    }
}
