import Testing

@testable import FlowSyncClient

/// Every TLS decision the transports delegate (``TLSPolicy``), tested without a socket:
/// when TLS is used, and which certificate chains are accepted.
@Suite(.timeLimit(.minutes(2))) struct TLSPolicyTests {
    @Test(arguments: [
        "localhost", "LOCALHOST", "localhost.", "api.localhost", "127.0.0.1", "127.1.2.3",
        "127.255.255.255", "::1", "[::1]", "0:0:0:0:0:0:0:1", "::0:1", "::ffff:127.0.0.1", "::1%lo0",
    ])
    func loopbackHostsArePlainByDefault(host: String) {
        #expect(TLSPolicy.isLoopback(host: host))
        #expect(!TLSPolicy.automatic.usesTLS(host: host))
        #expect(TLSPolicy.required.usesTLS(host: host))
    }

    @Test(arguments: [
        "sync.example.com", "10.0.0.1", "192.168.1.10", "128.0.0.1", "127.0.0", "127.0.0.1.evil.com",
        "localhost.evil.com", "evil-localhost", "::2", "1::1", "::ffff:10.0.0.1", "127.0.0.256", "", "1270.0.0.1",
    ])
    func everyOtherHostUsesTLSByDefault(host: String) {
        #expect(!TLSPolicy.isLoopback(host: host))
        #expect(TLSPolicy.automatic.usesTLS(host: host))
        #expect(TLSPolicy().usesTLS(host: host), "the default policy is .automatic")
        #expect(!TLSPolicy.disabled.usesTLS(host: host))
    }

    static let leaf = [UInt8](repeating: 0xAA, count: 32)
    static let intermediate = [UInt8](repeating: 0xBB, count: 32)
    static let other = [UInt8](repeating: 0xCC, count: 32)

    func evaluation(trusted: Bool) -> TLSPolicy.TrustEvaluation {
        .init(host: "sync.example.com", systemTrusted: trusted, certificateChainSHA256: [Self.leaf, Self.intermediate])
    }

    @Test func withoutPinsTheSystemTrustStoreDecides() {
        #expect(TLSPolicy.automatic.accepts(evaluation(trusted: true)))
        #expect(!TLSPolicy.automatic.accepts(evaluation(trusted: false)))
    }

    @Test func pinsMatchAnyCertificateOfTheChainAndStillNeedSystemTrust() {
        #expect(TLSPolicy(pinnedCertificateSHA256: [Self.leaf]).accepts(evaluation(trusted: true)))
        #expect(TLSPolicy(pinnedCertificateSHA256: [Self.intermediate, Self.other]).accepts(evaluation(trusted: true)))
        #expect(
            !TLSPolicy(pinnedCertificateSHA256: [Self.other]).accepts(evaluation(trusted: true)),
            "no pinned certificate in the chain")
        #expect(
            !TLSPolicy(pinnedCertificateSHA256: [Self.leaf]).accepts(evaluation(trusted: false)),
            "pinned but not trusted by the system")
    }

    @Test func aSelfSignedServerNeedsAPinWhenSystemTrustIsNotRequired() {
        #expect(
            TLSPolicy(pinnedCertificateSHA256: [Self.leaf], requiresSystemTrust: false).accepts(
                evaluation(trusted: false)))
        #expect(
            !TLSPolicy(pinnedCertificateSHA256: [Self.other], requiresSystemTrust: false).accepts(
                evaluation(trusted: false)))
        // No pins and no system trust would accept anything: it accepts nothing instead.
        #expect(!TLSPolicy(requiresSystemTrust: false).accepts(evaluation(trusted: true)))
        #expect(!TLSPolicy(requiresSystemTrust: false).accepts(evaluation(trusted: false)))
    }

    @Test func theHookDecidesAndSeesTheBuiltInDecision() {
        let seen = Locked<[Bool]>([])
        let refuseAll = TLSPolicy(verify: { _, builtIn in
            seen.withLock { $0.append(builtIn) }
            return false
        })
        #expect(!refuseAll.accepts(evaluation(trusted: true)))
        let acceptPinnedLeafOnly = TLSPolicy(
            requiresSystemTrust: false,
            verify: { evaluation, _ in
                evaluation.certificateChainSHA256.first == Self.leaf
            })
        #expect(acceptPinnedLeafOnly.accepts(evaluation(trusted: false)))
        #expect(seen.withLock { $0 } == [true])
    }

    @Test func pinsParseFromOpenSSLFingerprints() throws {
        let colons = "AA:" + String(repeating: "AA:", count: 30) + "AA"
        #expect(TLSPolicy.sha256Pin(hex: colons) == Self.leaf)
        #expect(TLSPolicy.sha256Pin(hex: String(repeating: "bb", count: 32)) == Self.intermediate)
        #expect(TLSPolicy.sha256Pin(hex: String(repeating: "bb", count: 31)) == nil)
        #expect(TLSPolicy.sha256Pin(hex: String(repeating: "zz", count: 32)) == nil)
        #expect(TLSPolicy.sha256Pin(hex: String(repeating: "+b", count: 32)) == nil)
    }

    @Test func plainTransportsFailClosedWhereThePolicyWantsTLS() throws {
        // A transport without TLS (the POSIX one, the default only where neither
        // Network.framework nor libuv exists) refuses a host the policy wants TLS for,
        // before anything is sent. Linux's default transport speaks TLS itself
        // (ClientTLSTests).
        #expect(throws: TransportError.tlsUnavailable(host: "sync.example.com")) {
            try TransportError.checkPlainTransportAllowed(host: "sync.example.com", policy: .automatic)
        }
        #expect(throws: TransportError.tlsUnavailable(host: "127.0.0.1")) {
            try TransportError.checkPlainTransportAllowed(host: "127.0.0.1", policy: .required)
        }
        try TransportError.checkPlainTransportAllowed(host: "sync.example.com", policy: .disabled)
        try TransportError.checkPlainTransportAllowed(host: "localhost", policy: .automatic)
        #expect("\(TransportError.tlsUnavailable(host: "h"))".contains("docs/SDK.md"))
    }

    @Test func trustedRootsAreReadFromPEM() {
        let pem = """
            junk before
            -----BEGIN CERTIFICATE-----
            AQID
            BA==
            -----END CERTIFICATE-----
            -----BEGIN PRIVATE KEY-----
            AAAA
            -----END PRIVATE KEY-----
            -----BEGIN CERTIFICATE-----
            /w==
            -----END CERTIFICATE-----
            """
        #expect(TLSPolicy.certificates(pem: pem) == [[1, 2, 3, 4], [0xff]])
        #expect(TLSPolicy.certificates(pem: "-----BEGIN CERTIFICATE-----\n!!\n-----END CERTIFICATE-----").isEmpty)
        #expect(TLSPolicy.certificates(pem: "no certificate").isEmpty)
    }
}
