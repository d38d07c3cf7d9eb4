import FlowSyncClient
import FlowSyncGatewayCore
import FlowSyncTestSupport
import Foundation
import Testing

@testable import FlowSyncGateway

/// docs/openapi.json and the code must not drift: the routes are the same set, every
/// documented route answers, and every answer (good or bad) has a status, a media type
/// and the required members the spec gives for that route.
@Suite(.timeLimit(.minutes(2))) struct OpenAPIDriftTests {
    static func spec() throws -> [String: Any] {
        let url = BuiltProduct.root.appendingPathComponent("docs/openapi.json")
        return try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
    }

    static func specRoutes(_ spec: [String: Any]) -> [String] {
        let paths = spec["paths"] as? [String: [String: Any]] ?? [:]
        return paths.flatMap { path, methods in methods.keys.map { "\($0.uppercased()) \(path)" } }.sorted()
    }

    /// Resolves `{"$ref": "#/components/schemas/X"}`.
    static func schema(_ value: Any?, in spec: [String: Any]) -> [String: Any] {
        guard let object = value as? [String: Any] else { return [:] }
        if let ref = object["$ref"] as? String {
            let name = ref.components(separatedBy: "/").last!
            return ((spec["components"] as? [String: Any])?["schemas"] as? [String: Any])?[name] as? [String: Any]
                ?? [:]
        }
        return object
    }

    @Test func theSpecIsOpenAPI31AndNamesEveryServedRoute() throws {
        let spec = try Self.spec()
        #expect(spec["openapi"] as? String == "3.1.0")
        let gateway = try Gateway(
            configuration: GatewayConfiguration(endpoints: [Endpoint(host: "127.0.0.1", port: 1)]))
        #expect(Self.specRoutes(spec) == gateway.routes)
        // The operation names the spec allows are the ones the decoder reads.
        let operation = Self.schema(["$ref": "#/components/schemas/Operation"], in: spec)
        let names = (operation["oneOf"] as? [[String: Any]] ?? []).compactMap {
            (($0["properties"] as? [String: Any])?["op"] as? [String: Any])?["const"] as? String
        }
        #expect(names == OperationJSON.names)
        // The gateway's own problem names are all documented in the problem descriptions or GATEWAY.md.
        let doc = try String(contentsOf: BuiltProduct.root.appendingPathComponent("docs/GATEWAY.md"), encoding: .utf8)
        for kind in RequestError.Kind.allCases {
            #expect(doc.contains("`\(kind.rawValue)`"), "\(kind.rawValue) in docs/GATEWAY.md")
        }
    }

    /// Hits every documented route with good and bad requests; each answer must be
    /// documented for its route: status, media type, required members.
    @Test func everyRouteAnswersAsDocumented() async throws {
        let spec = try Self.spec()
        let server = try await EmbeddedServer()
        let gateway = try await GatewayHarness(server: server) { $0.limits.maxOperations = 2 }
        let seed =
            #"{"operations":[{"op":"setSections","sections":[{"id":"S","rows":[{"id":"a","payload":{"x":1}}]}]}]}"#
        let requests: [(String, String, [String: String], String?)] = [
            ("GET", "/healthz", [:], nil),
            ("GET", "/v1/webhooks", [:], nil),
            ("GET", "/demo", [:], nil),
            ("GET", "/flowsync.js", [:], nil),
            ("POST", "/v1/lists/d/mutations", [:], seed),
            ("POST", "/v1/lists/d/mutations", ["Idempotency-Key": "k1"], seed),
            ("POST", "/v1/lists/d/mutations", [:], "{"),
            (
                "POST", "/v1/lists/d/mutations", [:],
                #"{"operations":[{"op":"removeAllSections"},{"op":"removeAllSections"},{"op":"removeAllSections"}]}"#
            ),
            ("POST", "/v1/lists/d/mutations", ["Content-Type": "text/csv"], "a,b"),
            ("POST", "/v1/lists/d/mutations", [:], #"{"operations":[{"op":"removeRows","rows":["zz"]}]}"#),
            (
                "POST", "/v1/lists/d/mutations", [:],
                #"{"operations":[{"op":"removeAllSections"}],"base":{"epoch":12345,"version":0}}"#
            ),
            ("GET", "/v1/lists/d", [:], nil),
            ("GET", "/v1/lists/d/changes?after=x:y", [:], nil),
        ]
        var covered = Set<String>()
        for (method, path, headers, body) in requests {
            let answer = try await gateway.request(method, path, headers: headers, body: body)
            let template = path.replacingOccurrences(of: "/lists/d", with: "/lists/{list}").components(
                separatedBy: "?")[0]
            covered.insert("\(method) \(template)")
            let operation = try #require(
                ((spec["paths"] as? [String: Any])?[template] as? [String: Any])?[method.lowercased()] as? [String: Any]
            )
            let responses = operation["responses"] as? [String: Any] ?? [:]
            let documented = try #require(
                responses["\(answer.status)"] as? [String: Any],
                "\(method) \(path): \(answer.status) is not in the spec: \(answer)")
            let content = documented["content"] as? [String: Any] ?? [:]
            let type = answer.headers["content-type"] ?? ""
            #expect(content[type] != nil, "\(method) \(path): \(type) not documented for \(answer.status)")
            if let media = content[type] as? [String: Any],
                let object = try? JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Any]
            {
                let required = Self.schema(media["schema"], in: spec)["required"] as? [String] ?? []
                for key in required {
                    #expect(object[key] != nil, "\(method) \(path): \(key) missing in \(answer.text.prefix(200))")
                }
            }
        }
        // The SSE route's success: its events' data against ListSnapshot and Diff.
        let stream = try await RawConnection.connect(
            port: gateway.port, firstBytes: "GET /v1/lists/d/changes HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(
            await stream.waitUntil(timeout: .seconds(10)) {
                String(decoding: $0.bytes, as: UTF8.self).contains("event: snapshot")
            })
        _ = try await gateway.request(
            "POST", "/v1/lists/d/mutations", body: #"{"operations":[{"op":"removeAllRows","section":"S"}]}"#)
        #expect(
            await stream.waitUntil(timeout: .seconds(10)) {
                ChangesStreamTests.events(String(decoding: $0.bytes, as: UTF8.self)).count >= 2
            })
        covered.insert("GET /v1/lists/{list}/changes")
        for event in ChangesStreamTests.events(stream.text) {
            let name = event.event == "snapshot" ? "ListSnapshot" : "Diff"
            let required =
                Self.schema(["$ref": "#/components/schemas/\(name)"], in: spec)["required"] as? [String] ?? []
            let object = try #require(try JSONSerialization.jsonObject(with: Data(event.data.utf8)) as? [String: Any])
            for key in required { #expect(object[key] != nil, "\(name).\(key)") }
        }
        stream.close()
        #expect(covered == Set(Self.specRoutes(spec)), "every documented route was hit")
        await gateway.stop()
        #expect(await server.stop())
    }
}
