import CryptoKit
import Dispatch
import FlowSyncClient
import Foundation
@preconcurrency import Network
import Security
import Testing

/// NetworkTransport's TLS decisions, as far as they can be seen without a TLS peer: which
/// connections get TLS parameters (TLSPolicy.usesTLS per host), what those parameters say
/// (TLS 1.2 minimum, SNI/name), and the verify block's wiring, run against a sec_trust made
/// from a test certificate. What the stand-in cannot show: a handshake, or a chain the
/// system trust store accepts (SecTrustEvaluateWithError is always false here).
@Suite(.timeLimit(.minutes(1))) struct NetworkTransportTLSTests {
    /// A self-signed P-256 certificate for CN=flowsync.test (openssl req -x509, DER), test data.
    static let certificateDER = Data(
        base64Encoded:
            "MIIBhDCCASugAwIBAgIUKXS/pQRyF8gXpOrftWJGc40QpvwwCgYIKoZIzj0EAwIwGDEWMBQGA1UEAwwNZmxvd3N5bmMudGVzdDAeFw0yNjExMjcyMjA1MDRaFw0zNjExMjQyMjA1MDRaMBgxFjAUBgNVBAMMDWZsb3dzeW5jLnRlc3QwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAAR7INpt4uf/QbdZyrnI5m7qFuat8U/wIZV3B120lDv9PmG2CVEAryvVcoBmtDREf77APSTx4mw2cwKyslGCPEmio1MwUTAdBgNVHQ4EFgQU4T8ad7NRpZ8xEItFGsVuwig12T4wHwYDVR0jBBgwFoAU4T8ad7NRpZ8xEItFGsVuwig12T4wDwYDVR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNHADBEAiAuymvO48wUf0enbUml1YhL1t6ERzAkBztvF2KnA867WgIgB+XXFwPhKeVCEFZgiSlaMuVeRD3chqbqtcCTciDa5iw="
    )!

    /// The first NWConnection the transport makes for `host`, and the transport's report.
    /// Tests run in parallel: each call uses a host no other test connects to.
    private func firstConnection(
        policy: TLSPolicy, host: String, port: Int = 9, waitForEvent: Bool = true
    ) async throws -> (parameters: NWParameters, event: String) {
        let seen = EventLog()
        let found = LockedBox<NWParameters?>(nil)
        let observation = NetworkStandIn.observeConnections { connection in
            guard NetworkStandIn.hostAndPort(of: connection).host == host else { return }
            found.set(connection.parameters)
            seen.append("created")
        }
        defer { observation.cancel() }
        let transport = NetworkTransport(tls: policy)
        defer { transport.shutdown() }
        let events = EventLog()
        transport.connect(host: host, port: port) { event in
            switch event {
            case .connected: events.append("connected")
            case .received: events.append("received")
            case .closed(let reason): events.append("closed: \(reason)")
            }
        }
        await seen.wait(count: 1)
        let parameters = try #require(found.get())
        // A TLS connection fails at once here; a plain one to port 9 (discard, closed) is refused.
        // (A plain connection to a non-loopback address is not waited for: it may never answer.)
        let event = waitForEvent ? (await events.wait(count: 1).first ?? "nothing") : "not waited for"
        return (parameters, event)
    }

    @Test func automaticPolicyUsesTLSForANonLoopbackHostOnly() async throws {
        let remote = try await firstConnection(policy: .automatic, host: "flowsync.test")
        let options = try #require(NetworkStandIn.tlsOptions(of: remote.parameters), "a non-loopback host gets TLS")
        #expect(SecurityStandIn.minimumTLSVersion(of: options.securityProtocolOptions) == .TLSv12)
        #expect(SecurityStandIn.serverName(of: options.securityProtocolOptions) == "flowsync.test")
        #expect(
            SecurityStandIn.applicationProtocols(of: options.securityProtocolOptions) == ["flowsync"],
            "ALPN as the daemon expects")
        #expect(SecurityStandIn.verifyBlock(of: options.securityProtocolOptions) != nil)
        #expect(remote.event.hasPrefix("closed: failed:"), "\(remote.event)")

        let local = try await firstConnection(policy: .automatic, host: "127.0.0.2")
        #expect(NetworkStandIn.tlsOptions(of: local.parameters) == nil, "loopback stays plain TCP")
        #expect(
            local.event.hasPrefix("closed: no path:"), "refused is .waiting, reported closed at once: \(local.event)")
    }

    @Test func requiredAndDisabledOverrideTheHost() async throws {
        let loopbackRequired = try await firstConnection(policy: .required, host: "127.0.0.3")
        #expect(NetworkStandIn.tlsOptions(of: loopbackRequired.parameters) != nil)
        let remoteDisabled = try await firstConnection(policy: .disabled, host: "192.0.2.1", waitForEvent: false)
        #expect(NetworkStandIn.tlsOptions(of: remoteDisabled.parameters) == nil)
    }

    @Test func serverNameOverridesTheHostForSNIAndTheVerification() async throws {
        let connection = try await firstConnection(policy: TLSPolicy(serverName: "sync.example.com"), host: "192.0.2.7")
        let options = try #require(NetworkStandIn.tlsOptions(of: connection.parameters))
        #expect(SecurityStandIn.serverName(of: options.securityProtocolOptions) == "sync.example.com")
    }

    /// Runs the transport's verify block for `policy` on its own queue, as Network would.
    private func verify(_ policy: TLSPolicy, host: String = "192.0.2.9") async throws -> Bool {
        try await verifyKeepingTrust(policy, host: host).accepted
    }

    /// ``verify(_:host:)``, also returning the trust object the block worked on.
    private func verifyKeepingTrust(
        _ policy: TLSPolicy, host: String = "192.0.2.9"
    ) async throws -> (accepted: Bool, trust: SecTrust) {
        let connection = try await firstConnection(policy: policy, host: host)
        let options = try #require(NetworkStandIn.tlsOptions(of: connection.parameters))
        let (block, queue) = try #require(SecurityStandIn.verifyBlock(of: options.securityProtocolOptions))
        let certificate = try #require(SecCertificateCreateWithData(nil, Self.certificateDER as CFData))
        var trust: SecTrust?
        #expect(SecTrustCreateWithCertificates(certificate, SecPolicyCreateSSL(true, nil), &trust) == errSecSuccess)
        let created = try #require(trust)
        let secTrust = try #require(sec_trust_create(created))
        let call = LockedBox((block: block, trust: secTrust, metadata: SecurityStandIn.makeMetadata()))
        let accepted: Bool = await withCheckedContinuation { continuation in
            queue.async {
                let (block, trust, metadata) = call.get()
                block(metadata, trust) { accepted in continuation.resume(returning: accepted) }
            }
        }
        return (accepted, created)
    }

    /// `TLSPolicy.additionalTrustedRoots` (issue #32, a private CA) become the trust's
    /// anchors beside the system's (anchors-only off), as LibUVTransport adds them to
    /// OpenSSL's store. Whether the chain then verifies only a device can tell (the
    /// stand-in trusts nothing: the policy still refuses here).
    @Test func additionalRootsBecomeAnchorsBesideTheSystems() async throws {
        let policy = TLSPolicy(additionalTrustedRoots: [[UInt8](Self.certificateDER)])
        // Hosts of their own: tests run in parallel (firstConnection).
        let (accepted, trust) = try await verifyKeepingTrust(policy, host: "192.0.2.21")
        #expect(!accepted)
        let anchors = SecurityStandIn.anchors(of: trust)
        #expect(anchors.certificates == [Self.certificateDER])
        #expect(anchors.only == false)
        // Without extra roots the trust keeps the system's anchors.
        let (_, plain) = try await verifyKeepingTrust(.automatic, host: "192.0.2.22")
        #expect(SecurityStandIn.anchors(of: plain).certificates == nil)
    }

    /// A client identity is Linux's only (TLSPolicy.clientIdentity): the Apple transport
    /// refuses to connect rather than connect without it.
    @Test func aClientIdentityIsRefusedRatherThanIgnored() async throws {
        let transport = NetworkTransport(
            tls: TLSPolicy(clientIdentity: .init(certificateChainFile: "/c.pem", privateKeyFile: "/k.pem")))
        defer { transport.shutdown() }
        let events = EventLog()
        transport.connect(host: "192.0.2.10", port: 7400) { event in
            if case .closed(let reason) = event {
                events.append("closed: \(reason)")
            } else {
                events.append("\(event)")
            }
        }
        let first = await events.wait(count: 1).first ?? "nothing"
        #expect(first.hasPrefix("closed") && first.contains("clientIdentity"), "\(first)")
    }

    private var certificateSHA256: [UInt8] { Array(SHA256.hash(data: Self.certificateDER)) }

    @Test func theVerifyBlockAsksThePolicyWithTheChainsDigests() async throws {
        // No pins and system trust required (the default): the stand-in trusts nothing.
        #expect(try await verify(.automatic) == false)
        // Pinned, self-signed: accepted without system trust.
        #expect(
            try await verify(TLSPolicy(pinnedCertificateSHA256: [certificateSHA256], requiresSystemTrust: false))
                == true)
        // A pin that matches no certificate of the chain.
        #expect(
            try await verify(
                TLSPolicy(pinnedCertificateSHA256: [[UInt8](repeating: 1, count: 32)], requiresSystemTrust: false))
                == false)
        // The hook sees the evaluation the block gathered, and decides last.
        let seen = LockedBox<TLSPolicy.TrustEvaluation?>(nil)
        let hooked = TLSPolicy(
            serverName: "sync.example.com",
            verify: { evaluation, builtIn in
                seen.set(evaluation)
                return !builtIn
            })
        #expect(try await verify(hooked) == true)
        let evaluation = try #require(seen.get())
        #expect(evaluation.host == "sync.example.com")
        #expect(evaluation.systemTrusted == false)
        #expect(evaluation.certificateChainSHA256 == [certificateSHA256])
    }
}

final class LockedBox<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func get() -> Value { lock.withLock { value } }
    func set(_ newValue: Value) { lock.withLock { value = newValue } }
}
