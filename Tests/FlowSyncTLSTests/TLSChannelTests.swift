import FlowSyncProcess
@_spi(Testing) import FlowSyncTLS
import FlowSyncTestSupport
import Testing

/// The engine with real OpenSSL and real certificates, two channels wired in memory:
/// no socket, every byte moved by the test.
@Suite(.timeLimit(.minutes(2)))
struct TLSChannelTests {
    @Test func handshakeAndRecordsBothWays() async throws {
        let certificates = try await TestCertificates.shared()
        let pair = try MemoryPair(
            server: MemoryPair.options(certificates), client: MemoryPair.trustingTestCA(certificates))
        pair.client.send([Array("hello".utf8)])  // queued until the handshake completes
        pair.connect()
        let info = try #require(pair.server.established)
        #expect(info.protocolVersion == "TLSv1.3" && info.applicationProtocol == "flowsync")
        #expect(info.peerSubject == nil)  // no client certificate
        let clientInfo = try #require(pair.client.established)
        #expect(clientInfo.peerVerification == .trusted)
        #expect(clientInfo.peerSubject == "CN=localhost")
        #expect(
            clientInfo.peerChainSHA256.first
                == (try await TLSPinTestSupport.fingerprint(certificates.serverCertificate)))
        #expect(pair.server.received == Array("hello".utf8))
        // Many small frames become one record batch; a large one goes in chunks.
        var frames: [[UInt8]] = (0..<200).map { [UInt8](repeating: UInt8($0 & 0xff), count: 1 + $0) }
        frames.append([UInt8](repeating: 7, count: 1 << 20))
        pair.server.send(frames)
        pair.pump()
        #expect(pair.client.received == frames.flatMap { $0 })
        #expect(pair.client.failure == nil && pair.server.failure == nil)
    }

    @Test func aHandshakeDrippedByteByByteCompletes() async throws {
        let certificates = try await TestCertificates.shared()
        let pair = try MemoryPair(
            server: MemoryPair.options(certificates), client: MemoryPair.trustingTestCA(certificates))
        pair.connect(slice: 1)
        #expect(pair.server.established != nil && pair.client.established != nil)
        pair.client.send([[1, 2, 3]])
        pair.pump(slice: 1)
        #expect(pair.server.received == [1, 2, 3])
    }

    @Test func plaintextFramesAndGarbageAreNotTLS() async throws {
        let certificates = try await TestCertificates.shared()
        // A FlowSync Hello as a plaintext client sends it: length, type, "FSYN", …
        let hello: [UInt8] = [
            0, 0, 0, 20, 0x01, 0, 0x46, 0x53, 0x59, 0x4e, 0, 1, 0, 1, 4, 0x74, 0x65, 0x73, 0x74, 1, 0x61, 0,
        ]
        var random = SeededRandom(seed: 32)
        let garbage = (0..<512).map { _ in UInt8.random(in: 0...255, using: &random) }
        for input in [hello, garbage, Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8)] {
            let server = MemoryEnd(
                try TLSChannel(context: .server(MemoryPair.options(certificates)), scratch: TLSScratch()))
            var io = server.io
            input.withUnsafeBytes { server.channel.received($0, &io) }
            let failure = try #require(server.failure, "no failure for \(input.prefix(8))")
            #expect(failure.reason == .notTLS || failure.reason == .malformed, "\(failure)")
            // What the server answers is an alert record (type 21) or nothing: never a frame.
            #expect(server.outgoing.isEmpty || server.outgoing.first == 21)
        }
    }

    @Test func aTruncatedClientHelloEndsAtEOF() async throws {
        let certificates = try await TestCertificates.shared()
        let pair = try MemoryPair(
            server: MemoryPair.options(certificates), client: MemoryPair.trustingTestCA(certificates))
        var io = pair.client.io
        pair.client.channel.start(&io)
        let hello = pair.client.outgoing
        pair.client.outgoing = []
        var serverIO = pair.server.io
        hello.prefix(hello.count / 2).withUnsafeBytes { pair.server.channel.received($0, &serverIO) }
        #expect(pair.server.ended == nil && pair.server.outgoing.isEmpty)
        pair.server.channel.transportEnded(&serverIO)
        #expect(pair.server.failure?.reason == .closedDuringHandshake)
    }

    @Test func theHandshakeBudget() async throws {
        let certificates = try await TestCertificates.shared()
        let pair = try MemoryPair(
            server: MemoryPair.options(certificates), client: MemoryPair.trustingTestCA(certificates),
            handshakeLimit: 100)
        pair.connect()
        #expect(pair.server.failure?.reason == .handshakeTooLarge)
    }

    @Test func versionFloorsRefuseADowngrade() async throws {
        let certificates = try await TestCertificates.shared()
        // A client that can only do TLS 1.2 against the default server (1.3 at least).
        var old = try MemoryPair.trustingTestCA(certificates)
        old.maximumVersion = .tls12
        let refused = try MemoryPair(server: MemoryPair.options(certificates), client: old)
        refused.connect()
        #expect(refused.server.failure?.reason == .protocolVersion)
        #expect(refused.client.failure?.reason == .protocolVersion)
        // A server that can only do 1.2 against a client that wants 1.3.
        var server = MemoryPair.options(certificates)
        server.minimumVersion = .tls12
        server.maximumVersion = .tls12
        var modern = try MemoryPair.trustingTestCA(certificates)
        modern.minimumVersion = .tls13
        let downgrade = try MemoryPair(server: server, client: modern)
        downgrade.connect()
        #expect(downgrade.client.failure?.reason == .protocolVersion)
        // 1.2 allowed by configuration: it works.
        let allowed = try MemoryPair(server: server, client: old)
        allowed.connect()
        #expect(allowed.server.established?.protocolVersion == "TLSv1.2")
    }

    @Test func theClientSeesWhatIsWrongWithAChain() async throws {
        let certificates = try await TestCertificates.shared()
        let cases: [(String, String, TLSError.Reason)] = [
            ("expired", "localhost", .certificateExpired),
            ("wronghost", "localhost", .hostnameMismatch),
            ("server", "other.example", .hostnameMismatch),
            ("server", "127.0.0.2", .hostnameMismatch),
            ("selfsigned", "localhost", .untrusted),
        ]
        for (certificate, name, reason) in cases {
            let pair = try MemoryPair(
                server: MemoryPair.options(certificates, certificate: certificate),
                client: MemoryPair.trustingTestCA(certificates), serverName: name)
            pair.client.send([Array("token".utf8)])
            pair.connect()
            #expect(
                pair.client.failure?.reason == reason,
                "\(certificate) as \(name): \(String(describing: pair.client.failure))")
            #expect(pair.client.established == nil)
            #expect(pair.server.received.isEmpty, "the queued plaintext left although the chain was refused")
        }
        // The IP address in the certificate is checked as an address.
        let byAddress = try MemoryPair(
            server: MemoryPair.options(certificates), client: MemoryPair.trustingTestCA(certificates),
            serverName: "127.0.0.1")
        byAddress.connect()
        #expect(byAddress.client.established?.peerVerification == .trusted)
    }

    @Test func clientCertificates() async throws {
        let certificates = try await TestCertificates.shared()
        var server = MemoryPair.options(certificates)
        server.clientCertificates = .required
        server.clientCAFile = certificates.caFile
        // Without a certificate: refused by the server.
        let anonymous = try MemoryPair(server: server, client: MemoryPair.trustingTestCA(certificates))
        anonymous.connect()
        #expect(anonymous.server.failure?.reason == .certificateRequired)
        #expect(anonymous.server.established == nil)
        // With one from the CA: its subject is the server's to map.
        var withCertificate = try MemoryPair.trustingTestCA(certificates)
        withCertificate.certificateChainFile = certificates.path("client.pem")
        withCertificate.privateKeyFile = certificates.path("client.key")
        let good = try MemoryPair(server: server, client: withCertificate)
        good.connect()
        #expect(good.server.established?.peerSubject == TestCertificates.clientSubject)
        #expect(good.server.established?.peerVerification == .trusted)
        // From another CA: refused.
        var rogue = try MemoryPair.trustingTestCA(certificates)
        rogue.certificateChainFile = certificates.path("rogue-client.pem")
        rogue.privateKeyFile = certificates.path("rogue-client.key")
        let refused = try MemoryPair(server: server, client: rogue)
        refused.connect()
        #expect(refused.server.failure?.reason == .badCertificate)
    }

    @Test func renegotiationIsRefusedAndCloses() async throws {
        let certificates = try await TestCertificates.shared()
        var server = MemoryPair.options(certificates)
        server.minimumVersion = .tls12
        var client = try MemoryPair.trustingTestCA(certificates)
        client.maximumVersion = .tls12
        client.allowsRenegotiation = true
        let pair = try MemoryPair(server: server, client: client)
        pair.connect()
        #expect(pair.server.established?.protocolVersion == "TLSv1.2")
        var io = pair.client.io
        pair.client.channel.requestRenegotiation(&io)
        pair.pump()
        #expect(pair.server.failure?.reason == .renegotiation)
    }

    @Test func closeNotifyAndTruncation() async throws {
        let certificates = try await TestCertificates.shared()
        let pair = try MemoryPair(
            server: MemoryPair.options(certificates), client: MemoryPair.trustingTestCA(certificates))
        pair.connect()
        var io = pair.client.io
        pair.client.channel.close(&io)
        #expect(pair.client.ended == .some(nil))
        pair.pump()
        #expect(pair.server.ended == .some(nil))  // answered in order
        // A close in the middle of a record.
        let cut = try MemoryPair(
            server: MemoryPair.options(certificates), client: MemoryPair.trustingTestCA(certificates))
        cut.connect()
        cut.client.send([[UInt8](repeating: 1, count: 1_000)])
        let record = cut.client.outgoing
        cut.client.outgoing = []
        var serverIO = cut.server.io
        record.prefix(300).withUnsafeBytes { cut.server.channel.received($0, &serverIO) }
        #expect(cut.server.received.isEmpty)
        cut.server.channel.transportEnded(&serverIO)
        #expect(cut.server.failure?.reason == .truncated)
    }

    @Test func aBadCertificateOrKeyNamesTheFile() async throws {
        let certificates = try await TestCertificates.shared()
        let mismatched = TLSContext.ServerOptions(
            certificateChainFile: certificates.path("server.pem"),
            privateKeyFile: certificates.path("server2.key"))
        #expect(throws: TLSError.self) { try TLSContext.server(mismatched) }
        do {
            _ = try TLSContext.server(mismatched)
        } catch {
            #expect(error.path == certificates.path("server2.key") && "\(error)".contains("does not match"), "\(error)")
        }
        let missing = TLSContext.ServerOptions(
            certificateChainFile: "/nonexistent/cert.pem", privateKeyFile: certificates.serverKey)
        do {
            _ = try TLSContext.server(missing)
            Issue.record("a missing certificate loaded")
        } catch {
            #expect(error.path == "/nonexistent/cert.pem" && "\(error)".contains("tls.certificate_file"), "\(error)")
        }
        let context = try TLSContext.server(MemoryPair.options(certificates))
        #expect((context.certificateExpiry ?? 0) > 1_700_000_000)
        #expect(context.certificateSubject == "CN=localhost")
    }
}

/// A certificate's SHA-256 as `openssl x509 -fingerprint -sha256` prints it: an
/// independent reference for the engine's digests (and the pins users copy).
enum TLSPinTestSupport {
    static func fingerprint(_ file: String) async throws -> [UInt8] {
        let result = try await ChildProcess.run(
            "/usr/bin/openssl", arguments: ["x509", "-noout", "-fingerprint", "-sha256", "-in", file])
        let hex = result.output.split(separator: "=").last.map { $0.filter(\.isHexDigit) } ?? ""
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            bytes.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return bytes
    }
}
