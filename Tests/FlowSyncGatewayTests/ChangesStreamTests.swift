import FlowSyncCore
import FlowSyncGatewayCore
import FlowSyncTestSupport
import Foundation
import Testing

@testable import FlowSyncGateway

/// `GET /v1/lists/{list}/changes` as Server-Sent Events against a real daemon.
@Suite(.timeLimit(.minutes(2))) struct ChangesStreamTests {
    /// The events read so far: (id, event, data) with data lines joined.
    static func events(_ text: String) -> [(id: String?, event: String, data: String)] {
        guard let start = text.range(of: "\r\n\r\n") else { return [] }
        var body = String(text[start.upperBound...])
        // Dechunk loosely: drop chunk-size lines (hex digits alone on a line).
        body = body.components(separatedBy: "\r\n").filter { line in
            !line.isEmpty && !line.allSatisfy(\.isHexDigit) || line.isEmpty
        }
        .joined(separator: "")
        var out: [(String?, String, String)] = []
        for block in body.components(separatedBy: "\n\n") where !block.isEmpty {
            var id: String?
            var event = "message"
            var data: [String] = []
            for line in block.components(separatedBy: "\n") {
                if line.hasPrefix("id: ") { id = String(line.dropFirst(4)) }
                if line.hasPrefix("event: ") { event = String(line.dropFirst(7)) }
                if line.hasPrefix("data: ") { data.append(String(line.dropFirst(6))) }
            }
            if !data.isEmpty { out.append((id, event, data.joined(separator: "\n"))) }
        }
        return out
    }

    /// Posts operations; returns the committed (epoch, version).
    static func post(
        _ gateway: GatewayHarness, _ list: String, _ operations: String
    ) async throws -> (epoch: String, version: Int) {
        let (answer, object) = try await gateway.json(
            "POST", "/v1/lists/\(list)/mutations", body: #"{"operations":\#(operations)}"#)
        guard answer.status == 200, let committed = object["committed"] as? [String: Any],
            let epoch = committed["epoch"] as? String,
            let version = committed["version"] as? Int
        else { throw GatewayTestError("\(answer)") }
        return (epoch, version)
    }

    @Test func aStreamStartsWithASnapshotThenCarriesEachBatchInOrder() async throws {
        let server = try await EmbeddedServer()
        let gateway = try await GatewayHarness(server: server)
        let v1 = try await Self.post(gateway, "feed", #"[{"op":"insertSections","at":0,"sections":[{"id":"S"}]}]"#)
        let stream = try await RawConnection.connect(
            port: gateway.port, firstBytes: "GET /v1/lists/feed/changes HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(
            await stream.waitUntil(timeout: .seconds(10)) {
                Self.events(String(decoding: $0.bytes, as: UTF8.self)).count >= 1
            })
        #expect(
            stream.text.hasPrefix("HTTP/1.1 200")
                && stream.text.lowercased().contains("content-type: text/event-stream"), "\(stream.text)")
        for i in 0..<5 {
            _ = try await Self.post(
                gateway, "feed",
                #"[{"op":"insertRows","section":"S","at":\#(i),"rows":[{"id":"r\#(i)","payload":{"n":\#(i)}}]}]"#)
        }
        #expect(
            await stream.waitUntil(timeout: .seconds(10)) {
                Self.events(String(decoding: $0.bytes, as: UTF8.self)).count >= 6
            })
        let events = Self.events(stream.text)
        #expect(events.map(\.event) == ["snapshot", "diff", "diff", "diff", "diff", "diff"])
        let epoch = v1.epoch
        #expect(events.map(\.id) == (1...6).map { "\(epoch):\($0)" })
        let last = try #require(try JSONSerialization.jsonObject(with: Data(events[5].data.utf8)) as? [String: Any])
        #expect(last["fromVersion"] as? Int == 5 && last["toVersion"] as? Int == 6)
        #expect(
            events[5].data.contains(#""rowInserts":[{"path":[0,4],"row":{"id":"r4","kind":"","payload":{"n":4}}}]"#),
            "\(events[5].data)")
        stream.close()
        await gateway.stop()
        #expect(await server.stop())
    }

    @Test func aResumeWithLastEventIDGetsOnlyWhatFollows() async throws {
        let server = try await EmbeddedServer()
        let gateway = try await GatewayHarness(server: server)
        let v1 = try await Self.post(gateway, "feed", #"[{"op":"insertSections","at":0,"sections":[{"id":"S"}]}]"#)
        for i in 0..<3 {
            _ = try await Self.post(
                gateway, "feed", #"[{"op":"insertRows","section":"S","at":0,"rows":[{"id":"r\#(i)"}]}]"#)
        }
        let epoch = v1.epoch
        // The query parameter…
        let byQuery = try await RawConnection.connect(
            port: gateway.port, firstBytes: "GET /v1/lists/feed/changes?after=\(epoch):2 HTTP/1.1\r\nHost: x\r\n\r\n")
        // The daemon's catch-up: one coalesced diff from the position to the head.
        #expect(
            await byQuery.waitUntil(timeout: .seconds(10)) {
                Self.events(String(decoding: $0.bytes, as: UTF8.self)).count >= 1
            })
        #expect(Self.events(byQuery.text).map(\.id) == ["\(epoch):4"])
        #expect(Self.events(byQuery.text).map(\.event) == ["diff"])
        let catchUp = try #require(
            try JSONSerialization.jsonObject(with: Data((Self.events(byQuery.text).first?.data ?? "").utf8))
                as? [String: Any])
        #expect(catchUp["fromVersion"] as? Int == 2 && catchUp["toVersion"] as? Int == 4)
        // Then live batches, one event each.
        _ = try await Self.post(gateway, "feed", #"[{"op":"removeRows","rows":["r0"]}]"#)
        #expect(
            await byQuery.waitUntil(timeout: .seconds(10)) {
                Self.events(String(decoding: $0.bytes, as: UTF8.self)).count >= 2
            })
        #expect(Self.events(byQuery.text).map(\.id) == ["\(epoch):4", "\(epoch):5"])
        // …and Last-Event-ID (wins over the query), as a reconnecting EventSource sends it.
        let byHeader = try await RawConnection.connect(port: gateway.port)
        try await byHeader.send(
            "GET /v1/lists/feed/changes?after=\(epoch):0 HTTP/1.1\r\nHost: x\r\nLast-Event-ID: \(epoch):5\r\n\r\n")
        #expect(
            await byHeader.waitUntil(timeout: .seconds(10)) {
                Self.events(String(decoding: $0.bytes, as: UTF8.self)).count >= 1
            })
        let current = Self.events(byHeader.text)
        #expect(
            current.first?.id == "\(epoch):5" && current.first?.event == "diff", "already current: an empty diff 5→5")
        // Another epoch: a snapshot with its reason.
        let stale = try await RawConnection.connect(port: gateway.port)
        try await stale.send("GET /v1/lists/feed/changes?after=\(UInt64(epoch)! &+ 7):1 HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(
            await stale.waitUntil(timeout: .seconds(10)) {
                Self.events(String(decoding: $0.bytes, as: UTF8.self)).count >= 1
            })
        let snapshot = try #require(Self.events(stale.text).first)
        #expect(
            snapshot.event == "snapshot" && snapshot.data.contains(#""reason":"epochChanged""#),
            "\(snapshot.data.prefix(200))")
        for c in [byQuery, byHeader, stale] { c.close() }
        await gateway.stop()
        #expect(await server.stop())
    }

    @Test func streamsAreCountedAndLimitedAndReleasedOnDisconnect() async throws {
        let server = try await EmbeddedServer()
        let gateway = try await GatewayHarness(server: server) {
            $0.limits.maxStreams = 1
            $0.sseKeepAliveMilliseconds = 50
        }
        let first = try await RawConnection.connect(
            port: gateway.port, firstBytes: "GET /v1/lists/a/changes HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(
            await first.waitUntil(timeout: .seconds(10)) {
                String(decoding: $0.bytes, as: UTF8.self).contains("event: snapshot")
            })
        let (refused, problem) = try await gateway.json("GET", "/v1/lists/b/changes")
        #expect(
            refused.status == 503 && problem["type"] as? String == "urn:flowsync:problem:too-many-streams", "\(refused)"
        )
        #expect(
            await first.waitUntil(timeout: .seconds(5)) {
                String(decoding: $0.bytes, as: UTF8.self).contains(": keep-alive")
            })
        first.close()
        // The keep-alive write finds the closed client; the slot is released.
        var opened = false
        for _ in 0..<100 where !opened {
            let (answer, _) = try await gateway.json("GET", "/v1/lists/probe")  // a plain request works meanwhile
            #expect(answer.status == 200)
            try await Task.sleep(for: .milliseconds(20))
            opened = await probeStream(gateway)
        }
        #expect(opened, "the stream slot came back after the client left")
        await gateway.stop()
        #expect(await server.stop())
    }

    private func probeStream(_ gateway: GatewayHarness) async -> Bool {
        guard let c = try? await RawConnection.connect(port: gateway.port) else { return false }
        defer { c.close() }
        try? await c.send("GET /v1/lists/c/changes HTTP/1.1\r\nHost: x\r\n\r\n")
        _ = await c.waitUntil(timeout: .seconds(5)) { $0.bytes.count > 12 }
        return c.text.hasPrefix("HTTP/1.1 200")
    }
}
