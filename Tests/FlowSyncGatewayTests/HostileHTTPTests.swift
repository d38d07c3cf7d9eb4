import FlowSyncCore
import FlowSyncGatewayCore
import FlowSyncTestSupport
import Foundation
import Testing

@testable import FlowSyncGateway

/// Limits against hostile clients: each gets a clear 4xx or a close, and others carry on.
@Suite(.timeLimit(.minutes(2))) struct HostileHTTPTests {
    @Test func aSlowlorisHeadIsClosedAtTheHeaderDeadlineWhileOthersAreServed() async throws {
        let server = try await EmbeddedServer()
        let gateway = try await GatewayHarness(server: server) { $0.limits.headerTimeoutMilliseconds = 300 }
        let slow = try await RawConnection.connect(port: gateway.port)
        let start = ContinuousClock.now
        try await slow.send("GET /v1/lists/a HTTP/1.1\r\nHost: x\r\n")
        // Drip a header byte every 50 ms: never a full head.
        var dripped = 0
        while !slow.isClosed, dripped < 100 {
            try? await slow.send("X")
            dripped += 1
            let (answer, _) = try await gateway.json("GET", "/healthz")
            #expect(answer.status == 200, "others are served meanwhile")
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(await slow.waitUntil(timeout: .seconds(5)) { $0.closed })
        let elapsed = ContinuousClock.now - start
        #expect(elapsed < .seconds(3), "closed after \(elapsed)")
        #expect(slow.bytes.isEmpty, "a close, no answer")
        await gateway.stop()
        #expect(await server.stop())
    }

    @Test func aDrippedBodyIsClosedAtTheBodyDeadline() async throws {
        let server = try await EmbeddedServer()
        let gateway = try await GatewayHarness(server: server) { $0.limits.bodyTimeoutMilliseconds = 300 }
        let slow = try await RawConnection.connect(port: gateway.port)
        try await slow.send(
            "POST /v1/lists/a/mutations HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"operations\":"
        )
        for _ in 0..<40 where !slow.isClosed {
            try? await slow.send(" ")
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(await slow.waitUntil(timeout: .seconds(5)) { $0.closed })
        let (answer, _) = try await gateway.json("GET", "/healthz")
        #expect(answer.status == 200)
        await gateway.stop()
        #expect(await server.stop())
    }

    @Test func anIdleKeepAliveConnectionIsClosedButAnAnsweredOneFirstGetsItsAnswer() async throws {
        let server = try await EmbeddedServer()
        let gateway = try await GatewayHarness(server: server) { $0.limits.headerTimeoutMilliseconds = 300 }
        let c = try await RawConnection.connect(
            port: gateway.port, firstBytes: "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(await c.waitUntil(timeout: .seconds(5)) { HTTPAnswer.parse($0.bytes) != nil })
        #expect(HTTPAnswer.parse(c.bytes)?.status == 200)
        #expect(await c.waitUntil(timeout: .seconds(5)) { $0.closed }, "idle past the header deadline")
        await gateway.stop()
        #expect(await server.stop())
    }

    @Test func aHugeDeclaredBodyIsRefusedWithoutReadingIt() async throws {
        let server = try await EmbeddedServer()
        let gateway = try await GatewayHarness(server: server) { $0.limits.maxBodyBytes = 1_000 }
        let c = try await RawConnection.connect(port: gateway.port)
        try await c.send(
            "POST /v1/lists/a/mutations HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000000\r\n\r\n{"
        )
        #expect(await c.waitUntil(timeout: .seconds(5)) { HTTPAnswer.parse($0.bytes) != nil })
        let answer = try #require(HTTPAnswer.parse(c.bytes))
        #expect(answer.status == 413 && answer.headers["connection"] == "close", "\(answer)")
        #expect(await c.waitUntil(timeout: .seconds(5)) { $0.closed })
        // A chunked body over the limit (no Content-Length to check first) too.
        let chunked = try await RawConnection.connect(port: gateway.port)
        let big = String(repeating: "x", count: 600)
        try await chunked.send(
            "POST /v1/lists/a/mutations HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n258\r\n\(big)\r\n258\r\n\(big)\r\n"
        )
        #expect(await chunked.waitUntil(timeout: .seconds(5)) { HTTPAnswer.parse($0.bytes) != nil })
        #expect(HTTPAnswer.parse(chunked.bytes)?.status == 413, "\(chunked.text.prefix(200))")
        chunked.close()
        await gateway.stop()
        #expect(await server.stop())
    }

    @Test func garbageGetsAClose() async throws {
        let server = try await EmbeddedServer()
        let gateway = try await GatewayHarness(server: server)
        let c = try await RawConnection.connect(port: gateway.port, firstBytes: "\u{0}\u{1}NOT HTTP AT ALL\r\n\r\n")
        #expect(await c.waitUntil(timeout: .seconds(5)) { $0.closed })
        let (answer, _) = try await gateway.json("GET", "/healthz")
        #expect(answer.status == 200)
        await gateway.stop()
        #expect(await server.stop())
    }

    /// Past `max_connections`, new connections wait in the backlog (not refused, not
    /// served) until some close. The limit is checked per accept batch, so it may be
    /// overshot by a few (NIO accepts up to 4 connections per read): 10 late connections,
    /// at most 4 served early.
    @Test func idleConnectionsPastTheLimitWaitAndOthersResumeWhenTheyLeave() async throws {
        let server = try await EmbeddedServer()
        let gateway = try await GatewayHarness(server: server) {
            $0.limits.maxConnections = 50
            $0.limits.headerTimeoutMilliseconds = 60_000
        }
        var idle: [RawConnection] = []
        for _ in 0..<50 { idle.append(try await RawConnection.connect(port: gateway.port)) }
        var late: [RawConnection] = []
        for _ in 0..<10 {
            let c = try await RawConnection.connect(
                port: gateway.port, firstBytes: RawConnection.requestText("GET", "/healthz"))
            late.append(c)
        }
        try await Task.sleep(for: .milliseconds(300))
        let servedEarly = late.filter { HTTPAnswer.parse($0.bytes) != nil }.count
        #expect(servedEarly <= 4, "\(servedEarly) of 10 served past the limit")
        for c in idle.prefix(20) { c.close() }
        for c in late {
            #expect(await c.waitUntil(timeout: .seconds(10)) { HTTPAnswer.parse($0.bytes) != nil })
            #expect(HTTPAnswer.parse(c.bytes)?.status == 200)
        }
        for c in idle + late { c.close() }
        await gateway.stop()
        #expect(await server.stop())
    }
}
