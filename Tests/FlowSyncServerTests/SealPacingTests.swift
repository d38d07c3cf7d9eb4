import FlowSyncCore
import FlowSyncProtocol
import FlowSyncTestSupport
import Testing

@testable import FlowSyncServer

/// The seal's pacing (`[server] seal_wait_us`, issue #20), driven on the server's own
/// loop: while the last flush stopped at its slice with connections left, a dirty list
/// waits — at most `seal_wait_us` after its first mutation, and never past a flush that
/// finished — and a shutdown's forced seal never waits.
@Suite(.serialized, .timeLimit(.minutes(1))) struct SealPacingTests {
    /// Queues one mutation for `name` as a connection's read would (no connection: the
    /// outcome's tag names none, so no Ack is sent).
    static func submit(_ server: Server, _ name: String, seq: UInt64) -> ListHost {
        let list = server.host(for: name, create: true)!
        let operations: [Operation] = [.insertSections([Section(id: "s\(seq)")], at: 0)]
        list.submit(MutationRequest(clientID: "pacing", seq: seq, base: list.position, operations: operations), tag: -1)
        server.dirtyLists.insert(name)
        return list
    }

    @Test func aListWaitsWhileAFlushIsUnfinishedThenIsSealedByTheNextTurn() async throws {
        var configuration = ServerConfiguration()
        configuration.sealWaitMicroseconds = 1_000_000  // 1 s: far longer than the test needs
        let server = try await EmbeddedServer(configuration: configuration)
        let held = await server.withServer { server -> (pending: Bool, dirty: Bool, idle: Bool, version: UInt64) in
            let list = Self.submit(server, "paced", seq: 1)
            server.flushUnfinished = true
            // A whole end of turn, as the check hook runs it: the seal holds the list,
            // the flush finishes (nothing is queued), and the idle handle is started so
            // the next turn comes without waiting for I/O.
            server.endOfTurn()
            return (
                list.hasPending, server.dirtyLists.contains("paced"), server.flushIdle?.isActive == true,
                list.position.version
            )
        }
        #expect(held.pending && held.dirty, "held while the flush is unfinished")
        #expect(held.idle, "a held list keeps the loop from sleeping")
        // The flush of that turn finished, so the next turn seals the list — long
        // before its wait.
        var version = held.version
        let deadline = ContinuousClock.now + .seconds(5)
        while version == held.version, ContinuousClock.now < deadline {
            version = await server.withServer { $0.lists["paced"]!.position.version }
            if version == held.version { try await Task.sleep(for: .milliseconds(5)) }
        }
        #expect(version == held.version + 1, "sealed once the flush had finished")
        let after = await server.withServer { ($0.dirtyLists.isEmpty, $0.flushIdle?.isActive == false) }
        #expect(after.0 && after.1, "nothing left dirty; the loop sleeps again")
        #expect(await server.stop())
    }

    @Test func theWaitIsBoundedAndAForcedSealNeverWaits() async throws {
        var configuration = ServerConfiguration()
        configuration.sealWaitMicroseconds = 1_000_000
        let server = try await EmbeddedServer(configuration: configuration)
        let results = await server.withServer { server -> [Bool] in
            var sealed: [Bool] = []
            // Forced (shutdown): sealed at once although a flush is unfinished.
            let list = Self.submit(server, "forced", seq: 1)
            server.flushUnfinished = true
            server.sealDirtyLists(force: true)
            sealed.append(!list.hasPending)
            // A wait of 1 µs has passed by the time the seal looks: sealed.
            server.configuration.sealWaitMicroseconds = 1
            let short = Self.submit(server, "short", seq: 1)
            let until = ContinuousClock.now + .microseconds(50)
            while ContinuousClock.now < until {}
            server.flushUnfinished = true
            server.sealDirtyLists()
            sealed.append(!short.hasPending)
            // No pacing at all with seal_wait_us = 0.
            server.configuration.sealWaitMicroseconds = 0
            let off = Self.submit(server, "off", seq: 1)
            server.flushUnfinished = true
            server.sealDirtyLists()
            sealed.append(!off.hasPending)
            server.flushUnfinished = false
            return sealed
        }
        #expect(results == [true, true, true])
        #expect(await server.stop())
    }

    @Test func theKeyIsReadAndChecked() throws {
        #expect(ServerConfiguration().sealWaitMicroseconds == 2_000)
        #expect(try ServerConfiguration(toml: "[server]\nseal_wait_us = 0\n").sealWaitMicroseconds == 0)
        #expect(try ServerConfiguration(toml: "[server]\nseal_wait_us = 5000\n").sealWaitMicroseconds == 5_000)
        #expect(throws: ConfigurationError.self) { try ServerConfiguration(toml: "[server]\nseal_wait_us = 2000000\n") }
    }
}
