import CLibSSL

/// A TLS protocol version a context accepts at least.
public enum TLSVersion: String, Hashable, Sendable, CaseIterable, Comparable {
    case tls12 = "1.2"
    case tls13 = "1.3"

    /// OpenSSL's number for it.
    var openSSLValue: Int32 {
        switch self {
        case .tls12: return TLS1_2_VERSION
        case .tls13: return TLS1_3_VERSION
        }
    }

    /// The name OpenSSL reports for a session (`SSL_get_version`): `TLSv1.2`, `TLSv1.3`.
    public var protocolName: String { "TLSv\(rawValue)" }

    public static func < (a: TLSVersion, b: TLSVersion) -> Bool { a.rawValue < b.rawValue }
}

/// Whether a server asks for client certificates (mTLS).
public enum ClientCertificateMode: String, Hashable, Sendable, CaseIterable {
    /// Never asked for.
    case off
    /// Asked for and verified against the CA when sent; a client without one still
    /// connects (its token decides, as without mTLS).
    case optional
    /// A client without a certificate that verifies against the CA is refused in the
    /// handshake.
    case required
}

/// The settings every connection made from one context shares: an OpenSSL `SSL_CTX`
/// with its certificate, key, trust store and protocol limits. Immutable once made; a
/// new certificate is a new context (``server(_:)``), and the connections of the old
/// one keep it alive (OpenSSL counts its references) until they close.
///
/// Thread safety: OpenSSL allows one `SSL_CTX` to make sessions on several threads;
/// nothing here changes the context after it is made.
public final class TLSContext: @unchecked Sendable {
    /// The OpenSSL this build runs on (`OpenSSL_version(OPENSSL_VERSION)`), e.g.
    /// "OpenSSL 3.0.17 1 Jul 2025": for logs and benchmark reports.
    public static var libraryVersion: String { String(cString: OpenSSL_version(OPENSSL_VERSION)) }

    /// A server's settings (`[tls]` of flowsyncd's configuration).
    public struct ServerOptions: Hashable, Sendable {
        /// PEM file: the server's certificate first, then its intermediates.
        public var certificateChainFile: String
        /// PEM file: the private key of that certificate.
        public var privateKeyFile: String
        /// The lowest version accepted. Default TLS 1.3.
        public var minimumVersion: TLSVersion = .tls13
        /// Whether clients are asked for certificates. Default off.
        public var clientCertificates: ClientCertificateMode = .off
        /// PEM file of the CAs that sign client certificates (needed unless off).
        public var clientCAFile: String?
        /// Tests only: the highest version offered (a peer that cannot do the minimum).
        @_spi(Testing) public var maximumVersion: TLSVersion?
        // ALPN is always `flowsync`: a client that offers ALPN without it is refused
        // (`no_application_protocol`); one that offers none (openssl s_client, a plain
        // Python `ssl` socket) is served.

        /// Which record layer carries a TLS 1.3 connection after its handshake
        /// (``RecordLayer``). Default ``RecordLayer/openSSL``.
        public var recordLayer = RecordLayer.openSSL

        public init(certificateChainFile: String, privateKeyFile: String) {
            self.certificateChainFile = certificateChainFile
            self.privateKeyFile = privateKeyFile
        }
    }

    /// A client's settings. Which chains are finally accepted (pins, a hook) is decided
    /// above this layer, from the facts a handshake gathers (``TLSConnectionInfo``).
    public struct ClientOptions: Hashable, Sendable {
        /// The lowest version accepted. Default TLS 1.2 (the Apple transport's too): a
        /// server that offers less is refused, so a downgrade cannot be forced.
        public var minimumVersion: TLSVersion = .tls12
        /// Verify against the system's trust store (Debian: `/etc/ssl/certs`). Default true.
        public var usesSystemTrustStore = true
        /// More roots to trust (a private CA), each a DER certificate.
        public var additionalTrustedRoots: [[UInt8]] = []
        /// More roots to trust, from a PEM file (the load tester's `--cacert`).
        public var additionalTrustedRootsFile: String?
        /// ALPN offered. Default `["flowsync"]`; a server may answer none (a TLS proxy
        /// such as stunnel), but never another protocol.
        public var applicationProtocols = ["flowsync"]
        /// A client certificate (PEM chain) and its key, for servers that require mTLS.
        public var certificateChainFile: String?
        public var privateKeyFile: String?
        /// Tests only: the highest version offered (a client that cannot do the minimum).
        @_spi(Testing) public var maximumVersion: TLSVersion?
        /// Tests only: a hostile client that may ask to renegotiate.
        @_spi(Testing) public var allowsRenegotiation = false

