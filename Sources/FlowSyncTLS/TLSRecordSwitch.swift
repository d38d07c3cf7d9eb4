import CLibSSL

/// The decision, at the end of a server's handshake, to leave OpenSSL's record layer
/// for the daemon's own (``TLSRecordLayer``), as a pure function of facts the session
/// reports: tested without a socket or a handshake (`TLSRecordSwitchTests`).
///
/// The switch is safe only at a record boundary in both directions, with nothing of
/// the connection left inside OpenSSL. Each condition, with its reason:
/// 1. **Configured** (`tls.record_layer = "flowsync"`) and **a server**: clients keep
///    OpenSSL's (their cost is one connection, not a fan-out).
/// 2. **TLS 1.3**: TLS 1.2 records (explicit nonces, CBC suites, renegotiation) stay
///    with OpenSSL, unchanged.
/// 3. **A suite ``TLSRecordSuite`` knows** (both AES-GCM and ChaCha20-Poly1305).
/// 4. **Both application traffic secrets were captured** (the keylog callback), at the
///    suite's hash length.
/// 5. **OpenSSL holds no byte of the read side** (`SSL_has_pending`): without
///    read-ahead it reads exactly one record at a time, so at the end of the handshake
///    the client's next records are all still in the input BIO, whole or partial, and
///    are handed over from its first byte; a byte inside OpenSSL would be lost.
/// 6. **OpenSSL has nothing left to send**: its output drained, and it will send
///    nothing more (the server context sends no tickets, `SSL_CTX_set_num_tickets(0)`:
///    a ticket after the switch would go out under sequence numbers the new layer does
///    not know). So both write sequences start at 0.
///
/// A connection that fails a condition simply stays on OpenSSL: correct, only slower.
public enum TLSRecordSwitch {
    /// What the session knows at the end of the handshake.
    public struct Facts: Hashable, Sendable {
        public var enabled: Bool
        public var isServer: Bool
        /// `SSL_version`: `TLS1_3_VERSION` is 0x0304.
        public var protocolVersion: Int32
        /// The suite's IANA number (`SSL_CIPHER_get_protocol_id`).
        public var suiteID: UInt16
        public var clientSecretLength: Int
        public var serverSecretLength: Int
        public var readBytesInsideOpenSSL: Bool
        public var pendingCiphertext: Int

        public init(
            enabled: Bool, isServer: Bool, protocolVersion: Int32, suiteID: UInt16, clientSecretLength: Int,
            serverSecretLength: Int, readBytesInsideOpenSSL: Bool, pendingCiphertext: Int
        ) {
            self.enabled = enabled
            self.isServer = isServer
            self.protocolVersion = protocolVersion
            self.suiteID = suiteID
            self.clientSecretLength = clientSecretLength
            self.serverSecretLength = serverSecretLength
            self.readBytesInsideOpenSSL = readBytesInsideOpenSSL
            self.pendingCiphertext = pendingCiphertext
        }
    }

    /// Why a connection stays on OpenSSL's record layer.
    public enum Stay: Hashable, Sendable {
        case disabled, client, notTLS13, unsupportedSuite(UInt16), secretsMissing, readBytesInsideOpenSSL,
            ciphertextPending
    }

    public enum Decision: Hashable, Sendable {
        case switchTo(TLSRecordSuite)
        case stay(Stay)
    }

    /// The decision, condition by condition in the order above.
    public static func decide(_ facts: Facts) -> Decision {
        guard facts.enabled else { return .stay(.disabled) }
        guard facts.isServer else { return .stay(.client) }
        guard facts.protocolVersion == TLS1_3_VERSION else { return .stay(.notTLS13) }
        guard let suite = TLSRecordSuite(rawValue: facts.suiteID) else {
            return .stay(.unsupportedSuite(facts.suiteID))
        }
        guard facts.clientSecretLength == suite.secretLength, facts.serverSecretLength == suite.secretLength else {
            return .stay(.secretsMissing)
        }
        guard !facts.readBytesInsideOpenSSL else { return .stay(.readBytesInsideOpenSSL) }
        guard facts.pendingCiphertext == 0 else { return .stay(.ciphertextPending) }
        return .switchTo(suite)
    }
}
