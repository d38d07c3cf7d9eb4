/// What a completed handshake established: the facts a policy decides on and the
/// metrics count. Plain values, no OpenSSL.
public struct TLSConnectionInfo: Hashable, Sendable {
    /// How OpenSSL judged the peer's certificate chain.
    public enum PeerVerification: Hashable, Sendable {
        /// Not checked (a server that asks no client certificate, or a client that sent none).
        case notChecked
        /// The chain leads to a trusted root and (client side) names the expected host.
        case trusted
        /// It did not verify: why, as a ``TLSError/Reason``, and OpenSSL's text.
        case failed(TLSError.Reason, String)
    }

    /// `TLSv1.3` or `TLSv1.2`.
    public var protocolVersion: String
    /// The cipher suite (`TLS_AES_256_GCM_SHA384`, …).
    public var cipher: String
    /// The ALPN protocol agreed (`flowsync`), or `nil` when the client offered none.
    public var applicationProtocol: String?
    /// The subject (RFC 2253) of the peer's certificate, when it sent one: always for a
    /// server, for a client only under mTLS.
    public var peerSubject: String?
    /// The peer certificate's `notAfter`, seconds since 1970.
    public var peerCertificateExpiry: Double?
    /// The SHA-256 of each certificate the peer sent, leaf first (client side: what
    /// ``TLSPolicy`` pins are compared with).
    public var peerChainSHA256: [[UInt8]]
    /// OpenSSL's verdict on the peer's chain.
    public var peerVerification: PeerVerification

    public init(
        protocolVersion: String, cipher: String, applicationProtocol: String?, peerSubject: String?,
        peerCertificateExpiry: Double?, peerChainSHA256: [[UInt8]], peerVerification: PeerVerification
    ) {
        self.protocolVersion = protocolVersion
        self.cipher = cipher
        self.applicationProtocol = applicationProtocol
        self.peerSubject = peerSubject
        self.peerCertificateExpiry = peerCertificateExpiry
        self.peerChainSHA256 = peerChainSHA256
        self.peerVerification = peerVerification
    }
}
