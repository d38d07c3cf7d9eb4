import FlowSyncClient
import FlowSyncProcess
import FlowSyncTestSupport
import Foundation
import NIOPosix
import Testing

@testable import FlowSyncGateway

#if canImport(Glibc)
import Glibc
#endif

/// The gateway's daemon links keep the daemon's heartbeat both ways: a link pings every
/// half interval and fails when nothing came back for two intervals. Against a real
/// `flowsyncd` (heartbeat 2 s): a running daemon keeps the link for 5 s (past two
/// intervals: its Pongs count), and a daemon frozen with SIGSTOP — no FIN, no RST, as a
/// partitioned or paused host — has the link failed as a dead connection (bounded: 20 s;
/// the rule fails it after 4–5 s), instead of holding a webhook's or a browser's stream
/// for as long as TCP retransmits. (With 400 ms, a full suite at load 4 once delayed the
/// link's own pings past the daemon's 800 ms, and the daemon closed the quiet link.)
@Suite(.serialized, .timeLimit(.minutes(2))) struct DaemonLinkHeartbeatTests {
    @Test(arguments: [false, true]) func aLinkOutlivesQuietButFailsOnAFrozenDaemon(frozen: Bool) async throws {
        var options = DaemonProcess.Options(binary: try BuiltProduct.path("flowsyncd"))
        options.configText = "[limits]\nheartbeat_ms = 2000\n"
        let daemon = try await DaemonProcess.start(options)
        let link = try await DaemonLink.open(
            DaemonLink.Options(
                endpoints: [Endpoint(host: "127.0.0.1", port: daemon.port)], token: nil, clientID: "heartbeat",
                timeoutMilliseconds: 5_000),
            eventLoop: MultiThreadedEventLoopGroup.singleton.next())
        let failure = Shared<String?>(nil)
        link.setCloseHandler { error in failure.set("\(error)") }
        if frozen {
            daemon.signal(SIGSTOP)
            #expect(await eventually(timeout: 20) { failure.get() != nil }, "the link to a frozen daemon failed")
            #expect(failure.get()?.contains("dead connection") == true, "\(failure.get() ?? "-")")
            daemon.signal(SIGCONT)
        } else {
            try await Task.sleep(for: .seconds(5))
            #expect(failure.get() == nil, "a quiet link to a running daemon stays: \(failure.get() ?? "-")")
            #expect(link.isOpen)
            link.close()
        }
        _ = await daemon.terminate(gracePeriod: .seconds(10))
    }
}
