import FlowSyncCore
import FlowSyncLoop
import FlowSyncProcess
import FlowSyncProtocol
import FlowSyncTLS
import FlowSyncTestSupport
import Foundation
import Testing

/// Independent TLS peers against a real `flowsyncd` (issue #32): `openssl s_client` and
/// Python's `ssl` module complete a handshake with the daemon and then speak the
/// protocol; `openssl s_client` asks to renegotiate and is closed; a SIGHUP reload of
/// a renewed certificate under load drops no connection.
@Suite(.serialized, .timeLimit(.minutes(4))) struct TLSPeerTests {
    static func config(
        _ certificates: TestCertificates, certificate: String? = nil, key: String? = nil, extra: String = ""
    ) -> String {
        """
        [tls]
        mode = "required"
        certificate_file = "\(certificate ?? certificates.serverCertificate)"
        key_file = "\(key ?? certificates.serverKey)"
        \(extra)
        """
    }

    static func start(_ text: String, metrics: Bool = false) async throws -> DaemonProcess {
        var options = DaemonProcess.Options(binary: try DaemonProcessTests.binary())
        options.configText = text
        options.metrics = metrics
        return try await DaemonProcess.start(options)
    }

    /// Every message in `bytes` (a server's byte stream), with the Welcome's dictionary.
    static func decode(_ bytes: [UInt8]) -> [Message] {
        let decoder = FrameDecoder(limits: .client)
        decoder.feed(bytes)
        var messages: [Message] = []
        while let message = try? decoder.next() {
            if case .welcome(let welcome) = message {
                decoder.dictionary = CompressionDictionary(welcomeBytes: welcome.dictionary)
            }
            messages.append(message)
        }
        return messages
    }

    @Test func opensslSClientHandshakesThenSpeaksTheProtocol() async throws {
        let certificates = try await TestCertificates.shared()
        let daemon = try await Self.start(Self.config(certificates))
        let directory = NSTemporaryDirectory() + "flowsync-sclient-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let encoder = FrameEncoder()
        // Hello, Subscribe, Ping; then a second Hello, which the daemon answers with an
        // error and a close — so s_client (which waits for the server, -quiet) exits.
        let input = [
            encoder.encode(
                .hello(
                    Hello(minVersion: 1, maxVersion: 1, clientName: "s_client", clientID: "s_client", authToken: nil))),
            encoder.encode(.subscribe(Subscribe(listName: "peers", resumeFrom: nil, digest: nil))),
            encoder.encode(.ping(Ping(nonce: 7))),
            encoder.encode(
                .hello(
                    Hello(minVersion: 1, maxVersion: 1, clientName: "s_client", clientID: "s_client", authToken: nil))),
        ].flatMap { $0 }
        try Data(input).write(to: URL(fileURLWithPath: "\(directory)/in.bin"))
        let script = """
            openssl s_client -connect 127.0.0.1:\(daemon.port) -servername localhost -CAfile '\(certificates.caFile)' \
              -verify_return_error -alpn flowsync -quiet < '\(directory)/in.bin' > '\(directory)/out.bin' 2> '\(directory)/err.txt'
            echo "status $?"; cat '\(directory)/err.txt'
            """
        let result = try await ChildProcess.run("/bin/sh", arguments: ["-c", script], timeout: .seconds(60))
        let output = [UInt8](try Data(contentsOf: URL(fileURLWithPath: "\(directory)/out.bin")))
        let messages = Self.decode(output)
        let kinds = messages.map { "\($0.type)" }
        #expect(kinds.count >= 4, "\(kinds) — \(result.output)")
        guard messages.count >= 4 else {
            _ = await daemon.terminate()
            return
        }
        if case .welcome = messages[0] {} else { Issue.record("first: \(messages[0])") }
        #expect(
            messages.contains { if case .snapshot(let s) = $0 { return s.listName == "peers" } else { return false } })
        #expect(messages.contains { if case .pong(let p) = $0 { return p.nonce == 7 } else { return false } })
        #expect(
            messages.contains {
                if case .error(let e) = $0 { return e.code == .unexpectedMessage } else { return false }
            })
        #expect(result.output.contains("verify return:1") || result.output.contains("status 0"), "\(result.output)")
        #expect(await daemon.terminate() == .exited(0), "\(daemon.output)")
    }

    /// The daemon's own record layer (the default for TLS 1.3) against OpenSSL's
    /// `s_client`, KeyUpdates included: `K` asks the daemon for its own KeyUpdate, `k`
    /// does not (`-quiet -no_ign_eof` keeps s_client's command letters). A pong after
    /// each proves both sides moved to the new keys.
    @Test func opensslSClientKeyUpdatesAreFollowedByTheOwnRecordLayer() async throws {
        let certificates = try await TestCertificates.shared()
        let daemon = try await Self.start(Self.config(certificates))
        let directory = NSTemporaryDirectory() + "flowsync-sclient-ku-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let encoder = FrameEncoder()
        let hello = encoder.encode(
            .hello(Hello(minVersion: 1, maxVersion: 1, clientName: "s_client", clientID: "s_client", authToken: nil)))
        let files: [(String, [UInt8])] = [
            ("a", hello + encoder.encode(.ping(Ping(nonce: 1)))),
            ("b", encoder.encode(.ping(Ping(nonce: 2)))),
            ("c", encoder.encode(.ping(Ping(nonce: 3)))),
            ("d", hello),  // a second Hello: the daemon answers with an error and closes
        ]
        for (name, bytes) in files {
            try Data(bytes).write(to: URL(fileURLWithPath: "\(directory)/\(name).bin"))
        }
        let script = """
            d='\(directory)'
            (cat "$d/a.bin"; sleep 1; printf 'K\\n'; sleep 0.5; cat "$d/b.bin"; sleep 0.5; printf 'k\\n'; sleep 0.5; \\
             cat "$d/c.bin"; sleep 0.5; printf 'K\\n'; sleep 0.5; cat "$d/d.bin"; sleep 5) | \\
            openssl s_client -connect 127.0.0.1:\(daemon.port) -servername localhost -CAfile '\(certificates.caFile)' \\
              -verify_return_error -alpn flowsync -tls1_3 -quiet -no_ign_eof > "$d/out.bin" 2> "$d/err.txt"
            echo "status $?"; cat "$d/err.txt"
            """
        let result = try await ChildProcess.run("/bin/sh", arguments: ["-c", script], timeout: .seconds(60))
        let output = [UInt8](try Data(contentsOf: URL(fileURLWithPath: "\(directory)/out.bin")))
        let messages = Self.decode(output)
        let pongs = messages.compactMap { if case .pong(let p) = $0 { return p.nonce } else { return nil } }
        #expect(pongs == [1, 2, 3], "\(messages.map { "\($0.type)" }) — \(result.output)")
        #expect(result.output.contains("KEYUPDATE"), "\(result.output)")
        #expect(
            messages.contains {
                if case .error(let e) = $0 { return e.code == .unexpectedMessage } else { return false }
            })
        let statistics = await daemon.terminate()
        #expect(statistics == .exited(0), "\(daemon.output)")
    }

    @Test func pythonSSLHandshakesThenSpeaksTheProtocol() async throws {
        let certificates = try await TestCertificates.shared()
        let daemon = try await Self.start(Self.config(certificates))
        let script = BuiltProduct.root.appendingPathComponent("clients/python/live_check.py").path
        // live_check: a writer and a subscriber, seeded mutations of every kind, every
        // Diff applied and its digest checked — over TLS (ALPN flowsync, name checked).
        let result = try await ChildProcess.run(
            "/usr/bin/env",
            arguments: [
                "python3", script, "--port", "\(daemon.port)", "--tls", "--cafile", certificates.caFile,
                "--no-system-trust", "--server-name", "localhost", "--count", "40", "--seed", "32", "--duration", "60",
            ], timeout: .seconds(90))
        #expect(result.status == 0, "\(result)")
        #expect(result.output.contains("0 digest mismatches"), "\(result.output)")
        // The same client refuses a server whose certificate it cannot trust, and a pin
        // that does not match, before sending anything.
        let refusals = try await ChildProcess.run(
            "/usr/bin/env",
            arguments: [
                "python3", "-c",
                """
                import sys; sys.path.insert(0, sys.argv[1])
                import flowsync_tls, ssl
                for name, kwargs in [("untrusted", {}), ("wrong name", {"cafile": sys.argv[3], "server_name": "other.example"}),
                                     ("pin", {"system_trust": False, "pins": ["00" * 32]}),
                                     ("downgrade refused", {"cafile": sys.argv[3]})]:
                    try:
                        if name == "downgrade refused":
                            ctx = flowsync_tls.client_context(cafile=sys.argv[3]); ctx.maximum_version = ssl.TLSVersion.TLSv1_2
                            import socket; ctx.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[2]))), server_hostname="localhost")
                        else:
                            flowsync_tls.open_connection("127.0.0.1", int(sys.argv[2]), tls=True, **kwargs)
                        print(name, "CONNECTED")
                    except (ssl.SSLError, flowsync_tls.TLSRefused) as e:
                        print(name, "REFUSED", type(e).__name__)
                """, BuiltProduct.root.appendingPathComponent("clients/python").path, "\(daemon.port)",
                certificates.caFile,
            ])
        #expect(
            !refusals.output.contains("CONNECTED") && refusals.output.components(separatedBy: "REFUSED").count == 5,
            "\(refusals)")
        #expect(await daemon.terminate() == .exited(0), "\(daemon.output)")
    }

    @Test func opensslRenegotiationIsRefusedWithAClose() async throws {
        let certificates = try await TestCertificates.shared()
        let daemon = try await Self.start(Self.config(certificates, extra: "min_version = \"1.2\""), metrics: true)
        // "R" on s_client's input asks for a renegotiation (TLS 1.2); the daemon refuses
        // it and closes, and s_client exits at once, long before its input ends (the
        // pipeline itself lasts as long as the input's `sleep`).
        let script = """
            start=$(date +%s)
            (printf 'R\\n'; sleep 8) | { openssl s_client -connect 127.0.0.1:\(daemon.port) -servername localhost \\
              -CAfile '\(certificates.caFile)' -tls1_2 2>&1; echo "ended after $(( $(date +%s) - start )) s"; }
            """
        let result = try await ChildProcess.run("/bin/sh", arguments: ["-c", script], timeout: .seconds(60))
        #expect(result.output.contains("RENEGOTIATING"), "\(result.output)")
        let seconds = result.output.components(separatedBy: "ended after ").last.flatMap {
            Int($0.prefix { $0.isNumber })
        }
        #expect(
            seconds != nil && seconds! < 6, "s_client ran \(seconds.map { "\($0)" } ?? "?") s: the daemon did not close"
        )
        let metricsPort = try #require(daemon.metricsPort)
        let scrape = try MetricsTests.get(port: metricsPort, path: "/metrics").body
        #expect(
            scrape.contains("flowsync_tls_failures_total{reason=\"renegotiation\"} 1"),
            "\(scrape.split(separator: "\n").filter { $0.contains("tls") })")
        #expect(await daemon.terminate() == .exited(0), "\(daemon.output)")
    }

    @Test func aCertificateReloadUnderLoadDropsNoConnection() async throws {
        let certificates = try await TestCertificates.shared()
        // The daemon's files are copies, replaced in place as a renewal would.
        let directory = NSTemporaryDirectory() + "flowsync-reload-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        func install(_ name: String) throws {
            for (from, to) in [("\(name).pem", "cert.pem"), ("\(name).key", "key.pem")] {
                try? FileManager.default.removeItem(atPath: "\(directory)/\(to)")
                try FileManager.default.copyItem(atPath: certificates.path(from), toPath: "\(directory)/\(to)")
            }
        }
        try install("server")
        let daemon = try await Self.start(
            Self.config(certificates, certificate: "\(directory)/cert.pem", key: "\(directory)/key.pem"),
            metrics: true)
        let thread = try EventLoopThread()
        let context = try certificates.clientContext()
        let subscribers = 200
        var clients: [TestClient] = []
        for index in 0..<subscribers {
            let client = try await TestClient.connect(
                port: daemon.port, on: thread, clientID: "sub-\(index)", tls: context)
            client.send(.subscribe(Subscribe(listName: "reload", resumeFrom: nil, digest: nil)))
            clients.append(client)
        }
        for client in clients {
            #expect(await client.waitFor { if case .snapshot = $0 { return true } else { return false } } != nil)
        }
        let oldLeaf = try #require(clients[0].tlsInfo?.peerChainSHA256.first)
        let writer = try await TestClient.connect(port: daemon.port, on: thread, clientID: "writer", tls: context)
        writer.send(
            .mutate(
                Mutate(
                    listName: "reload", clientID: "writer", seq: 1, base: ListVersion(epoch: 0, version: 0),
                    operations: [.insertSections([Section(id: "s")], at: 0)])))
        // Writes keep coming while the certificate is replaced: one every 5 ms.
        var seq: UInt64 = 1
        var reloadedLeaf: [UInt8]?
        var refusedKept = false
        for step in 0..<300 {
            seq += 1
            writer.send(
                .mutate(
                    Mutate(
                        listName: "reload", clientID: "writer", seq: seq, base: ListVersion(epoch: 0, version: 0),
                        operations: [
                            .insertRows([Row(id: "r\(seq)", kind: "cell", text: "\(seq)")], in: .id("s"), at: 0)
                        ])))
            try await Task.sleep(for: .milliseconds(5))
            if step == 100 {
                // A bad pair first (the key of another certificate): refused, old one kept.
                try FileManager.default.removeItem(atPath: "\(directory)/key.pem")
                try FileManager.default.copyItem(
                    atPath: certificates.path("server2.key"), toPath: "\(directory)/key.pem")
                daemon.signal(SIGHUP)
            }
            if step == 150 {
                let probe = try await TestClient.connect(port: daemon.port, on: thread, tls: context)
                refusedKept = probe.tlsInfo?.peerChainSHA256.first == oldLeaf
                probe.close()
                try install("server2")
                daemon.signal(SIGHUP)
            }
            if step == 250 {
                let probe = try await TestClient.connect(port: daemon.port, on: thread, tls: context)
                reloadedLeaf = probe.tlsInfo?.peerChainSHA256.first
                probe.close()
            }
        }
        #expect(refusedKept, "after a refused reload the daemon did not serve its old certificate")
        #expect(reloadedLeaf != nil && reloadedLeaf != oldLeaf, "new handshakes do not see the new certificate")
        #expect(
            await writer.waitFor(timeout: 60) { if case .ack(let a) = $0 { return a.seq == seq } else { return false } }
                != nil)
        // Every subscriber is still connected and has every row, in order, digest checked.
        let dropped = clients.filter(\.isClosed).count
        #expect(dropped == 0, "\(dropped) connections dropped")
        for client in clients {
            #expect(
                await eventually(timeout: 60) {
                    var r = Replica()
                    r.apply(client.messages, list: "reload")
                    return r.director.rowCount == Int(seq) - 1
                })
            var replica = Replica()
            replica.apply(client.messages, list: "reload")
            #expect(replica.problems.isEmpty, "\(replica.problems)")
        }
        let scrape = try MetricsTests.get(port: try #require(daemon.metricsPort), path: "/metrics").body
        #expect(
            scrape.contains("flowsync_tls_certificate_loads_total{result=\"refused\"} 1"),
            "\(scrape.split(separator: "\n").filter { $0.contains("tls") })")
        #expect(scrape.contains("flowsync_tls_certificate_loads_total{result=\"ok\"} 2"))
        #expect(daemon.output.contains("key.pem"), "the refusal does not name the file:\n\(daemon.output)")
        print(
            "tls-reload: \(subscribers) TLS subscribers, \(seq - 1) writes during two reloads (one refused), \(dropped) dropped"
        )
        for client in clients { client.close() }
        writer.close()
        _ = thread.shutdown()
        #expect(await daemon.terminate() == .exited(0), "\(daemon.output)")
    }
}