        public init() {}
    }

    /// Which code protects a server's TLS 1.3 records once the handshake completed.
    public enum RecordLayer: String, Hashable, Sendable, CaseIterable {
        /// OpenSSL's own (`SSL_read`/`SSL_write`), the connection's `SSL` kept.
        case openSSL = "openssl"
        /// The daemon's (``TLSRecordLayer``): the traffic secrets are captured during
        /// the handshake, the `SSL` freed after it (``TLSRecordSwitch``).
        case flowSync = "flowsync"
    }

    let raw: OpaquePointer
    /// Whether sessions made from it are servers.
    public let isServer: Bool
    /// The record layer of its TLS 1.3 server connections.
    public let recordLayer: RecordLayer
    /// The server certificate's `notAfter`, seconds since 1970 (servers only).
    public let certificateExpiry: Double?
    /// The server certificate's subject (RFC 2253), for logs.
    public let certificateSubject: String?
    /// The ALPN protocols, in wire form (length-prefixed names).
    let alpnWire: [UInt8]

    private init(
        raw: OpaquePointer, isServer: Bool, alpn: [UInt8], expiry: Double?, subject: String?,
        recordLayer: RecordLayer = .openSSL
    ) {
        self.raw = raw
        self.isServer = isServer
        self.recordLayer = recordLayer
        self.alpnWire = alpn
        self.certificateExpiry = expiry
        self.certificateSubject = subject
    }

    deinit { SSL_CTX_free(raw) }

