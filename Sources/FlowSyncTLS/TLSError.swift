/// Why TLS failed: a handshake refused, a record that does not decrypt, a certificate
/// or key that does not load. The one error type of ``FlowSyncTLS``: OpenSSL's error
/// queue and its certificate-verification codes are translated into it once, at the C
/// boundary (`TLSError+OpenSSL.swift`), so nothing above sees an OpenSSL number.
///
/// A struct around a private enum (like Hummingbird's `PersistError`): cases can be
/// added without breaking a caller's `switch`. Callers branch on ``reason``, a short
/// stable label that is also the `reason` of the daemon's
/// `flowsync_tls_handshake_failures_total` metric.
public struct TLSError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A stable label for a kind of failure (metrics, logs, tests).
    public struct Reason: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The bytes are not TLS at all (plaintext FlowSync frames, HTTP, garbage).
        public static let notTLS = Reason(rawValue: "not_tls")
        /// A TLS record or handshake message that does not parse (a broken ClientHello).
        public static let malformed = Reason(rawValue: "malformed")
        /// No protocol version in common (a client below `tls.min_version`, a server
        /// below TLS 1.2): a downgrade refused.
        public static let protocolVersion = Reason(rawValue: "protocol_version")
        /// No cipher suite or group in common.
        public static let noSharedCipher = Reason(rawValue: "no_shared_cipher")
        /// The peer offered ALPN protocols and `flowsync` is not among them.
        public static let noApplicationProtocol = Reason(rawValue: "alpn")
        /// The server requires a client certificate and none was sent.
        public static let certificateRequired = Reason(rawValue: "certificate_required")
        /// The peer's certificate did not verify (its chain, a client certificate from an
        /// unknown CA, an alert from the peer about ours).
        public static let badCertificate = Reason(rawValue: "bad_certificate")
        /// The server's certificate has expired or is not valid yet.
        public static let certificateExpired = Reason(rawValue: "certificate_expired")
        /// The server's certificate is not for the name the client asked for.
        public static let hostnameMismatch = Reason(rawValue: "hostname_mismatch")
        /// The server's chain does not lead to a trusted root (self-signed, an unknown CA).
        public static let untrusted = Reason(rawValue: "untrusted")
        /// No certificate of the chain has a pinned SHA-256.
        public static let pinMismatch = Reason(rawValue: "pin_mismatch")
        /// The application's trust hook refused the chain.
        public static let refusedByPolicy = Reason(rawValue: "refused_by_policy")
        /// More handshake bytes than the budget allows before the handshake completes.
        public static let handshakeTooLarge = Reason(rawValue: "handshake_too_large")
        /// The handshake did not complete within the deadline.
        public static let timeout = Reason(rawValue: "timeout")
        /// The peer closed the connection during the handshake.
        public static let closedDuringHandshake = Reason(rawValue: "eof_in_handshake")
        /// The connection ended inside a record (a cut, or an attacker truncating).
        public static let truncated = Reason(rawValue: "truncated")
        /// The connection ended between records without a `close_notify`: what most
        /// clients do when an app is killed or a phone loses its network. Not counted
        /// as a failure by the daemon.
        public static let endedWithoutCloseNotify = Reason(rawValue: "eof")
        /// The peer tried to renegotiate (TLS 1.2); refused, and the connection closed.
        public static let renegotiation = Reason(rawValue: "renegotiation")
        /// A record failed authentication (tampering, or a broken peer).
        public static let badRecord = Reason(rawValue: "bad_record")
        /// The peer ended the handshake with an alert not covered above.
        public static let peerAlert = Reason(rawValue: "peer_alert")
        /// A certificate, key or CA file could not be used.
        public static let configuration = Reason(rawValue: "configuration")
        /// Anything else OpenSSL reported.
        public static let other = Reason(rawValue: "other")
    }

    private enum Kind: Hashable, Sendable {
        /// A failure of a connection, with what OpenSSL or the policy said.
        case connection(Reason, detail: String)
        /// A file of the configuration (certificate, key, CA) that could not be used.
        case file(key: String, path: String, detail: String)
        /// A configuration value that is wrong without any file involved.
        case setting(String)
    }

    private let kind: Kind

    private init(_ kind: Kind) { self.kind = kind }

    /// A connection failed for `reason`; `detail` is for logs.
    public static func connection(_ reason: Reason, _ detail: String) -> TLSError {
        TLSError(.connection(reason, detail: detail))
    }

    /// The file at `path` (the value of the configuration key `key`) could not be used.
    public static func file(key: String, path: String, _ detail: String) -> TLSError {
        TLSError(.file(key: key, path: path, detail: detail))
    }

    /// A setting that cannot be used (for example an empty ALPN list).
    public static func setting(_ detail: String) -> TLSError { TLSError(.setting(detail)) }

    /// The kind of failure.
    public var reason: Reason {
        switch kind {
        case .connection(let reason, _): return reason
        case .file, .setting: return .configuration
        }
    }

    /// The path of the file a configuration error is about, if any.
    public var path: String? {
        if case .file(_, let path, _) = kind { return path }
        return nil
    }

    public var description: String {
        switch kind {
        case .connection(let reason, let detail):
            return detail.isEmpty ? "TLS: \(reason)" : "TLS: \(reason): \(detail)"
        case .file(let key, let path, let detail):
            return "\(key) \"\(path)\": \(detail)"
        case .setting(let detail):
            return "TLS: \(detail)"
        }
    }
}
