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

    /// The limits' flags: a value out of range stops the binary before it binds (exit 64,
    /// the flag, the value and the range in the message), and a WebSocket limit set by its
    /// flag is the one a socket meets (`--ws-max-message-bytes 2048`: a 3,000-byte message
    /// gets close 1009, a 1,500-byte one an answer).
    @Test func limitFlagsAreCheckedAndReachTheWebSocket() async throws {
        let binary = try BuiltProduct.path("flowsync-gateway")
        for (argument, message) in [
            ("--ws-ping-ms=0", "--ws-ping-ms must be from 100 to 86400000 ms, got 0"),
            ("--ws-max-message-bytes=100", "--ws-max-message-bytes must be from 1024 to 1073741824 bytes, got 100"),
            ("--max-body-bytes=-1", "--max-body-bytes must be from 1 to 1073741824 bytes, got -1"),
        ] {
            let refused = try await ChildProcess.run(
                binary, arguments: ["--listen", "127.0.0.1:0", argument], timeout: .seconds(30))
            #expect(refused.status == 64, "\(argument): \(refused.termination) \(refused.output)")
            #expect(refused.output.contains(message), "\(refused.output)")
            #expect(!refused.output.contains("listening on"), "refused before binding")
        }

        let server = try await EmbeddedServer()
        let child = try await ChildProcess.start(
            binary,
            arguments: [
                "--listen", "127.0.0.1:0", "--daemon", "127.0.0.1:\(server.port)", "--log-level", "warning",
                "--ws-max-message-bytes", "2048",
            ])
        let port = await child.waitForLine(timeout: .seconds(30)) { line -> Int? in
            guard line.hasPrefix("listening on 127.0.0.1:") else { return nil }
            return Int(line.split(separator: ":").last ?? "")
        }
        let bound = try #require(port, "no 'listening on' line: \(child.output)")
        let socket = try await WebSocketTestClient(port: bound)
        let padding = String(repeating: " ", count: 1_500)
        socket.send(#"{"type":"unsubscribe","list":"nothing"}"# + padding)
        #expect(await socket.waitUntil { $0.count == 1 }, "under the limit: answered (not-subscribed)")
        #expect(!socket.ended)
        socket.send(#"{"type":"unsubscribe","list":"nothing"}"# + padding + padding)
        #expect(await socket.waitUntilEnded())
        #expect(socket.closeCode == 1009, "\(String(describing: socket.closeCode)) \(socket.texts)")
        await socket.close()
        child.signal(SIGTERM)
        #expect(await child.waitForExit(timeout: .seconds(20))?.status == 0, "\(child.output)")
        #expect(await server.stop())
    }

    /// Issue #31: webhooks "across a gateway kill and restart". The binary delivers to a
    /// receiver failing 20 % of attempts (seeded), is killed with SIGKILL mid-stream,
    /// batches commit while it is down, and a new process on the same --state-dir resumes
    /// from its cursor file. Every batch arrives; keys only grow; a repeated key carries
    /// the same body; each delivery starts where the previous ended, the first after the
    /// kill too (the delivery in flight is saved before it is POSTed, and repeated
    /// whole: docs/GATEWAY.md, "Delivery guarantees").
    /// A gateway binary on `state` with hook `k` (list `w`) to `receiver`.
    static func hookedGateway(
        server: EmbeddedServer, receiver: WebhookReceiver, state: String, environment: [String: String?] = [:]
    ) async throws -> ChildProcess {
        let child = try await ChildProcess.start(
            try BuiltProduct.path("flowsync-gateway"),
            arguments: [
                "--listen", "127.0.0.1:0", "--daemon", "127.0.0.1:\(server.port)", "--log-level", "warning",
                "--state-dir", state,
                "--webhook", "name=k,url=\(receiver.url.absoluteString),lists=w,secret-file=\(state)/k.secret",
            ],
            environment: environment)
        let up = await child.waitForLine(timeout: .seconds(30)) { $0.hasPrefix("listening on") ? true : nil }
        if up != true { Issue.record("no 'listening on' line: \(child.output)") }
        return child
    }

    /// Issue #31: "duplicates only carry the same version", across a gateway death in
    /// the one window a signal hits only by luck: after the receiver's 2xx, before the
    /// gateway saved anything (the test hook `FLOWSYNC_GATEWAY_TEST_EXIT_AFTER_DELIVERIES`
    /// exits there, at the 6th 2xx). Batches commit while it is down; the restarted
    /// process POSTs the delivery saved as in flight again — the same key and the same
    /// body — then resumes after it. So every delivery starts exactly where the one
    /// before it ended, the 6th key arrives twice, and nothing arrives under a new key
    /// that the receiver had already seen. (Saving only the cursor, the restart resumed
    /// one delivery back and the daemon's catch-up repeated the 6th batch's changes
    /// under a newer key.)
    @Test func aGatewayDeadBetweenA2xxAndItsSaveRepeatsTheSameDeliveryNotItsChanges() async throws {
        let server = try await EmbeddedServer()
        let receiver = try await WebhookReceiver(failureRate: 0.2, seed: 2_026)
        let state = NSTemporaryDirectory() + "flowsync-gateway-2xx-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: state) }
        try WebhookTests.secret.write(toFile: state + "/k.secret", atomically: true, encoding: .utf8)
        let writer = try await GatewayHarness(server: server)
        _ = try await ChangesStreamTests.post(
            writer, "w", #"[{"op":"insertSections","at":0,"sections":[{"id":"S"}]}]"#)
        var child = try await Self.hookedGateway(
            server: server, receiver: receiver, state: state,
            environment: ["FLOWSYNC_GATEWAY_TEST_EXIT_AFTER_DELIVERIES": "6"])
        _ = try await WebhookTests.write(writer, 12)
        let exit = await child.waitForExit(timeout: .seconds(30))
        #expect(exit?.status == 137, "the test hook ended the process: \(child.output.suffix(1_000))")
        let deliveredBefore = receiver.accepted.filter { $0.hook == "k" }
        let last = try #require(deliveredBefore.last, "the 6th delivery was accepted before the exit")
        let second = try await WebhookTests.write(writer, 8, from: 100)
        child = try await Self.hookedGateway(server: server, receiver: receiver, state: state)
        #expect(
            await receiver.waitFor(hook: "k", version: second, timeout: .seconds(60)),
            "reached \(receiver.accepted.last?.key ?? "nothing") of \(second): \(child.output.suffix(2_000))")
        let accepted = receiver.accepted.filter { $0.hook == "k" }
        let after = accepted.dropFirst(deliveredBefore.count)
        #expect(
            after.first?.key == last.key && after.first?.body == last.body,
            "the restart first repeats the delivery it never saved: \(after.first?.key ?? "nothing") after \(last.key)")
        // Strictly contiguous across the death: a key seen twice is the same delivery.
        WebhookTests.checkContiguous(receiver.accepted, hook: "k")
        var bodies: [String: [UInt8]] = [:]
        for d in accepted {
            #expect(bodies[d.key, default: d.body] == d.body, "\(d.key) arrived with two bodies")
            bodies[d.key] = d.body
        }
        print("gateway dead after a 2xx: the 6th delivery \(last.key) repeated, \(accepted.count) in all")
        child.signal(SIGTERM)
        #expect(await child.waitForExit(timeout: .seconds(20))?.status == 0, "\(child.output)")
        await writer.stop()
        await receiver.stop()
        #expect(await server.stop())
    }

    @Test func aGatewayKilledWithSIGKILLResumesFromItsCursorFileWithoutAGap() async throws {
        let server = try await EmbeddedServer()
        let receiver = try await WebhookReceiver(failureRate: 0.2, seed: 1_731)
        let state = NSTemporaryDirectory() + "flowsync-gateway-kill-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: state) }
        try WebhookTests.secret.write(toFile: state + "/k.secret", atomically: true, encoding: .utf8)
        func start() async throws -> ChildProcess {
            try await Self.hookedGateway(server: server, receiver: receiver, state: state)
        }
        let writer = try await GatewayHarness(server: server)  // writes only; no hooks
        var child = try await start()
        _ = try await ChangesStreamTests.post(
            writer, "w", #"[{"op":"insertSections","at":0,"sections":[{"id":"S"}]}]"#)
        let first = try await WebhookTests.write(writer, 20)
        // Mid-stream: once a few batches arrived, SIGKILL.
        #expect(await receiver.waitFor(hook: "k", version: 4))
        // The receiver refuses from now on, so nothing of the killed process is accepted
        // after `before` is read (a POST it had fully sent would otherwise be recorded
        // late, and taken for the restarted process's first delivery).
        receiver.setDown(true)
        let before = receiver.accepted.count
        child.signal(SIGKILL)
        #expect(await child.waitForExit(timeout: .seconds(20))?.status != 0)
        let second = try await WebhookTests.write(writer, 10, from: 100)
        #expect(second > first)
        receiver.setDown(false)
        child = try await start()
        #expect(
            await receiver.waitFor(hook: "k", version: second, timeout: .seconds(60)),
            "reached \(receiver.accepted.last?.key ?? "nothing") of \(second): \(child.output.suffix(2_000))")
        let accepted = receiver.accepted.filter { $0.hook == "k" }
        var previous: WebhookReceiver.Delivery?
        for d in accepted {
            if let p = previous, p.key == d.key {
                #expect(p.body == d.body, "a duplicate carries the same body: \(d.key)")
                continue
            }
            if let p = previous {
                #expect(d.version > p.version, "\(d.key) goes back from \(p.key)")
                if d.type != "snapshot", let from = d.fromVersion.map(UInt64.init) {
                    // The first after the kill too: a delivery left unanswered is repeated
                    // whole (the same key), never re-covered by a catch-up from before it.
                    #expect(from == p.version, "\(d.key) (\(d.type)) follows \(p.key)")
                }
            }
            previous = d
        }
        // Resumed from the cursor file (after repeating a delivery left in flight, if
        // any): a catch-up, or a snapshot because it is smaller (`resumeTooOld`), never a
        // first sight (`freshSubscribe`).
        let resumed = accepted.dropFirst(before).first { $0.type == "catchUp" || $0.type == "snapshot" }
        #expect(
            resumed?.type == "catchUp" || resumed?.object["reason"] as? String == "resumeTooOld",
            "resumed from the cursor file: \(resumed?.type ?? "nothing") \(resumed?.object["reason"] ?? "")")
        print(
            "gateway SIGKILL: \(before) deliveries before the kill, \(accepted.count) in all, last \(accepted.last?.key ?? "-")"
        )
        child.signal(SIGTERM)
        #expect(await child.waitForExit(timeout: .seconds(20))?.status == 0, "\(child.output)")
        await writer.stop()
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
