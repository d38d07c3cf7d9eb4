import FlowSyncProcess
import FlowSyncTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The `flowsync-gateway` executable and its systemd unit.
@Suite(.timeLimit(.minutes(2))) struct GatewayProcessTests {
    static var unit: URL { BuiltProduct.root.appendingPathComponent("systemd/flowsync-gateway.service") }

    /// The binary on port 0 in front of a real daemon, with a webhook from its flags: it
    /// prints its port, serves, delivers, keeps the hook's cursor in --state-dir, and
    /// exits 0 on SIGTERM.
    @Test func theBinaryServesDeliversAndStopsOnSIGTERM() async throws {
        let server = try await EmbeddedServer()
        let receiver = try await WebhookReceiver()
        let state = NSTemporaryDirectory() + "flowsync-gateway-process-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: state) }
        try WebhookTests.secret.write(toFile: state + "/p.secret", atomically: true, encoding: .utf8)
        let binary = try BuiltProduct.path("flowsync-gateway")
        let child = try await ChildProcess.start(
            binary,
            arguments: [
                "--listen", "127.0.0.1:0", "--daemon", "127.0.0.1:\(server.port)", "--log-level", "warning",
                "--state-dir", state,
                "--webhook", "name=p,url=\(receiver.url.absoluteString),lists=p;q,secret-file=\(state)/p.secret",
            ])
        let port = await child.waitForLine(timeout: .seconds(30)) { line -> Int? in
            guard line.hasPrefix("listening on 127.0.0.1:") else { return nil }
            return Int(line.split(separator: ":").last ?? "")
        }
        let bound = try #require(port, "no 'listening on' line: \(child.output)")
        let posted = try await RawConnection.request(
            port: bound, "POST", "/v1/lists/p/mutations",
            body: #"{"operations":[{"op":"insertSections","at":0,"sections":[{"id":"S"}]}]}"#)
        #expect(posted.status == 200, "\(posted)")
        let got = try await RawConnection.request(port: bound, "GET", "/v1/lists/p")
        #expect(got.status == 200 && got.text.contains(#""id":"S""#), "\(got)")
        #expect(await receiver.waitFor(hook: "p", version: 1), "\(child.output)")
        child.signal(SIGTERM)
        let termination = await child.waitForExit(timeout: .seconds(20))
        #expect(termination?.status == 0, "\(String(describing: termination)): \(child.output)")
        let cursor = try? String(contentsOfFile: state + "/webhooks/p/p.cursor", encoding: .utf8)
        #expect(cursor?.hasSuffix(":1\n") == true, "cursor file: \(cursor ?? "missing")")
        await receiver.stop()
        #expect(await server.stop())
    }

    @Test func theUnitVerifiesCleanlyAndIsHardened() async throws {
        let analyze = "/usr/bin/systemd-analyze"
        guard FileManager.default.isExecutableFile(atPath: analyze) else {
            Issue.record("\(analyze) is missing: install Debian's `systemd` package to run this test")
            return
        }
        let directory = NSTemporaryDirectory() + "flowsync-gateway-unit-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let unit = try String(contentsOf: Self.unit, encoding: .utf8)
        #expect(
            unit.contains("ExecStart=/usr/local/bin/flowsync-gateway "),
            "the shipped ExecStart changed; update this test")
        try unit.replacingOccurrences(
            of: "ExecStart=/usr/local/bin/flowsync-gateway ",
            with: "ExecStart=\(try BuiltProduct.path("flowsync-gateway")) "
        )
        .write(toFile: directory + "/flowsync-gateway.service", atomically: true, encoding: .utf8)
        let verify = try await ChildProcess.run(
            analyze, arguments: ["verify", "--man=no", directory + "/flowsync-gateway.service"],
            separateStandardError: true)
        #expect(verify.status == 0 && verify.errorOutput.isEmpty, "systemd-analyze verify: \(verify.errorOutput)")
        let security = try await ChildProcess.run(
            analyze, arguments: ["security", "--offline=yes", directory + "/flowsync-gateway.service"],
            separateStandardError: true)
        let exposure = security.output.split(separator: "\n").first { $0.contains("Overall exposure level") }
            .flatMap { $0.split(separator: ":").last?.split(separator: " ").first }.flatMap { Double($0) }
        #expect(
            exposure != nil && exposure! <= 2.0,
            "exposure \(exposure.map { "\($0)" } ?? "unparsed"): \(security.output.suffix(300))")
    }
}
