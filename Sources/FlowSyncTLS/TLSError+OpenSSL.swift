import CLibSSL

/// The C boundary for errors: OpenSSL's per-thread error queue and its X.509
/// verification codes become a ``TLSError`` here, and nowhere else.
extension TLSError {
    /// Drains this thread's OpenSSL error queue (so a stale entry never blames the next
    /// connection) and translates it: the reason comes from the first entry of the SSL
    /// library (the one that says what the handshake tripped on), the detail lists them all.
    static func drainingErrorQueue(_ what: String, fallback: Reason = .other) -> TLSError {
        var reason: Reason?
        var messages: [String] = []
        while case let code = ERR_get_error(), code != 0 {
            if reason == nil, CLibSSL_ERR_GET_LIB(code) == ERR_LIB_SSL {
                reason = Self.reason(ofSSLReason: CLibSSL_ERR_GET_REASON(code))
            }
            messages.append(errorString(code))
        }
        let detail = messages.isEmpty ? what : "\(what): \(messages.joined(separator: "; "))"
        return .connection(reason ?? fallback, detail)
    }

    /// Forgets whatever is queued (before a call whose errors are read afterwards).
    static func clearErrorQueue() { ERR_clear_error() }

    /// A configuration file's error: the queue's messages, with the key and the path.
    static func file(key: String, path: String, drainingErrorQueue what: String) -> TLSError {
        var messages: [String] = []
        while case let code = ERR_get_error(), code != 0 { messages.append(errorString(code)) }
        return .file(key: key, path: path, messages.isEmpty ? what : "\(what) (\(messages.joined(separator: "; ")))")
    }

    private static func errorString(_ code: UInt) -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The reason of an SSL-library error code (`SSL_R_*`). Codes of 1000 and above are
    /// alerts the peer sent (`SSL_AD_REASON_OFFSET` + the alert number).
    static func reason(ofSSLReason code: Int32) -> Reason {
        switch code {
        case SSL_R_WRONG_VERSION_NUMBER, SSL_R_HTTP_REQUEST, SSL_R_HTTPS_PROXY_REQUEST, SSL_R_UNKNOWN_PROTOCOL,
            SSL_R_PACKET_LENGTH_TOO_LONG, SSL_R_WRONG_SSL_VERSION, SSL_R_BAD_RECORD_TYPE:
            // The first record's header is not TLS: what plaintext FlowSync, HTTP or
            // random bytes look like (the record length or version bytes are wrong).
            return .notTLS
        case SSL_R_UNSUPPORTED_PROTOCOL, SSL_R_NO_PROTOCOLS_AVAILABLE, SSL_R_VERSION_TOO_LOW,
            SSL_R_BAD_PROTOCOL_VERSION_NUMBER, SSL_R_TLSV1_ALERT_PROTOCOL_VERSION:
            return .protocolVersion
        case SSL_R_NO_SHARED_CIPHER, SSL_R_NO_SHARED_GROUPS:
            return .noSharedCipher
        case SSL_R_NO_APPLICATION_PROTOCOL:
            return .noApplicationProtocol
        case SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE, SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
            return .certificateRequired
        case SSL_R_CERTIFICATE_VERIFY_FAILED:
            return .badCertificate
        case SSL_R_DECRYPTION_FAILED_OR_BAD_RECORD_MAC:
            return .badRecord
        case SSL_R_UNEXPECTED_EOF_WHILE_READING:
            return .truncated
        case SSL_R_NO_RENEGOTIATION:
            return .renegotiation
        case SSL_R_LENGTH_MISMATCH, SSL_R_LENGTH_TOO_SHORT, SSL_R_BAD_PACKET_LENGTH, SSL_R_RECORD_LENGTH_MISMATCH,
            SSL_R_BAD_LENGTH, SSL_R_BAD_HANDSHAKE_LENGTH, SSL_R_EXCESSIVE_MESSAGE_SIZE, SSL_R_BAD_EXTENSION,
            SSL_R_CLIENTHELLO_TLSEXT, SSL_R_PARSE_TLSEXT, SSL_R_RECORD_TOO_SMALL, SSL_R_UNEXPECTED_MESSAGE,
            SSL_R_UNEXPECTED_RECORD, SSL_R_BAD_VALUE, SSL_R_BAD_DECOMPRESSION:
            return .malformed
        default:
            if code >= SSL_AD_REASON_OFFSET { return reason(ofAlert: code - SSL_AD_REASON_OFFSET) }
            return .other
        }
    }

    /// The reason of an alert the peer sent (its number, RFC 8446 §6).
    static func reason(ofAlert alert: Int32) -> Reason {
        switch alert {
        case 70: return .protocolVersion  // protocol_version
        case 116: return .certificateRequired  // certificate_required
        // bad, unsupported, revoked, unknown certificate; unknown_ca; access_denied
        case 42, 43, 44, 46, 48, 49: return .badCertificate
        case 45: return .certificateExpired  // certificate_expired
        case 120: return .noApplicationProtocol  // no_application_protocol
        case 100: return .renegotiation  // no_renegotiation
        case 40: return .noSharedCipher  // handshake_failure: what OpenSSL sends without a shared cipher
        case 20: return .badRecord  // bad_record_mac
        default: return .peerAlert
        }
    }

    /// A client's verdict on the server's chain from OpenSSL's verification result
    /// (`X509_V_*`, checked against the trust store and the expected name).
    static func reason(ofVerifyResult code: Int) -> Reason {
        switch Int32(code) {
        case X509_V_ERR_CERT_HAS_EXPIRED, X509_V_ERR_CERT_NOT_YET_VALID, X509_V_ERR_ERROR_IN_CERT_NOT_AFTER_FIELD,
            X509_V_ERR_ERROR_IN_CERT_NOT_BEFORE_FIELD:
            return .certificateExpired
        case X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_IP_ADDRESS_MISMATCH:
            return .hostnameMismatch
        default:
            return .untrusted
        }
    }

    /// OpenSSL's text for a verification result (`X509_verify_cert_error_string`).
    static func verifyResultText(_ code: Int) -> String {
        String(cString: X509_verify_cert_error_string(code))
    }
}
