import Dispatch
import FlowSyncCore
import FlowSyncProcess
import FlowSyncServer
import FlowSyncTestSupport
import Foundation
import Testing

@testable import FlowSyncClient

/// The SDK's Linux transport (``LibUVTransport``) and the `flowsync` CLI over TLS
/// against the daemon's own TLS (issue #32), with the options the Apple transport has
/// (``TLSPolicy``): system trust plus a private CA, pins, the server name, and the
/// refusals every client must make — an expired certificate, a wrong host name, an
/// untrusted CA, a pin mismatch, a server that only speaks an old TLS — before its Hello
/// (and token) leaves.
@Suite(.serialized, .timeLimit(.minutes(4))) struct ClientTLSTests {
    static func server(
        certificate: String = "server", _ adjust: (inout ServerConfiguration) -> Void = { _ in }
    ) async throws -> EmbeddedServer {
        let certificates = try await TestCertificates.shared()
        var configuration = ServerConfiguration()
        configuration.tls = certificates.serverTLS(certificate: certificate)
        adjust(&configuration)
        return try await EmbeddedServer(configuration: configuration)
    }

    /// TLS to `localhost` (loopback, so `.required`), trusting the test CA.
    static func policy(trustingTestCA: Bool = true) async throws -> TLSPolicy {
        var policy = TLSPolicy(mode: .required)
        if trustingTestCA { policy.additionalTrustedRoots = [try await TestCertificates.shared().der("ca.pem")] }
        return policy
    }

    static func client(
        port: Int, policy: TLSPolicy, id: String = "tls-\(UInt32.random(in: 0...UInt32.max))"
    ) throws -> FlowSyncClient {
        try FlowSyncClient(
            configuration: .init(
                host: "localhost", port: port, clientID: id,
                reconnect: ReconnectPolicy(initialDelayMilliseconds: 50, maxDelayMilliseconds: 200),
                callbackQueue: DispatchQueue(label: "callbacks-\(id)"), randomSeed: 1, tls: policy))
    }

    /// Every status the client reported, in order.
    final class StatusLog: Sendable {
        private let statuses = Locked<[ConnectionStatus]>([])
        let token: ObservationToken
        init(_ client: FlowSyncClient) {
            let statuses = self.statuses
            token = client.observeStatus { status in statuses.withLock { $0.append(status) } }
        }
        var all: [ConnectionStatus] { statuses.withLock { $0 } }
        var everConnected: Bool { all.contains { if case .connected = $0 { return true } else { return false } } }
        var reasons: [String] {
            all.compactMap { if case .disconnected(let reason, _) = $0 { return reason } else { return nil } }
        }
    }

    @Test func theSDKSyncsOverTLS() async throws {
        let server = try await Self.server()
        let policy = try await Self.policy()
        let writer = try Self.client(port: server.port, policy: policy, id: "tls-writer")
        let reader = try Self.client(port: server.port, policy: policy, id: "tls-reader")
        defer {
            writer.close()
            reader.close()
        }
        let list = writer.director("tls/sdk")
        try await list.waitUntilLoaded()
        try await list.add(section: NewSection(id: "s", models: [Contact(id: "1", name: "Ada")])).committed()
        let mirror = reader.director("tls/sdk")
        try await mirror.waitUntilLoaded()
        #expect(await ClientTests.settled(mirror, server: server))
        #expect(try mirror.section(id: "s")?.snapshot?.models(as: Contact.self) == [Contact(id: "1", name: "Ada")])
        let stats = try #require(await server.withServer { $0.tlsStatistics })
        #expect(stats.handshakes >= 2 && stats.handshakesByVersion["TLSv1.3"] == stats.handshakes)
        writer.close()
        reader.close()
        #expect(await server.stop())
    }

    /// A client that must refuse: it never reaches `.connected`, and says why.
    func expectRefusal(_ server: EmbeddedServer?, port: Int? = nil, policy: TLSPolicy, reason: String) async throws {
        let client = try Self.client(port: port ?? server!.port, policy: policy)
        let log = StatusLog(client)
        defer { client.close() }
        #expect(
            await ClientTests.until(timeout: 20) { log.reasons.contains { $0.contains(reason) } },
            "\(reason): \(log.all)")
        #expect(!log.everConnected, "\(reason): connected anyway")
        if let server {
            // No Hello reached the daemon: no connection ever got past its handshake.
            #expect(await server.withServer { $0.statistics.connectionsCurrent } <= 1)
        }
    }

    @Test func theSDKRefusesExpiredWrongNameUntrustedAndUnpinned() async throws {
        let certificates = try await TestCertificates.shared()
        let expired = try await Self.server(certificate: "expired")
        try await expectRefusal(expired, policy: Self.policy(), reason: "certificate_expired")
        #expect(await expired.stop())

        let wrongName = try await Self.server(certificate: "wronghost")
        try await expectRefusal(wrongName, policy: Self.policy(), reason: "hostname_mismatch")
        #expect(await wrongName.stop())

        let good = try await Self.server()
        // The test CA is not in the system's store.
        try await expectRefusal(good, policy: Self.policy(trustingTestCA: false), reason: "untrusted")
        var named = try await Self.policy()
        named.serverName = "other.example"
        try await expectRefusal(good, policy: named, reason: "hostname_mismatch")
        var pinned = try await Self.policy()
        pinned.pinnedCertificateSHA256 = [[UInt8](repeating: 0x42, count: 32)]
        try await expectRefusal(good, policy: pinned, reason: "pin_mismatch")
        var hook = try await Self.policy()
        hook.verify = { _, _ in false }
        try await expectRefusal(good, policy: hook, reason: "refused_by_policy")
        #expect(await good.stop())

        // A self-signed server is accepted on its pin alone (and refused without it).
        let selfSigned = try await Self.server(certificate: "selfsigned")
        try await expectRefusal(selfSigned, policy: Self.policy(), reason: "untrusted")
        let leaf = try #require(
            TLSPolicy.sha256Pin(hex: try await Self.fingerprint(certificates.path("selfsigned.pem"))))
        let client = try Self.client(
            port: selfSigned.port,
            policy: TLSPolicy(mode: .required, pinnedCertificateSHA256: [leaf], requiresSystemTrust: false))
        try await client.director("pinned").waitUntilLoaded()
        client.close()
        #expect(await selfSigned.stop())
    }

    @Test func theSDKRefusesAServerThatOnlySpeaksOldTLS() async throws {
        let certificates = try await TestCertificates.shared()
        // openssl s_server limited to TLS 1.1 (allowed only at security level 0): the
        // client offers 1.2 and 1.3 and never goes lower.
        let server = try await ChildProcess.start(
            "/usr/bin/openssl",
            arguments: [
                "s_server", "-accept", "127.0.0.1:0", "-cert", certificates.serverCertificate, "-key",
                certificates.serverKey,
                "-tls1_1", "-cipher", "DEFAULT:@SECLEVEL=0",
            ])
        let port = try #require(
            await server.waitForLine(timeout: .seconds(20)) { line -> Int? in
                guard line.hasPrefix("ACCEPT") else { return nil }
                return line.split(separator: ":").last.flatMap { Int($0) }
            })
        try await expectRefusal(nil, port: port, policy: Self.policy(), reason: "TLS")
        _ = await server.stop(gracePeriod: .seconds(2), signal: SIGKILL)
    }

    @Test func mutualTLS() async throws {
        let certificates = try await TestCertificates.shared()
        let server = try await Self.server {
            $0.tls.clientCertificates = .required
            $0.tls.clientCAFile = certificates.caFile
            $0.tls.principals = [
                .init(
                    subject: TestCertificates.clientSubject, name: "reporting", read: [ListPattern("*")!],
                    write: [ListPattern("*")!])
            ]
        }
        var policy = try await Self.policy()
        policy.clientIdentity = .init(
            certificateChainFile: certificates.path("client.pem"), privateKeyFile: certificates.path("client.key"))
        let client = try Self.client(port: server.port, policy: policy)
        let list = client.director("mtls")
        try await list.waitUntilLoaded()
        try await list.add(section: NewSection(id: "s", models: [Contact(id: "1", name: "Ada")])).committed()
        client.close()
        try await expectRefusal(server, policy: Self.policy(), reason: "certificate_required")
        #expect(await server.withServer { $0.tlsStatistics?.certificatePrincipals } == 1)
        #expect(await server.stop())
    }

    @Test func theCLIOverTLS() async throws {
        let certificates = try await TestCertificates.shared()
        let daemon = try await ReadmeCLITests.daemon(
            config: """
                [tls]
                mode = "required"
                certificate_file = "\(certificates.serverCertificate)"
                key_file = "\(certificates.serverKey)"
                """)
        let (directory, path) = try ReadmeCLITests.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let base = "flowsync --host localhost --port \(daemon.port) --timeout 5 --tls"
        let insert = try await ReadmeCLITests.sh(
            "\(base) --cacert '\(certificates.caFile)' insert todo --section inbox --id r1 --json '{\"t\":1}'",
            in: directory, path: path)
        #expect(insert.status == 0, "\(insert)")
        let pin = try await Self.fingerprint(certificates.serverCertificate)
        let get = try await ReadmeCLITests.sh(
            "\(base) --no-system-trust --pin \(pin) get todo", in: directory, path: path)
        #expect(get.status == 0 && get.output.contains("r1"), "\(get)")
        // Refused: no trust in the test CA, a wrong pin, a wrong name, plaintext to a TLS port.
        for (options, reason) in [
            ("", "untrusted"), ("--no-system-trust --pin \(String(repeating: "00", count: 32))", "pin_mismatch"),
            ("--cacert '\(certificates.caFile)' --server-name other.example", "hostname_mismatch"),
        ] {
            let run = try await ReadmeCLITests.sh("\(base) \(options) get todo", in: directory, path: path)
            #expect(run.status == 2 && run.errorOutput.contains(reason), "\(options)\n\(run)")
        }
        let plain = try await ReadmeCLITests.sh(
            "flowsync --host 127.0.0.1 --port \(daemon.port) --timeout 3 get todo", in: directory, path: path)
        #expect(plain.status == 2, "\(plain)")
        #expect(await daemon.terminate() == .exited(0), "\(daemon.output)")
    }

    /// `openssl x509 -fingerprint -sha256` of a certificate: the pin a user copies.
    static func fingerprint(_ file: String) async throws -> String {
        let result = try await ChildProcess.run(
            "/usr/bin/openssl", arguments: ["x509", "-noout", "-fingerprint", "-sha256", "-in", file])
        return String(result.output.split(separator: "=").last ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
