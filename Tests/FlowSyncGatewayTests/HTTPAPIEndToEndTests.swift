import FlowSyncClient
import FlowSyncCore
import FlowSyncGatewayCore
import FlowSyncServer
import FlowSyncTestSupport
import Foundation
import Testing

@testable import FlowSyncGateway

/// The HTTP API against a real daemon: reads, writes, idempotent retries, rejects as
/// problem documents, bearer tokens passed through, CORS.
@Suite(.timeLimit(.minutes(2))) struct HTTPAPIEndToEndTests {
    static let seed =
        #"{"operations":[{"op":"setSections","sections":[{"id":"S","header":{"t":"Inbox"},"rows":[{"id":"a","kind":"msg","payload":{"text":"hi"}}]}]}]}"#

    @Test func writeThenReadTheListAsJSONWithItsVersion() async throws {
        let server = try await EmbeddedServer()
        let gateway = try await GatewayHarness(server: server)
        let (posted, committed) = try await gateway.json("POST", "/v1/lists/inbox/mutations", body: Self.seed)
        #expect(posted.status == 200, "\(posted)")
        let version = try #require(committed["committed"] as? [String: Any])
        #expect(version["version"] as? Int == 1)

        let (got, list) = try await gateway.json("GET", "/v1/lists/inbox")
        #expect(got.status == 200, "\(got)")
        #expect(got.headers["content-type"] == "application/json")
        let position = try #require(list["position"] as? [String: Any])
        #expect(position["version"] as? Int == 1 && position["epoch"] as? String == version["epoch"] as? String)
        #expect(got.headers["etag"] == "\"\(position["epoch"]!):1\"")
        let sections = try ModelJSON.sections(from: list["sections"] as Any, at: "/sections")
        #expect(
            sections == [
                Section(
                    id: "S", header: Array(#"{"t":"Inbox"}"#.utf8),
                    rows: [Row(id: "a", kind: "msg", payload: Array(#"{"text":"hi"}"#.utf8))])
            ])

        // With a base: rebased by the daemon; at head (no base): applied by IDs.
        let epoch = try #require(position["epoch"] as? String)
        let moved =
            #"{"operations":[{"op":"insertRows","section":"S","at":1,"rows":[{"id":"b"}]}],"base":{"epoch":"\#(epoch)","version":1}}"#
        let (second, answer) = try await gateway.json("POST", "/v1/lists/inbox/mutations", body: moved)
        #expect(second.status == 200 && (answer["committed"] as? [String: Any])?["version"] as? Int == 2, "\(second)")
        await gateway.stop()
        #expect(await server.stop())
    }

    @Test func aRetriedPostWithTheSameIdempotencyKeyCommitsOnceAcrossAGatewayRestart() async throws {
        let server = try await EmbeddedServer()
        var gateway = try await GatewayHarness(server: server)
        _ = try await gateway.request(
            "POST", "/v1/lists/orders/mutations",
            body: #"{"operations":[{"op":"insertSections","at":0,"sections":[{"id":"S"}]}]}"#)
        let add = #"{"operations":[{"op":"insertRows","section":"S","at":0,"rows":[{"id":"order-1"}]}]}"#
        let key = ["Idempotency-Key": "order-1-created"]
        let (first, a) = try await gateway.json("POST", "/v1/lists/orders/mutations", headers: key, body: add)
        #expect(first.status == 200, "\(first)")
        let (retry, b) = try await gateway.json("POST", "/v1/lists/orders/mutations", headers: key, body: add)
        #expect(retry.status == 200, "\(retry)")
        #expect(
            a["committed"] as? NSDictionary == b["committed"] as? NSDictionary,
            "the retry gets the first commit's version")

        // A new gateway process (nothing shared with the first): the daemon remembers.
        await gateway.stop()
        gateway = try await GatewayHarness(server: server)
        let (again, c) = try await gateway.json("POST", "/v1/lists/orders/mutations", headers: key, body: add)
        #expect(again.status == 200 && c["committed"] as? NSDictionary == a["committed"] as? NSDictionary, "\(again)")

        let (_, list) = try await gateway.json("GET", "/v1/lists/orders")
        #expect(
            (list["position"] as? [String: Any])?["version"] as? Int == 2, "one commit for the section, one for the key"
        )
        let rows = ((list["sections"] as? [[String: Any]])?.first?["rows"] as? [[String: Any]]) ?? []
        #expect(rows.map { $0["id"] as? String } == ["order-1"])
        // Without a key, the same body commits again (and fails: a duplicate ID).
        let (duplicate, problem) = try await gateway.json("POST", "/v1/lists/orders/mutations", body: add)
        #expect(
            duplicate.status == 422 && problem["type"] as? String == "urn:flowsync:problem:duplicate-id", "\(duplicate)"
        )
        await gateway.stop()
        #expect(await server.stop())
    }

    @Test func everyRefusalIsAnRFC9457ProblemDocument() async throws {
        let server = try await EmbeddedServer()
        let gateway = try await GatewayHarness(server: server) {
            $0.limits.maxOperations = 2
            $0.limits.maxBodyBytes = 2_000
        }
        _ = try await gateway.request("POST", "/v1/lists/l/mutations", body: Self.seed)
        let many = #"{"operations":[{"op":"removeAllSections"},{"op":"removeAllSections"},{"op":"removeAllSections"}]}"#
        let cases: [(String, String, [String: String], String?, Int, String)] = [
            ("POST", "/v1/lists/l/mutations", [:], "{", 400, "malformed-json"),
            ("POST", "/v1/lists/l/mutations", [:], #"{"operations":[{"op":"nope"}]}"#, 400, "invalid-request"),
            ("POST", "/v1/lists/l/mutations", [:], many, 413, "too-many-operations"),
            ("POST", "/v1/lists/l/mutations", [:], String(repeating: " ", count: 2_001), 413, "body-too-large"),
            ("POST", "/v1/lists/l/mutations", ["Content-Type": "text/plain"], "{}", 415, "unsupported-media-type"),
            (
                "POST", "/v1/lists/l/mutations", ["Idempotency-Key": "has space"], Self.seed, 400,
                "invalid-idempotency-key"
            ),
            (
                "POST", "/v1/lists/l/mutations", [:],
                #"{"operations":[{"op":"removeSections","sections":["missing"]}]}"#, 422, "unknown-section"
            ),
            (
                "POST", "/v1/lists/l/mutations", [:],
                #"{"operations":[{"op":"removeAllSections"}],"base":{"epoch":999,"version":1}}"#, 409,
                "stale-base-version"
            ),
            ("GET", "/v1/lists/l/changes?after=nope", [:], nil, 400, "invalid-position"),
            ("GET", "/v2/whatever", [:], nil, 404, "not-found"),
            ("DELETE", "/v1/lists/l", [:], nil, 405, "method-not-allowed"),
            ("TRACE", "/healthz", [:], nil, 405, "method-not-allowed"),
            ("PUT", "/v1/webhooks", [:], nil, 405, "method-not-allowed"),
            ("GET", "/v1/lists/l/mutations", [:], nil, 405, "method-not-allowed"),
        ]
        for (method, path, headers, body, status, name) in cases {
            let (answer, problem) = try await gateway.json(method, path, headers: headers, body: body)
            #expect(answer.status == status, "\(method) \(path) \(body?.prefix(40) ?? ""): \(answer)")
            #expect(answer.headers["content-type"] == "application/problem+json", "\(path): \(answer)")
            #expect(problem["type"] as? String == "urn:flowsync:problem:\(name)", "\(method) \(path): \(answer)")
            #expect(problem["status"] as? Int == status && (problem["title"] as? String)?.isEmpty == false)
            if status == 405 {
                #expect(answer.headers["allow"] == (path.hasSuffix("mutations") ? "POST" : "GET"), "\(path): \(answer)")
            }
        }
        await gateway.stop()
        #expect(await server.stop())
    }

    @Test func theBearerTokenIsPassedThroughAndTheDaemonDecides() async throws {
        let server = try await TokenDaemon.start()
        let gateway = try await GatewayHarness(server: server)
        let writer = try await TokenDaemon.token("backend", read: ["team/*"], write: ["team/*"])
        let reader = try await TokenDaemon.token("viewer", read: ["team/*"], write: [])
        let (none, p0) = try await gateway.json("POST", "/v1/lists/team%2F1/mutations", body: Self.seed)
        #expect(none.status == 401 && none.headers["www-authenticate"] == "Bearer", "\(none)")
        #expect(p0["code"] as? Int == 2000)
        let (bad, p1) = try await gateway.json("GET", "/v1/lists/team%2F1", headers: ["Authorization": "Bearer x.y.z"])
        #expect(bad.status == 401 && p1["type"] as? String == "urn:flowsync:problem:invalid-token", "\(bad)")
        let (ok, _) = try await gateway.json(
            "POST", "/v1/lists/team%2F1/mutations", headers: ["Authorization": "Bearer \(writer)"], body: Self.seed)
        #expect(ok.status == 200, "\(ok)")
        let (read, _) = try await gateway.json(
            "GET", "/v1/lists/team%2F1", headers: ["Authorization": "Bearer \(reader)"])
        #expect(read.status == 200, "\(read)")
        let (forbidden, p2) = try await gateway.json(
            "POST", "/v1/lists/team%2F1/mutations", headers: ["Authorization": "Bearer \(reader)"], body: Self.seed)
        #expect(forbidden.status == 403 && p2["type"] as? String == "urn:flowsync:problem:forbidden", "\(forbidden)")
        let (other, _) = try await gateway.json(
            "GET", "/v1/lists/elsewhere", headers: ["Authorization": "Bearer \(reader)"])
        #expect(other.status == 403, "\(other)")
        await gateway.stop()
        #expect(await server.stop())
    }

    @Test func corsAnswersOnlyConfiguredOrigins() async throws {
        let server = try await EmbeddedServer()
        let gateway = try await GatewayHarness(server: server) { $0.corsOrigins = ["https://app.example"] }
        let preflight = try await gateway.request(
            "OPTIONS", "/v1/lists/l/mutations",
            headers: [
                "Origin": "https://app.example", "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "idempotency-key",
            ])
        #expect(preflight.status == 204, "\(preflight)")
        #expect(preflight.headers["access-control-allow-origin"] == "https://app.example")
        #expect(preflight.headers["access-control-allow-headers"]?.contains("Idempotency-Key") == true)
        let allowed = try await gateway.request("GET", "/v1/lists/l", headers: ["Origin": "https://app.example"])
        #expect(
            allowed.status == 200 && allowed.headers["access-control-allow-origin"] == "https://app.example",
            "\(allowed)")
        let problem = try await gateway.request(
            "GET", "/v1/lists/l/changes?after=x", headers: ["Origin": "https://app.example"])
        #expect(
            problem.status == 400 && problem.headers["access-control-allow-origin"] == "https://app.example",
            "errors carry CORS too")
        let stranger = try await gateway.request("GET", "/v1/lists/l", headers: ["Origin": "https://evil.example"])
        #expect(stranger.headers["access-control-allow-origin"] == nil)
        await gateway.stop()
        #expect(await server.stop())
    }
}
