import FlowSyncCore
import FlowSyncLoop
import FlowSyncProcess
import FlowSyncProtocol
import FlowSyncTLS
import FlowSyncTestSupport
import Foundation
import Testing

@testable import FlowSyncServer

/// The daemon's TLS (issue #32) against an embedded server on 127.0.0.1 port 0: the
/// protocol over TLS, ALPN, client certificates mapped to principals, the pre-auth
/// budget, a certificate reload under live connections.
@Suite(.serialized, .timeLimit(.minutes(3))) struct TLSServerTests {
    static func configuration(
        _ certificates: TestCertificates, handshakeTimeoutMilliseconds: Int = 60_000
    ) -> ServerConfiguration {
        var c = ServerConfiguration()
        c.tls = certificates.serverTLS()
        c.handshakeTimeoutMilliseconds = handshakeTimeoutMilliseconds
        return c
    }

    static func isWelcome(_ m: Message) -> Bool { if case .welcome = m { return true } else { return false } }
    static func isSnapshot(_ m: Message) -> Bool { if case .snapshot = m { return true } else { return false } }

    @Test func theProtocolRunsOverTLS() async throws {
        let certificates = try await TestCertificates.shared()
        let server = try await EmbeddedServer(configuration: Self.configuration(certificates))
        let thread = try EventLoopThread()
        let context = try certificates.clientContext()
        let reader = try await TestClient.connect(port: server.port, on: thread, clientID: "reader", tls: context)
        let writer = try await TestClient.connect(port: server.port, on: thread, clientID: "writer", tls: context)
        #expect(reader.tlsInfo?.protocolVersion == "TLSv1.3")
        #expect(reader.tlsInfo?.applicationProtocol == "flowsync")
        reader.send(.subscribe(Subscribe(listName: "tls", resumeFrom: nil, digest: nil)))
        #expect(await reader.waitFor(Self.isSnapshot) != nil)
        // A large mutation (several records each way) and many small ones.
        // Rows of 60 KB of varied bytes (compression cannot hide them): about 240 KB.
        var random = SeededRandom(seed: 32)
        let big = (0..<4).map { k in
            Row(
                id: "big\(k)", kind: "cell",
                payload: (0..<60_000).map { _ in UInt8.random(in: 0...255, using: &random) })
        }
        writer.send(
            .mutate(
                Mutate(
                    listName: "tls", clientID: "writer", seq: 1, base: ListVersion(epoch: 0, version: 0),
                    operations: [.insertSections([Section(id: "s", rows: big)], at: 0)])))
        for seq in 2...50 {
            writer.send(
                .mutate(
                    Mutate(
                        listName: "tls", clientID: "writer", seq: UInt64(seq), base: ListVersion(epoch: 0, version: 0),
                        operations: [
                            .insertRows(
                                [Row(id: "r\(seq)", kind: "cell", payload: Array("\(seq)".utf8))], in: .id("s"), at: 0)
                        ])))
        }
        #expect(await writer.waitFor { if case .ack(let a) = $0 { return a.seq == 50 } else { return false } } != nil)
        #expect(
            await eventually {
                var r = Replica()
                r.apply(reader.messages, list: "tls")
                return r.director.rowCount == 53
            })
        var replica = Replica()
        replica.apply(reader.messages, list: "tls")
        #expect(replica.problems.isEmpty, "\(replica.problems)")
        let stats = try #require(await server.withServer { $0.tlsStatistics })
        #expect(stats.handshakes == 2 && stats.handshakesByVersion["TLSv1.3"] == 2)
        // Both connections switched to the own record layer, which counts its records.
        #expect(stats.recordsSealed > 0 && stats.recordsOpened > 0, "\(stats)")
        reader.close()
        writer.close()
        #expect(await server.stop())
        _ = thread.shutdown()
    }

    @Test func plaintextFramesOnTheTLSPortNeverReachTheDecoder() async throws {
        let certificates = try await TestCertificates.shared()
        let server = try await EmbeddedServer(configuration: Self.configuration(certificates))
        let thread = try EventLoopThread()
        let hello = FrameEncoder().encode(
            .hello(
                Hello(minVersion: 1, maxVersion: 1, clientName: "plain", clientID: "plain", authToken: "secret-token")))
        let peer = try #require(try await RawPeer.connect(port: server.port, on: thread, firstBytes: hello).first)
        #expect(await eventually { peer.isClosed })
        // Nothing but a TLS alert record (type 21) comes back, never a Welcome.
        #expect(peer.received.isEmpty || peer.received.first == 21, "\(peer.received.prefix(16))")
        let stats = try #require(await server.withServer { $0.tlsStatistics })
        #expect(stats.failuresByReason["not_tls"] == 1, "\(stats.failuresByReason)")
        #expect(await server.withServer { $0.statistics.connectionsCurrent } == 0)
        #expect(await server.stop())
        _ = thread.shutdown()
    }

    @Test func aClientOfferingAnotherProtocolIsRefused() async throws {
        let certificates = try await TestCertificates.shared()
        let server = try await EmbeddedServer(configuration: Self.configuration(certificates))
        // A Python client offering only "h2": no_application_protocol.
        let script = """
            import socket, ssl, sys
            ctx = ssl.create_default_context(cafile=sys.argv[2])
            ctx.set_alpn_protocols(["h2"])
            try:
                with ctx.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[1]))), server_hostname="localhost") as s:
                    s.recv(1)
                print("CONNECTED")
            except ssl.SSLError as e:
                print("REFUSED", e.reason)
            """
        let result = try await ChildProcess.run(
            "/usr/bin/env", arguments: ["python3", "-c", script, "\(server.port)", certificates.caFile])
        #expect(result.output.contains("REFUSED"), "\(result)")
        let stats = try #require(await server.withServer { $0.tlsStatistics })
        #expect(stats.failuresByReason["alpn"] == 1, "\(stats.failuresByReason)")
        #expect(await server.stop())
    }

    @Test func clientCertificatesMapToPrincipalsAndAreRequired() async throws {
        let certificates = try await TestCertificates.shared()
        var configuration = Self.configuration(certificates)
        configuration.auth.mode = .required
        configuration.auth.keys = [
            .init(kid: "hs", algorithm: "HS256", secret: "flowsync-test-secret-0123456789abcdef")
        ]
        configuration.tls.clientCertificates = .required
        configuration.tls.clientCAFile = certificates.caFile
        configuration.tls.principals = [
            .init(
                subject: TestCertificates.clientSubject, name: "reporting", read: [ListPattern("reports/*")!], write: []
            )
        ]
        let server = try await EmbeddedServer(configuration: configuration)
        let thread = try EventLoopThread()
        // With the certificate: no token, and the principal's grant.
        let service = try await TestClient.connect(
            port: server.port, on: thread, clientID: "svc",
            tls: certificates.clientContext(certificate: "client"))
        service.send(.subscribe(Subscribe(listName: "reports/daily", resumeFrom: nil, digest: nil)))
        #expect(await service.waitFor(Self.isSnapshot) != nil)
        service.send(.subscribe(Subscribe(listName: "payroll", resumeFrom: nil, digest: nil)))
        let refusal = await service.waitFor {
            if case .error(let e) = $0 { return e.listName == "payroll" } else { return false }
        }
        guard case .error(let error)? = refusal else {
            Issue.record("no refusal for a list the principal may not read")
            return
        }
        #expect(error.code == .forbidden && !error.closesConnection)
        service.send(
            .mutate(
                Mutate(
                    listName: "reports/daily", clientID: "svc", seq: 1, base: ListVersion(epoch: 0, version: 0),
                    operations: [.insertSections([Section(id: "s")], at: 0)])))
        #expect(
            await service.waitFor { if case .reject(let r) = $0 { return r.code == .forbidden } else { return false } }
                != nil)
        // Without a certificate: refused in the handshake, before any Hello.
        do {
            _ = try await TestClient.connect(port: server.port, on: thread, tls: certificates.clientContext())
            Issue.record("a client without a certificate got a Welcome")
        } catch {}
        // A certificate from another CA: refused too.
        do {
            _ = try await TestClient.connect(
                port: server.port, on: thread, tls: certificates.clientContext(certificate: "rogue-client"))
            Issue.record("a client with a rogue certificate got a Welcome")
        } catch {}
        let stats = try #require(await server.withServer { $0.tlsStatistics })
        #expect(stats.certificatePrincipals == 1)
        #expect(stats.failuresByReason["certificate_required"] == 1, "\(stats.failuresByReason)")
        #expect(stats.failuresByReason["bad_certificate"] == 1, "\(stats.failuresByReason)")
        service.close()
        #expect(await server.stop())
        _ = thread.shutdown()
    }

    @Test func theHandshakeCountsAgainstThePreAuthBudget() async throws {
        let certificates = try await TestCertificates.shared()
        var configuration = Self.configuration(certificates, handshakeTimeoutMilliseconds: 400)
        configuration.auth.maxPendingHandshakes = 5
        let server = try await EmbeddedServer(configuration: configuration)
        let thread = try EventLoopThread()
        // Five TLS handshakes left unfinished hold the five slots: the sixth connection is
        // closed at accept, and all five are closed by the deadline.
        let hello = try TestCertificates.clientHello(certificates.clientContext())
        let stalled = try await RawPeer.connect(count: 5, port: server.port, on: thread, firstBytes: hello)
        #expect(await eventually { stalled.allSatisfy { !$0.received.isEmpty } })  // the server answered each
        let sixth = try #require(try await RawPeer.connect(port: server.port, on: thread, firstBytes: hello).first)
        #expect(await eventually { sixth.isClosed })
        #expect(await eventually { stalled.allSatisfy(\.isClosed) })
        let stats = try #require(await server.withServer { $0.tlsStatistics })
        #expect(stats.failuresByReason["timeout"] == 5, "\(stats.failuresByReason)")
        #expect(await server.withServer { $0.statistics.connectionsRefused } >= 1)
        // The slots are free again: a real client gets in.
        let client = try await TestClient.connect(port: server.port, on: thread, tls: certificates.clientContext())
        #expect(client.tlsInfo != nil)
        client.close()
        #expect(await server.stop())
        _ = thread.shutdown()
    }

    @Test func aReloadServesTheNewCertificateToNewHandshakesOnly() async throws {
        let certificates = try await TestCertificates.shared()
        let server = try await EmbeddedServer(configuration: Self.configuration(certificates))
        let thread = try EventLoopThread()
        let context = try certificates.clientContext()
        let before = try await TestClient.connect(port: server.port, on: thread, clientID: "before", tls: context)
        let oldLeaf = try #require(before.tlsInfo?.peerChainSHA256.first)
        // A bad pair (the key of another certificate) is refused, naming the file; the
        // running pair stays.
        var bad = Self.configuration(certificates)
        bad.tls.keyFile = certificates.path("server2.key")
        let badConfiguration = bad
        let refused = await server.withServer { $0.reload(badConfiguration) }
        #expect(refused.contains { $0.contains("refused") && $0.contains("server2.key") }, "\(refused)")
        let stillOld = try await TestClient.connect(port: server.port, on: thread, tls: context)
        #expect(stillOld.tlsInfo?.peerChainSHA256.first == oldLeaf)
        // The new pair: new handshakes see it.
        var good = Self.configuration(certificates)
        good.tls = certificates.serverTLS(certificate: "server2")
        let goodConfiguration = good
        let changes = await server.withServer { $0.reload(goodConfiguration) }
        #expect(changes.contains { $0.hasPrefix("tls: certificate") }, "\(changes)")
        let after = try await TestClient.connect(port: server.port, on: thread, tls: context)
        let newLeaf = try #require(after.tlsInfo?.peerChainSHA256.first)
        #expect(newLeaf != oldLeaf)
        // The connections made before are still served.
        for (nonce, client) in [before, stillOld].enumerated() {
            client.send(.ping(Ping(nonce: UInt64(nonce + 1))))
            #expect(await client.waitFor { if case .pong = $0 { return true } else { return false } } != nil)
            #expect(!client.isClosed)
        }
        let stats = try #require(await server.withServer { $0.tlsStatistics })
        #expect(stats.loads == 2 && stats.refusedLoads == 1)
        for client in [before, stillOld, after] { client.close() }
        #expect(await server.stop())
        _ = thread.shutdown()
    }

    @Test func tlsConfigurationIsValidatedWithClearErrors() throws {
        func problem(_ text: String) -> String? {
            do {
                _ = try ServerConfiguration(toml: text)
                return nil
            } catch {
                return "\(error)"
            }
        }
        #expect(
            problem("[server]\nhost = \"0.0.0.0\"\n[auth]\nmode = \"off\"\nallow_off_beyond_loopback = true")?.contains(
                "tls.certificate_file") == true)
        #expect(
            problem(
                "[server]\nhost = \"0.0.0.0\"\n[auth]\nmode = \"off\"\nallow_off_beyond_loopback = true\n[tls]\nmode = \"off\""
            )?.contains("tls.mode") == true)
        #expect(
            problem(
                "[server]\nhost = \"0.0.0.0\"\n[auth]\nmode = \"off\"\nallow_off_beyond_loopback = true\n[tls]\nmode = \"off\"\nallow_plaintext_beyond_loopback = true"
            ) == nil)
        #expect(problem("[tls]\nmode = \"required\"\ncertificate_file = \"/c.pem\"")?.contains("tls.key_file") == true)
        #expect(problem("[tls]\nclient_certificates = \"required\"")?.contains("tls.client_ca_file") == true)
        #expect(problem("[tls]\nmin_version = \"1.1\"")?.contains("tls.min_version") == true)
        #expect(problem("[tls]\nbogus = 1")?.contains("tls.bogus") == true)
        #expect(
            problem(
                "[tls]\nclient_certificates = \"optional\"\nclient_ca_file = \"/ca.pem\"\n[[tls.principals]]\nsubject = \"CN=a\"\nname = \"a\"\nread = [\"x/*\", \"team/*/y\"]"
            )?.contains("tls.principals.read") == true)
        let parsed = try ServerConfiguration(
            toml:
                "[tls]\nmode = \"required\"\ncertificate_file = \"/c.pem\"\nkey_file = \"/k.pem\"\nmin_version = \"1.2\"\nclient_certificates = \"optional\"\nclient_ca_file = \"/ca.pem\"\n[[tls.principals]]\nsubject = \"CN=a,O=b\"\nname = \"a\"\nread = [\"x/*\"]\nwrite = [\"x/y\"]"
        )
        #expect(parsed.tls.minimumVersion == .tls12 && parsed.tls.clientCertificates == .optional)
        #expect(
            parsed.tls.principals == [
                .init(subject: "CN=a,O=b", name: "a", read: [ListPattern("x/*")!], write: [ListPattern("x/y")!])
            ])
    }

    @Test func aBadPairRefusesTheStartNamingTheFile() async throws {
        let certificates = try await TestCertificates.shared()
        var configuration = Self.configuration(certificates)
        configuration.tls.keyFile = certificates.path("server2.key")
        do {
            _ = try await EmbeddedServer(configuration: configuration)
            Issue.record("a server started with a mismatched key")
        } catch {
            #expect("\(error)".contains("server2.key") && "\(error)".contains("does not match"), "\(error)")
        }
    }
}