    /// A server context. Every file is read now: a missing, unreadable or mismatched
    /// certificate or key throws a ``TLSError`` naming the file (a reload keeps the old
    /// context then).
    public static func server(_ options: ServerOptions) throws(TLSError) -> TLSContext {
        TLSError.clearErrorQueue()
        let alpn = try wireALPN(["flowsync"])
        guard let ctx = SSL_CTX_new(TLS_server_method()) else { throw .drainingErrorQueue("SSL_CTX_new") }
        var owned: OpaquePointer? = ctx
        defer { if let owned { SSL_CTX_free(owned) } }
        try configureCommon(ctx, minimum: options.minimumVersion, maximum: options.maximumVersion)
        // Tickets and a session cache would make reconnects cheaper, but a cache costs
        // memory per session and tickets add two messages to every handshake; FlowSync
        // clients keep long connections, so every handshake is a full one (docs/SECURITY.md).
        // No tickets also matters to the own record layer (TLSRecordSwitch, rule 6):
        // OpenSSL sends nothing after the handshake that the switch would have to carry.
        _ = SSL_CTX_set_num_tickets(ctx, 0)
        if options.recordLayer == .flowSync {
            // The traffic secrets are handed to the session in memory (never written
            // anywhere); the callback runs only during the handshake.
            SSL_CTX_set_keylog_callback(ctx) { ssl, line in TLSSession.keylogCallback(ssl, line) }
        }
        _ = CLibSSL_CTX_set_session_cache_mode(ctx, Int(SSL_SESS_CACHE_OFF))
        _ = SSL_CTX_set_options(ctx, CLibSSL_OP_NO_TICKET() | CLibSSL_OP_CIPHER_SERVER_PREFERENCE())
        let chain = options.certificateChainFile
        let key = options.privateKeyFile
        guard SSL_CTX_use_certificate_chain_file(ctx, chain) == 1 else {
            throw .file(
                key: "tls.certificate_file", path: chain, drainingErrorQueue: "cannot load the certificate chain")
        }
        guard SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) == 1, SSL_CTX_check_private_key(ctx) == 1 else {
            // OpenSSL refuses a key of another certificate while loading it; say which
            // of the two it is: an unreadable key, or the wrong one.
            guard isReadablePrivateKey(key) else {
                throw .file(key: "tls.key_file", path: key, drainingErrorQueue: "cannot load the private key")
            }
            throw .file(
                key: "tls.key_file", path: key,
                drainingErrorQueue: "does not match the certificate in tls.certificate_file \"\(chain)\"")
        }
        if options.clientCertificates != .off {
            guard let caFile = options.clientCAFile else {
                throw .setting(
                    "client certificates are \(options.clientCertificates.rawValue) but tls.client_ca_file is not set")
            }
            guard SSL_CTX_load_verify_locations(ctx, caFile, nil) == 1, let names = SSL_load_client_CA_file(caFile)
            else {
                throw .file(
                    key: "tls.client_ca_file", path: caFile, drainingErrorQueue: "cannot load the CA certificates")
            }
            SSL_CTX_set_client_CA_list(ctx, names)
            var mode = SSL_VERIFY_PEER
            if options.clientCertificates == .required { mode |= SSL_VERIFY_FAIL_IF_NO_PEER_CERT }
            SSL_CTX_set_verify(ctx, mode, nil)
        }
        SSL_CTX_set_alpn_select_cb(
            ctx,
            { _, out, outLength, offered, offeredLength, _ in
                // Answers "flowsync" when the client offers it; refuses a client whose list
                // lacks it (a client that offers no ALPN is not asked).
                guard let out, let outLength, let offered else { return SSL_TLSEXT_ERR_ALERT_FATAL }
                var index = 0
                let count = Int(offeredLength)
                while index < count {
                    let length = Int(offered[index])
                    let start = index + 1
                    guard start + length <= count else { break }
                    if length == 8, memcmp(offered + start, "flowsync", 8) == 0 {
                        out.pointee = UnsafePointer(offered + start)
                        outLength.pointee = UInt8(length)
                        return SSL_TLSEXT_ERR_OK
                    }
                    index = start + length
                }
                return SSL_TLSEXT_ERR_ALERT_FATAL
            }, nil)
        let certificate = SSL_CTX_get0_certificate(ctx)
        let expiry = certificate.map { CLibSSL_X509_notAfter_unix($0) }
        let subject = certificate.flatMap { TLSCertificateText.subject(of: $0) }
        owned = nil
        return TLSContext(
            raw: ctx, isServer: true, alpn: alpn, expiry: expiry, subject: subject, recordLayer: options.recordLayer)
    }

    /// A client context.
    public static func client(_ options: ClientOptions) throws(TLSError) -> TLSContext {
        TLSError.clearErrorQueue()
        let alpn = try wireALPN(options.applicationProtocols)
        guard let ctx = SSL_CTX_new(TLS_client_method()) else { throw .drainingErrorQueue("SSL_CTX_new") }
        var owned: OpaquePointer? = ctx
        defer { if let owned { SSL_CTX_free(owned) } }
        try configureCommon(ctx, minimum: options.minimumVersion, maximum: options.maximumVersion)
        if options.allowsRenegotiation { _ = SSL_CTX_clear_options(ctx, CLibSSL_OP_NO_RENEGOTIATION()) }
        // The chain is verified by OpenSSL during the handshake, but the verdict is not
        // applied there (SSL_VERIFY_NONE): the session reads it afterwards, with the
        // chain's digests, and the policy (pins, a hook) decides before any byte of the
        // application is sent (TLSStateMachine: verifyingPeer).
        SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nil)
        if options.usesSystemTrustStore, SSL_CTX_set_default_verify_paths(ctx) != 1 {
            throw .drainingErrorQueue("the system trust store", fallback: .configuration)
        }
        if !options.additionalTrustedRoots.isEmpty {
            let store = SSL_CTX_get_cert_store(ctx)
            for der in options.additionalTrustedRoots {
                let certificate: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
                    var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
                    return d2i_X509(nil, &cursor, buffer.count)
                }
                guard let certificate else {
                    throw .drainingErrorQueue("a trusted root is not a DER certificate", fallback: .configuration)
                }
                defer { X509_free(certificate) }
                guard X509_STORE_add_cert(store, certificate) == 1 else {
                    throw .drainingErrorQueue("cannot add a trusted root", fallback: .configuration)
                }
            }
        }
        if let file = options.additionalTrustedRootsFile, SSL_CTX_load_verify_locations(ctx, file, nil) != 1 {
            throw .file(key: "trusted roots", path: file, drainingErrorQueue: "cannot load the CA certificates")
        }
        if let chain = options.certificateChainFile {
            guard let key = options.privateKeyFile else { throw .setting("a client certificate needs its private key") }
            guard SSL_CTX_use_certificate_chain_file(ctx, chain) == 1 else {
                throw .file(
                    key: "client certificate", path: chain, drainingErrorQueue: "cannot load the certificate chain")
            }
            guard SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) == 1, SSL_CTX_check_private_key(ctx) == 1
            else {
                throw .file(
                    key: "client key", path: key,
                    drainingErrorQueue: "cannot load the key, or it does not match the certificate")
            }
        }
        owned = nil
        return TLSContext(raw: ctx, isServer: false, alpn: alpn, expiry: nil, subject: nil)
    }

    /// What both roles set: the version floor, no renegotiation, no compression, and
    /// buffers released when idle.
    private static func configureCommon(
        _ ctx: OpaquePointer, minimum: TLSVersion, maximum: TLSVersion?
    ) throws(TLSError) {
        guard CLibSSL_CTX_set_min_proto_version(ctx, minimum.openSSLValue) == 1 else {
            throw .drainingErrorQueue("cannot set the minimum version", fallback: .configuration)
        }
        if let maximum { _ = CLibSSL_CTX_set_max_proto_version(ctx, maximum.openSSLValue) }
        // Renegotiation (TLS 1.2 only) is refused: it lets a peer make the server redo
        // a handshake at will, and nothing here needs it. A peer that asks anyway gets a
        // no_renegotiation alert, and the session ends the connection (TLSSession).
        _ = SSL_CTX_set_options(ctx, CLibSSL_OP_NO_RENEGOTIATION() | CLibSSL_OP_NO_COMPRESSION())
        // SSL_MODE_RELEASE_BUFFERS: OpenSSL frees a connection's 16–34 KiB record buffers
        // whenever they are empty, so an idle connection holds none (docs/BENCHMARKS.md,
        // "Memory per idle TLS connection").
        _ = CLibSSL_CTX_set_mode(ctx, Int(SSL_MODE_RELEASE_BUFFERS))
        SSL_CTX_set_info_callback(
            ctx,
            { ssl, where_, value in
                TLSSession.infoCallback(ssl, where_, value)
            })
    }

    /// Whether `path` holds a PEM private key OpenSSL can read.
    private static func isReadablePrivateKey(_ path: String) -> Bool {
        guard let bio = BIO_new_file(path, "r") else { return false }
        defer { BIO_free(bio) }
        guard let key = PEM_read_bio_PrivateKey(bio, nil, nil, nil) else { return false }
        EVP_PKEY_free(key)
        return true
    }

    /// ALPN names in wire form: each a length byte and the name.
    private static func wireALPN(_ names: [String]) throws(TLSError) -> [UInt8] {
        var wire: [UInt8] = []
        for name in names {
            let bytes = Array(name.utf8)
            guard (1...255).contains(bytes.count) else { throw .setting("ALPN names must be 1…255 bytes: \"\(name)\"") }
            wire.append(UInt8(bytes.count))
            wire += bytes
        }
        return wire
    }
}
