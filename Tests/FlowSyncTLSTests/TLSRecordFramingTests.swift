import CLibSSL
import FlowSyncTLS
import Testing

/// The own record layer's pure parts, rule by rule, without a cipher or a socket:
/// ``TLSRecordFraming`` (headers, inner plaintext, post-handshake messages) and
/// ``TLSRecordSwitch`` (when a connection leaves OpenSSL's record layer).
@Suite(.timeLimit(.minutes(1)))
struct TLSRecordFramingTests {
    private func header(_ bytes: [UInt8]) -> Result<Int, TLSRecordFraming.Violation> {
        bytes.withUnsafeBytes { TLSRecordFraming.bodyLength(ofHeader: $0) }
    }

    private func classify(_ bytes: [UInt8]) -> Result<TLSRecordFraming.Inner, TLSRecordFraming.Violation> {
        bytes.withUnsafeBytes { TLSRecordFraming.classify($0) }
    }

    private func alert(_ result: Result<some Any, TLSRecordFraming.Violation>) -> TLSRecordFraming.AlertDescription? {
        if case .failure(let violation) = result { return violation.alert }
        return nil
    }

    @Test func headers() throws {
        #expect(try header([23, 3, 3, 0, 17]).get() == 17)
        #expect(try header([23, 3, 1, 0x41, 0x00]).get() == 16_640)  // the limit; the version is ignored
        #expect(alert(header([23, 3, 3, 0x41, 0x01])) == .recordOverflow)  // 2^14 + 257
        #expect(alert(header([23, 3, 3, 0xff, 0xff])) == .recordOverflow)
        #expect(alert(header([23, 3, 3, 0, 16])) == .badRecordMAC)  // no room for tag and type
        #expect(alert(header([20, 3, 3, 0, 1])) == .unexpectedMessage)  // change_cipher_spec after Finished
        #expect(alert(header([22, 3, 3, 0, 40])) == .unexpectedMessage)  // a plaintext handshake record
        #expect(alert(header([21, 3, 3, 0, 2])) == .unexpectedMessage)  // a plaintext alert
    }

    @Test func innerPlaintext() throws {
        #expect(try classify([1, 2, 3, 23]).get() == .applicationData(count: 3))
        #expect(try classify([1, 2, 3, 23, 0, 0, 0]).get() == .applicationData(count: 3))  // padding
        #expect(try classify([23]).get() == .applicationData(count: 0))
        #expect(alert(classify([0, 0, 0])) == .unexpectedMessage)  // no content type
        #expect(alert(classify([])) == .unexpectedMessage)
        #expect(alert(classify([1, 20])) == .unexpectedMessage)  // protected change_cipher_spec
        #expect(alert(classify([1, 99])) == .unexpectedMessage)  // unknown type
        #expect(alert(classify([UInt8](repeating: 1, count: 16_385) + [23])) == .recordOverflow)
        #expect(try classify([UInt8](repeating: 1, count: 16_384) + [23]).get() == .applicationData(count: 16_384))
        #expect(try classify([1, 0, 21]).get() == .alert(level: 1, description: 0))
        #expect(try classify([2, 40, 21, 0]).get() == .alert(level: 2, description: 40))
        #expect(alert(classify([1, 21])) == .decodeError)
    }

    @Test func postHandshakeMessages() throws {
        #expect(try classify([24, 0, 0, 1, 0, 22]).get() == .keyUpdate(requested: false))
        #expect(try classify([24, 0, 0, 1, 1, 22, 0, 0]).get() == .keyUpdate(requested: true))
        #expect(alert(classify([24, 0, 0, 1, 2, 22])) == .illegalParameter)
        #expect(alert(classify([24, 0, 0, 2, 0, 0, 22])) == .decodeError)
        #expect(alert(classify([24, 0, 0, 1, 22])) == .unexpectedMessage)  // split over records
        #expect(alert(classify([24, 0, 22])) == .unexpectedMessage)
        #expect(alert(classify([24, 0, 0, 1, 0, 24, 0, 0, 1, 0, 22])) == .unexpectedMessage)  // not at the end
        #expect(alert(classify([4, 0, 0, 1, 0, 22])) == .unexpectedMessage)  // NewSessionTicket from a client
        #expect(alert(classify([11, 0, 0, 0, 22])) == .unexpectedMessage)  // post-handshake Certificate
        #expect(alert(classify([1, 0, 0, 0, 22])) == .unexpectedMessage)  // a second ClientHello
        #expect(alert(classify([22])) == .unexpectedMessage)  // empty handshake record
    }

    private func facts(
        version: Int32 = TLS1_3_VERSION, suite: UInt16 = 0x1302, secrets: Int = 48, inside: Bool = false,
        pending: Int = 0, enabled: Bool = true, server: Bool = true
    ) -> TLSRecordSwitch.Facts {
        TLSRecordSwitch.Facts(
            enabled: enabled, isServer: server, protocolVersion: version, suiteID: suite, clientSecretLength: secrets,
            serverSecretLength: secrets, readBytesInsideOpenSSL: inside, pendingCiphertext: pending)
    }

    @Test func theSwitchHappensOnlyWhenNothingIsLeftInOpenSSL() {
        #expect(TLSRecordSwitch.decide(facts()) == .switchTo(.aes256GCMSHA384))
        #expect(TLSRecordSwitch.decide(facts(suite: 0x1301, secrets: 32)) == .switchTo(.aes128GCMSHA256))
        #expect(TLSRecordSwitch.decide(facts(suite: 0x1303, secrets: 32)) == .switchTo(.chacha20Poly1305SHA256))
        #expect(TLSRecordSwitch.decide(facts(enabled: false)) == .stay(.disabled))
        #expect(TLSRecordSwitch.decide(facts(server: false)) == .stay(.client))
        #expect(TLSRecordSwitch.decide(facts(version: TLS1_2_VERSION)) == .stay(.notTLS13))
        #expect(TLSRecordSwitch.decide(facts(suite: 0x1304)) == .stay(.unsupportedSuite(0x1304)))  // CCM
        #expect(TLSRecordSwitch.decide(facts(secrets: 0)) == .stay(.secretsMissing))
        #expect(TLSRecordSwitch.decide(facts(secrets: 32)) == .stay(.secretsMissing))  // SHA-384 needs 48
        #expect(TLSRecordSwitch.decide(facts(inside: true)) == .stay(.readBytesInsideOpenSSL))
        #expect(TLSRecordSwitch.decide(facts(pending: 1)) == .stay(.ciphertextPending))
    }
}
