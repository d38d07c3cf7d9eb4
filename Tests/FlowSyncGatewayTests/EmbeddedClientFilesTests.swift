import FlowSyncTestSupport
import Foundation
import Testing

@testable import FlowSyncGateway

/// The files the gateway serves are clients/js's, byte for byte (scripts/embed-js-client.sh
/// regenerates the embedded copies), and they are served with their media types.
@Suite(.timeLimit(.minutes(1))) struct EmbeddedClientFilesTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    func file(_ path: String) throws -> String {
        var text = try String(contentsOf: Self.root.appendingPathComponent(path), encoding: .utf8)
        if text.hasSuffix("\n") { text.removeLast() }  // the literal ends before the last newline
        return text
    }

    @Test func theEmbeddedCopiesAreTheFiles() throws {
        #expect(
            EmbeddedClientFiles.flowsyncJS == (try file("clients/js/flowsync.js")),
            "clients/js/flowsync.js changed: run scripts/embed-js-client.sh")
        #expect(
            EmbeddedClientFiles.demoHTML == (try file("clients/js/demo.html")),
            "clients/js/demo.html changed: run scripts/embed-js-client.sh")
    }

    @Test func theGatewayServesThePageAndTheModule() async throws {
        let server = try await EmbeddedServer()
        let gateway = try await GatewayHarness(server: server)
        let page = try await gateway.request("GET", "/demo")
        #expect(page.status == 200 && page.headers["content-type"] == "text/html; charset=utf-8")
        #expect(page.text.contains(#"import { FlowSyncClient } from "/flowsync.js";"#))
        let module = try await gateway.request("GET", "/flowsync.js")
        #expect(module.status == 200 && module.headers["content-type"] == "text/javascript; charset=utf-8")
        #expect(module.body == Array(EmbeddedClientFiles.flowsyncJS.utf8))
        await gateway.stop()
        #expect(await server.stop())
    }
}
