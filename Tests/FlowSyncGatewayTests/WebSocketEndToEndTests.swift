import FlowSyncCore
import FlowSyncGatewayCore
import FlowSyncServer
import FlowSyncTestSupport
import Foundation
import HTTPTypes
import Testing

@testable import FlowSyncGateway

/// `GET /v1/ws` against a real daemon (``EmbeddedServer``) through a real gateway, both on
/// port 0, with swift-websocket's client offering permessage-deflate as a browser does.
@Suite(.timeLimit(.minutes(2))) struct WebSocketEndToEndTests {
    static let seed = #"[{"op":"insertSections","at":0,"sections":[{"id":"S"}]}]"#

    static func insert(_ id: String, at index: Int) -> String {
        #"[{"op":"insertRows","section":"S","at":\#(index),"rows":[{"id":"\#(id)","payload":{"n":\#(index)}}]}]"#
    }

    static func mutate(_ list: String, id: String, _ operations: String) -> String {
        #"{"type":"mutate","list":"\#(list)","id":"\#(id)","operations":\#(operations)}"#
    }

    static func types(_ messages: [[String: Any]]) -> [String] { messages.compactMap { $0["type"] as? String } }

    @Test func aSubscriberSeesTheSnapshotThenEachDiffInOrderAndWritesAreAcked() async throws {
        let server = try await EmbeddedServer()
        let gateway = try await GatewayHarness(server: server)
        let v1 = try await ChangesStreamTests.post(gateway, "feed", Self.seed)
        let socket = try await WebSocketTestClient(port: gateway.port)
        socket.send(#"{"type":"subscribe","list":"feed"}"#)
        #expect(await socket.waitUntil { Self.types($0) == ["snapshot"] })
        // Writes run concurrently (each on a link of its own), so each inserts at 0: any
        // commit order is valid, and the diffs must still come in version order.
        for i in 0..<5 { socket.send(Self.mutate("feed", id: "w\(i)", Self.insert("r\(i)", at: 0))) }
        #expect(await socket.waitUntil { Self.types($0).filter { $0 == "ack" }.count == 5 }, "\(socket.texts)")
        let acked = socket.messages.compactMap { ($0["committed"] as? [String: Any])?["version"] as? Int }
        let head = acked.max() ?? 0
        // The daemon groups the writes of one loop turn into one batch: 1 to 5 diffs.
        #expect(await socket.waitUntil { $0.contains { $0["toVersion"] as? Int == head } }, "\(socket.texts)")
        let messages = socket.messages
        let snapshot = messages[0]
        #expect(snapshot["type"] as? String == "snapshot")
        #expect((snapshot["position"] as? [String: Any])?["epoch"] as? String == v1.epoch)
        let diffs = messages.filter { $0["type"] as? String == "diff" }
        #expect(diffs.compactMap { $0["fromVersion"] as? Int } == Array(1..<head), "diffs in order, no gap")
        #expect(diffs.compactMap { $0["toVersion"] as? Int } == Array(2...head))
        let acks = messages.filter { $0["type"] as? String == "ack" }
        #expect(Set(acks.compactMap { $0["id"] as? String }) == Set((0..<5).map { "w\($0)" }))
        // The same shapes as SSE: the staged changesets name every inserted row.
        for i in 0..<5 {
            #expect(socket.texts.contains { $0.contains(#""type":"diff""#) && $0.contains(#""id":"r\#(i)""#) })
        }
        await socket.close()
        await gateway.stop()
        #expect(await server.stop())
    }

    @Test func theUpgradeNegotiatesPermessageDeflate() async throws {
        let server = try await EmbeddedServer()
        let gateway = try await GatewayHarness(server: server)
        let raw = try await RawConnection.connect(port: gateway.port)
        try await raw.send(
            "GET /v1/ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
                + "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n\r\n")
        #expect(
            await raw.waitUntil(timeout: .seconds(10)) {
                String(decoding: $0.bytes, as: UTF8.self).contains("\r\n\r\n")
            })
        let head = raw.text.lowercased()
        #expect(head.hasPrefix("http/1.1 101"), "\(raw.text)")
        #expect(head.contains("sec-websocket-extensions: permessage-deflate"), "\(raw.text)")
        // Another path is not upgraded.
        let other = try await RawConnection.connect(port: gateway.port)
        try await other.send(
            "GET /v1/nope HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        #expect(await other.waitUntil(timeout: .seconds(10)) { $0.closed || HTTPAnswer.parse($0.bytes) != nil })
        #expect(!other.text.hasPrefix("HTTP/1.1 101"), "\(other.text)")
        raw.close()
        other.close()
        await gateway.stop()
        #expect(await server.stop())
    }

    @Test func aRetriedWriteWithTheSameIDCommitsOnceAcrossSockets() async throws {
        let server = try await EmbeddedServer()
        let gateway = try await GatewayHarness(server: server)
        _ = try await ChangesStreamTests.post(gateway, "dedupe", Self.seed)
        let first = try await WebSocketTestClient(port: gateway.port)
        let write = Self.mutate("dedupe", id: "order-17", Self.insert("once", at: 0))
        first.send(write)
        first.send(write)
        #expect(await first.waitUntil { Self.types($0).filter { $0 == "ack" }.count == 2 })
        await first.close()
        // A browser that reconnects and retries: the same key, through another socket.
        let second = try await WebSocketTestClient(port: gateway.port)
        second.send(write)
        #expect(await second.waitUntil { Self.types($0) == ["ack"] })
        let versions = (first.messages + second.messages).compactMap {
            ($0["committed"] as? [String: Any])?["version"] as? Int
        }
        #expect(versions == [2, 2, 2], "every retry answers the first commit")
        let (answer, list) = try await gateway.json("GET", "/v1/lists/dedupe")
        #expect(answer.status == 200)
        let rows = ((list["sections"] as? [[String: Any]])?.first?["rows"] as? [[String: Any]]) ?? []
        #expect(rows.compactMap { $0["id"] as? String } == ["once"])
        await second.close()
        await gateway.stop()
        #expect(await server.stop())
    }

    @Test func aResumeAfterADisconnectGetsOnlyWhatFollows() async throws {
        let server = try await EmbeddedServer()
        let gateway = try await GatewayHarness(server: server)
        let v1 = try await ChangesStreamTests.post(gateway, "resume", Self.seed)
        let socket = try await WebSocketTestClient(port: gateway.port)
        socket.send(#"{"type":"subscribe","list":"resume"}"#)
        #expect(await socket.waitUntil { Self.types($0) == ["snapshot"] })
        _ = try await ChangesStreamTests.post(gateway, "resume", Self.insert("a", at: 0))
        #expect(await socket.waitUntil { Self.types($0) == ["snapshot", "diff"] })
        await socket.close()
        for (i, id) in ["b", "c", "d"].enumerated() {
            _ = try await ChangesStreamTests.post(gateway, "resume", Self.insert(id, at: i + 1))
        }
        let again = try await WebSocketTestClient(port: gateway.port)
        again.send(#"{"type":"subscribe","list":"resume","after":"\#(v1.epoch):2"}"#)
        #expect(await again.waitUntil { Self.types($0) == ["diff"] })
        let catchUp = again.messages[0]
        #expect(catchUp["fromVersion"] as? Int == 2 && catchUp["toVersion"] as? Int == 5, "\(catchUp)")
        _ = try await ChangesStreamTests.post(gateway, "resume", Self.insert("e", at: 4))
        #expect(await again.waitUntil { Self.types($0) == ["diff", "diff"] })
        #expect(again.messages[1]["toVersion"] as? Int == 6)
        // A position from another epoch gets a snapshot that says why.
        let stranger = try await WebSocketTestClient(port: gateway.port)
        stranger.send(#"{"type":"subscribe","list":"resume","after":"12345:3"}"#)
        #expect(await stranger.waitUntil { Self.types($0) == ["snapshot"] })
        #expect(stranger.messages[0]["reason"] as? String == "epochChanged", "\(stranger.messages)")
        await again.close()
        await stranger.close()
        await gateway.stop()
        #expect(await server.stop())
    }

    @Test func badMessagesGetErrorsWhileAnotherSocketKeepsWorking() async throws {
        let server = try await EmbeddedServer()
        let gateway = try await GatewayHarness(server: server) { $0.webSocket.maxMessageBytes = 8192 }
        _ = try await ChangesStreamTests.post(gateway, "calm", Self.seed)
        let good = try await WebSocketTestClient(port: gateway.port)
        good.send(#"{"type":"subscribe","list":"calm"}"#)
        #expect(await good.waitUntil { Self.types($0) == ["snapshot"] })
        let bad = try await WebSocketTestClient(port: gateway.port)
        let hostile: [(String, String)] = [
            ("not json", "malformed-json"),
            ("[1,2]", "invalid-request"),
            (#"{"type":"launch"}"#, "unknown-type"),
            (#"{"type":"subscribe","list":"calm","after":"yesterday"}"#, "invalid-position"),
            (#"{"type":"mutate","list":"calm","id":"k","operations":[{"op":"fly"}]}"#, "invalid-request"),
            (#"{"type":"unsubscribe","list":"calm"}"#, "not-subscribed"),
            (#"{"type":"auth","token":"late"}"#, "auth-not-first"),
            (
                Self.mutate(
                    "calm", id: "bad-section", #"[{"op":"insertRows","section":"nope","at":0,"rows":[{"id":"z"}]}]"#),
                "unknown-section"
            ),
        ]
        for (i, (text, _)) in hostile.enumerated() {
            bad.send(text)
            _ = try await ChangesStreamTests.post(gateway, "calm", Self.insert("g\(i)", at: i))
        }
        #expect(await bad.waitUntil { $0.count == hostile.count })
        let names = bad.messages.map {
            (($0["problem"] as? [String: Any])?["type"] as? String)?.replacingOccurrences(
                of: "urn:flowsync:problem:", with: "")
        }
        #expect(names == hostile.map(\.1), "\(bad.texts)")
        #expect(
            bad.messages.last?["type"] as? String == "reject" && bad.messages.last?["id"] as? String == "bad-section")
        // Then an oversized message: an error and close 1009.
        bad.send(#"{"type":"subscribe","list":""# + String(repeating: "x", count: 9000) + #""}"#)
        #expect(await bad.waitUntilEnded())
        #expect(bad.closeCode == 1009, "\(String(describing: bad.closeCode)) \(bad.texts.suffix(1))")
        // The calm socket saw every batch, in order, meanwhile.
        #expect(await good.waitUntil { Self.types($0).filter { $0 == "diff" }.count == hostile.count })
        let versions = good.messages.compactMap { $0["toVersion"] as? Int }
        #expect(versions == Array(2...(1 + hostile.count)))
        await bad.close()
        await good.close()
        await gateway.stop()
        #expect(await server.stop())
    }

    /// A subscription outlives the daemon timeout: that deadline bounds the link's
    /// handshake, not its life (a timer left running once closed every stream's link
    /// `daemon_timeout_ms` after it opened; SSE shares the link).
    @Test func aSubscriptionOutlivesTheDaemonTimeout() async throws {
        let server = try await EmbeddedServer()
        let gateway = try await GatewayHarness(server: server) { $0.limits.daemonTimeoutMilliseconds = 2_000 }
        _ = try await ChangesStreamTests.post(gateway, "long", Self.seed)
        let socket = try await WebSocketTestClient(port: gateway.port)
        socket.send(#"{"type":"subscribe","list":"long"}"#)
        #expect(await socket.waitUntil { Self.types($0) == ["snapshot"] })
        // Past two daemon timeouts (2 s is short, yet long enough for a loaded machine's
        // handshakes and POSTs: 300 ms was not, beside two busy loops).
        try await Task.sleep(for: .milliseconds(4_500))
        _ = try await ChangesStreamTests.post(gateway, "long", Self.insert("late", at: 0))
        #expect(await socket.waitUntil { Self.types($0) == ["snapshot", "diff"] }, "\(socket.texts)")
        #expect(!socket.ended, "closed with \(String(describing: socket.closeCode))")
        await socket.close()
        await gateway.stop()
        #expect(await server.stop())
    }

    @Test func theTokenPassesThroughAndTheDaemonDecides() async throws {
        let server = try await TokenDaemon.start()
        let gateway = try await GatewayHarness(server: server)
        let writer = try await TokenDaemon.token("browser", read: ["team/*"], write: ["team/*"])
        let none = try await WebSocketTestClient(port: gateway.port)
        none.send(#"{"type":"subscribe","list":"team/1"}"#)
        #expect(await none.waitUntilEnded())
        #expect(none.closeCode == 4001, "\(none.texts)")
        #expect(none.texts.first?.contains("auth-required") == true, "\(none.texts)")
        let authed = try await WebSocketTestClient(port: gateway.port)
        authed.send(#"{"type":"auth","token":"\#(writer)"}"#)
        authed.send(Self.mutate("team/1", id: "t1", Self.seed))
        authed.send(#"{"type":"subscribe","list":"team/1"}"#)
        authed.send(#"{"type":"subscribe","list":"other"}"#)
        #expect(
            await authed.waitUntil { Set(Self.types($0)).isSuperset(of: ["ack", "snapshot", "error"]) },
            "\(authed.texts)")
        let refused = authed.messages.first { $0["type"] as? String == "error" }
        #expect(refused?["list"] as? String == "other")
        // The header works for clients that can set one.
        let header = try await WebSocketTestClient(port: gateway.port, headers: [.authorization: "Bearer \(writer)"])
        header.send(#"{"type":"subscribe","list":"team/1"}"#)
        #expect(await header.waitUntil { Self.types($0) == ["snapshot"] }, "\(header.texts)")
        await none.close()
        await authed.close()
        await header.close()
        await gateway.stop()
        #expect(await server.stop())
    }
}

/// A browser that stops reading is closed once its bounded queue is full, and costs
/// no one else anything.
@Suite(.timeLimit(.minutes(2))) struct WebSocketSlowBrowserTests {
    @Test func aBrowserThatStopsReadingIsClosedAndOthersKeepUp() async throws {
        let server = try await EmbeddedServer()
        let gateway = try await GatewayHarness(server: server) {
            // Room for a reader slowed by a loaded machine (two busy loops on two cores
            // put a reading client 8 messages behind); a stalled one fills it regardless.
            $0.webSocket.maxQueuedMessages = 64
            $0.webSocket.maxQueuedBytes = 2 << 20
        }
        _ = try await ChangesStreamTests.post(gateway, "busy", WebSocketEndToEndTests.seed)
        let reader = try await WebSocketTestClient(port: gateway.port)
        reader.send(#"{"type":"subscribe","list":"busy"}"#)
        #expect(await reader.waitUntil { WebSocketEndToEndTests.types($0) == ["snapshot"] })
        let stalled = try await StalledWebSocket.connect(
            port: gateway.port, thenSend: #"{"type":"subscribe","list":"busy"}"#)
        #expect(await waitFor { gateway.gateway.openStreams == 2 })
        // Batches of 2 rows of 40 KB (uncompressed toward the stalled peer, which offered no
        // deflate) until it is closed: loopback's socket buffers take a few MB first.
        let filler = String(repeating: "x", count: 40_000)
        var writes = 0
        while writes < 200, gateway.gateway.openStreams == 2 {
            let rows = (0..<2).map { #"{"id":"b\#(writes)-\#($0)","payload":"\#(filler)"}"# }.joined(separator: ",")
            _ = try await ChangesStreamTests.post(
                gateway, "busy", #"[{"op":"insertRows","section":"S","at":0,"rows":[\#(rows)]}]"#)
            writes += 1
        }
        // Closed within the hard-close grace (2 s) of its queue filling: its session ends.
        #expect(
            await waitFor { gateway.gateway.openStreams == 1 },
            "a stalled browser is closed after \(writes) batches: \(gateway.gateway.openStreams) \(reader.texts.suffix(2))"
        )
        #expect(
            !reader.ended, "the reading browser was not the one closed (code \(String(describing: reader.closeCode)))")
        #expect(await reader.waitUntil(timeout: .seconds(30)) { $0.contains { $0["toVersion"] as? Int == 1 + writes } })
        let versions = reader.messages.compactMap { $0["toVersion"] as? Int }
        #expect(versions == Array(2...(1 + writes)), "the reading browser got every batch, in order")
        stalled.close()
        await reader.close()
        await gateway.stop()
        #expect(await server.stop())
    }

    private func waitFor(_ timeout: Duration = .seconds(10), _ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return condition()
    }
}
