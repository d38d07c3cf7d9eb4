import CLibSSL

#if canImport(Glibc)
import Glibc
#endif

/// One TLS connection's OpenSSL state (`SSL` and its two memory BIOs): ciphertext in,
/// plaintext out, and the reverse. It owns no socket and no thread: the shell
/// (``TLSChannel``) feeds it the bytes its loop read and writes the bytes it produced.
/// Every call runs to completion on the caller's thread; OpenSSL never blocks here,
/// because a memory BIO never does ("want read" only means "feed me more").
///
/// Lifetime: the `SSL` holds a reference to its ``TLSContext``'s `SSL_CTX`, so a
/// reloaded certificate (a new context) never pulls the old one from under a live
/// connection. The BIOs belong to the `SSL` and are freed with it in `deinit`.
///
/// Memory (docs/BENCHMARKS.md, "Memory per idle TLS connection"): OpenSSL's record
/// buffers are released whenever empty (`SSL_MODE_RELEASE_BUFFERS`, set on the
/// context); a memory BIO keeps its largest size, so ``releaseIdleBuffers()`` swaps a
/// grown, empty BIO for a fresh one; and ciphertext is fed and written at most
/// ``chunk`` bytes at a time, so neither BIO grows past a few records.
public final class TLSSession {
    /// At most this much ciphertext is fed, or plaintext written, between two drains:
    /// three full records. Larger reads and writes go through in slices.
    public static let chunk = 48 << 10

    let context: TLSContext
    private let ssl: OpaquePointer
    /// Set by the info callback when OpenSSL refused a renegotiation (it wrote a
    /// no_renegotiation alert and would carry on): the session ends the connection.
    fileprivate var refusedRenegotiation = false
    /// The application traffic secrets (RFC 8446 §7.1), captured by the keylog
    /// callback when the context hands records over (``TLSContext/RecordLayer``), and
    /// wiped when taken (``takeTrafficSecrets()``) or with the session.
    fileprivate var clientTrafficSecret: [UInt8] = []
    fileprivate var serverTrafficSecret: [UInt8] = []

    /// A session of `context`'s role. `serverName` (clients): sent as SNI when it is a
    /// name (RFC 6066: never an IP address) and checked against the certificate
    /// (names by `X509_VERIFY_PARAM_set1_host`, addresses by `set1_ip_asc`).
    public init(context: TLSContext, serverName: String? = nil) throws(TLSError) {
        TLSError.clearErrorQueue()
        guard let ssl = SSL_new(context.raw) else { throw .drainingErrorQueue("SSL_new") }
        self.ssl = ssl
        self.context = context
        guard let input = Self.makeBIO(), let output = Self.makeBIO() else {
            SSL_free(ssl)
            throw .drainingErrorQueue("BIO_new")
        }
        SSL_set_bio(ssl, input, output)
        if context.isServer {
            SSL_set_accept_state(ssl)
        } else {
            SSL_set_connect_state(ssl)
            if let name = serverName {
                let param = SSL_get0_param(ssl)
                if Self.isIPAddress(name) {
                    _ = X509_VERIFY_PARAM_set1_ip_asc(param, name)
                } else {
                    _ = CLibSSL_set_tlsext_host_name(ssl, name)
                    _ = X509_VERIFY_PARAM_set1_host(param, name, 0)
                }
            }
            let alpn = context.alpnWire
            if !alpn.isEmpty { _ = SSL_set_alpn_protos(ssl, alpn, UInt32(alpn.count)) }
        }
        // The info callback finds its session here (unretained: the SSL dies with us).
        _ = SSL_set_ex_data(ssl, 0, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit {
        SSL_free(ssl)
        Self.wipe(&clientTrafficSecret)
        Self.wipe(&serverTrafficSecret)
    }

    private static func makeBIO() -> OpaquePointer? {
        guard let bio = BIO_new(BIO_s_mem()) else { return nil }
        // Empty means "retry later", never EOF: the end of the stream is the socket's
        // to report (TLSStateMachine.transportEnded), not the BIO's.
        _ = CLibSSL_BIO_set_mem_eof_return(bio, -1)
        return bio
    }

    // MARK: Ciphertext in

    /// Buffers ciphertext read from the socket (at most ``chunk`` bytes; the channel
    /// slices larger reads).
    public func feed(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        precondition(bytes.count <= Self.chunk, "Internal inconsistency in TLSSession: feed more than a chunk")
        // A memory BIO takes every byte (it grows); failure is only out-of-memory.
        let written = BIO_write(SSL_get_rbio(ssl), base, Int32(bytes.count))
        precondition(written == Int32(bytes.count), "TLSSession: BIO_write failed (out of memory)")
    }

    /// Ciphertext fed and not yet read by OpenSSL.
    public var bufferedCiphertext: Int { Int(BIO_ctrl_pending(SSL_get_rbio(ssl))) }

    /// Whether part of a record waits for the rest: in the input BIO, or already in
    /// OpenSSL's record buffer (`SSL_has_pending`: data processed or not).
    public var holdsPartialRecord: Bool { bufferedCiphertext > 0 || SSL_has_pending(ssl) == 1 }

    /// One step of the handshake with what was fed.
    public enum HandshakeStep: Sendable {
        case wantsMore
        case completed(TLSConnectionInfo)
        case failed(TLSError)
    }

    /// Advances the handshake as far as the buffered ciphertext allows.
    public func handshake() -> HandshakeStep {
        TLSError.clearErrorQueue()
        let result = SSL_do_handshake(ssl)
        if result == 1 { return .completed(connectionInfo()) }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            return .wantsMore
        default:
            return .failed(.drainingErrorQueue("handshake"))
        }
    }

    /// What reading plaintext ended with.
    public enum ReadStep: Sendable {
        /// Everything buffered was read (a partial record may wait for more).
        case wantsMore
        /// The peer sent `close_notify`.
        case closeNotify
        case failed(TLSError)
    }

    /// Decrypts what was fed, handing each piece of plaintext to `deliver` (valid only
    /// during the call), until nothing whole is left.
    public func read(
        into buffer: UnsafeMutableRawBufferPointer, _ deliver: (UnsafeRawBufferPointer) -> Void
    ) -> ReadStep {
        TLSError.clearErrorQueue()
        while true {
            var count = 0
            let result = SSL_read_ex(ssl, buffer.baseAddress, buffer.count, &count)
            if refusedRenegotiation {
                return .failed(.connection(.renegotiation, "the peer asked to renegotiate"))
            }
            if result == 1 {
                deliver(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
                continue
            }
            switch SSL_get_error(ssl, result) {
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
                return .wantsMore
            case SSL_ERROR_ZERO_RETURN:
                return .closeNotify
            default:
                return .failed(.drainingErrorQueue("read", fallback: .badRecord))
            }
        }
    }

    // MARK: Plaintext in, ciphertext out

    /// Encrypts `plaintext` (at most ``chunk`` bytes) into the outgoing buffer. Into a
    /// memory BIO a write never blocks; it fails only on a broken session.
    public func write(_ plaintext: UnsafeRawBufferPointer) -> TLSError? {
        guard let base = plaintext.baseAddress, !plaintext.isEmpty else { return nil }
        TLSError.clearErrorQueue()
        var written = 0
        guard SSL_write_ex(ssl, base, plaintext.count, &written) == 1, written == plaintext.count else {
            return .drainingErrorQueue("write", fallback: .other)
        }
        return nil
    }

    /// Ciphertext waiting to be sent (handshake messages, records, alerts).
    public var pendingCiphertext: Int { Int(BIO_ctrl_pending(SSL_get_wbio(ssl))) }

    /// Moves the outgoing ciphertext through `scratch`, handing each piece to `body`
    /// (valid only during the call), until none is left.
    public func drainCiphertext(
        through scratch: UnsafeMutableRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> Void
    ) {
        let output = SSL_get_wbio(ssl)
        while BIO_ctrl_pending(output) > 0 {
            let count = BIO_read(output, scratch.baseAddress, Int32(min(scratch.count, Int(Int32.max))))
            guard count > 0 else { return }
            body(UnsafeRawBufferPointer(rebasing: scratch[..<Int(count)]))
        }
    }

    /// Queues a `close_notify` (once; a no-op before the handshake completed).
    public func shutdown() {
        guard SSL_is_init_finished(ssl) == 1 else { return }
        TLSError.clearErrorQueue()
        _ = SSL_shutdown(ssl)
        TLSError.clearErrorQueue()
    }

    /// Swaps each empty BIO that grew past `threshold` bytes for a fresh one: a memory
    /// BIO keeps its largest allocation, so an idle connection that once received or
    /// sent a burst would keep tens of KiB.
    public func releaseIdleBuffers(threshold: Int = 4_096) {
        if let input = SSL_get_rbio(ssl), Self.isEmptyAndLarge(input, threshold), let fresh = Self.makeBIO() {
            SSL_set0_rbio(ssl, fresh)  // frees the old one
        }
        if let output = SSL_get_wbio(ssl), Self.isEmptyAndLarge(output, threshold), let fresh = Self.makeBIO() {
            SSL_set0_wbio(ssl, fresh)
        }
    }

    private static func isEmptyAndLarge(_ bio: OpaquePointer, _ threshold: Int) -> Bool {
        guard BIO_ctrl_pending(bio) == 0 else { return false }
        var memory: UnsafeMutablePointer<BUF_MEM>?
        _ = CLibSSL_BIO_get_mem_ptr(bio, &memory)
        return (memory?.pointee.max ?? 0) > threshold
    }

    /// Tests only: starts a renegotiation (TLS 1.2), writing its ClientHello.
    @_spi(Testing) public func requestRenegotiation() {
        TLSError.clearErrorQueue()
        _ = SSL_renegotiate(ssl)
        _ = SSL_do_handshake(ssl)
        TLSError.clearErrorQueue()
    }

    /// Tests only: a client sends a KeyUpdate (TLS 1.3), asking for the peer's or not.
    @_spi(Testing) public func requestKeyUpdate(askingPeer: Bool) {
        TLSError.clearErrorQueue()
        _ = SSL_key_update(ssl, askingPeer ? SSL_KEY_UPDATE_REQUESTED : SSL_KEY_UPDATE_NOT_REQUESTED)
        _ = SSL_do_handshake(ssl)
        TLSError.clearErrorQueue()
    }

    // MARK: Facts

    /// The handshake's outcome, read once it completed.
    private func connectionInfo() -> TLSConnectionInfo {
        let version = String(cString: SSL_get_version(ssl))
        let cipher = SSL_get_current_cipher(ssl).map { String(cString: SSL_CIPHER_get_name($0)) } ?? ""
        var alpnData: UnsafePointer<UInt8>?
        var alpnLength: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &alpnData, &alpnLength)
        let alpn = alpnData.flatMap {
            alpnLength > 0
                ? String(decoding: UnsafeBufferPointer(start: $0, count: Int(alpnLength)), as: UTF8.self) : nil
        }
        var subject: String?
        var expiry: Double?
        var verification = TLSConnectionInfo.PeerVerification.notChecked
        if let peer = SSL_get1_peer_certificate(ssl) {
            subject = TLSCertificateText.subject(of: peer)
            expiry = CLibSSL_X509_notAfter_unix(peer)
            X509_free(peer)
            let result = SSL_get_verify_result(ssl)
            verification =
                result == X509_V_OK
                ? .trusted : .failed(TLSError.reason(ofVerifyResult: result), TLSError.verifyResultText(result))
        }
        var chain: [[UInt8]] = []
        if !context.isServer, let stack = SSL_get_peer_cert_chain(ssl) {
            // A client's peer chain starts with the leaf (a server's does not: OpenSSL).
            for index in 0..<OPENSSL_sk_num(stack) {
                guard let certificate = OPENSSL_sk_value(stack, index) else { continue }
                chain.append(TLSCertificateText.sha256(of: OpaquePointer(certificate)))
            }
        }
        return TLSConnectionInfo(
            protocolVersion: version, cipher: cipher, applicationProtocol: alpn,
            peerSubject: subject, peerCertificateExpiry: expiry, peerChainSHA256: chain,
            peerVerification: verification)
    }

    private static func isIPAddress(_ text: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1
    }

    // MARK: Handing the records over (TLSRecordSwitch)

    /// The facts ``TLSRecordSwitch/decide(_:)`` needs, read at the end of the handshake
    /// (after the channel drained the output).
    public func recordSwitchFacts() -> TLSRecordSwitch.Facts {
        let suite = SSL_get_current_cipher(ssl).map { SSL_CIPHER_get_protocol_id($0) } ?? 0
        return TLSRecordSwitch.Facts(
            enabled: context.recordLayer == .flowSync, isServer: context.isServer, protocolVersion: SSL_version(ssl),
            suiteID: suite, clientSecretLength: clientTrafficSecret.count,
            serverSecretLength: serverTrafficSecret.count, readBytesInsideOpenSSL: SSL_has_pending(ssl) == 1,
            pendingCiphertext: pendingCiphertext)
    }

    /// The ciphertext fed and not read by OpenSSL (from a record boundary: rule 5 of
    /// ``TLSRecordSwitch``), taken out of the input BIO.
    public func takeUnreadCiphertext() -> [UInt8] {
        let count = bufferedCiphertext
        guard count > 0 else { return [] }
        var bytes = [UInt8](repeating: 0, count: count)
        let read = bytes.withUnsafeMutableBytes { BIO_read(SSL_get_rbio(ssl), $0.baseAddress, Int32(count)) }
        precondition(Int(read) == count, "Internal inconsistency in TLSSession: the input BIO gave less than it held")
        return bytes
    }

    /// The two application traffic secrets; the session keeps no copy.
    public func takeTrafficSecrets() -> (client: [UInt8], server: [UInt8]) {
        defer {
            clientTrafficSecret = []
            serverTrafficSecret = []
        }
        return (clientTrafficSecret, serverTrafficSecret)
    }

    /// OpenSSL's keylog callback (set only on contexts that hand records over): keeps
    /// this connection's two application traffic secrets, nothing else, in memory only.
    /// A line is `LABEL <client random, hex> <secret, hex>` (the NSS key log format).
    static func keylogCallback(_ ssl: OpaquePointer?, _ line: UnsafePointer<CChar>?) {
        guard let ssl, let line, let data = SSL_get_ex_data(ssl, 0) else { return }
        let session = Unmanaged<TLSSession>.fromOpaque(data).takeUnretainedValue()
        let text = UnsafeRawBufferPointer(start: line, count: strlen(line))
        let fields = text.split(separator: UInt8(ascii: " "), maxSplits: 2)
        guard fields.count == 3 else { return }
        let label =
            fields[0].elementsEqual("CLIENT_TRAFFIC_SECRET_0".utf8)
            ? 1 : fields[0].elementsEqual("SERVER_TRAFFIC_SECRET_0".utf8) ? 2 : 0
        guard label != 0, let secret = Self.bytes(ofHex: fields[2]) else { return }
        if label == 1 { session.clientTrafficSecret = secret } else { session.serverTrafficSecret = secret }
    }

    private static func bytes(ofHex hex: Slice<UnsafeRawBufferPointer>) -> [UInt8]? {
        guard hex.count % 2 == 0, hex.count <= 128 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(hex.count / 2)
        var high: UInt8?
        for character in hex {
            let value: UInt8
            switch character {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = character - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): value = character - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): value = character - UInt8(ascii: "A") + 10
            default: return nil
            }
            if let h = high {
                out.append(h << 4 | value)
                high = nil
            } else {
                high = value
            }
        }
        return out
    }

    private static func wipe(_ bytes: inout [UInt8]) {
        for index in bytes.indices { bytes[index] = 0 }
    }

    // MARK: The info callback

    /// OpenSSL's state callback (set on every context): it notices a renegotiation
    /// refused by OpenSSL (a no_renegotiation alert written), which OpenSSL itself
    /// would tolerate and answer again for every attempt.
    static func infoCallback(_ ssl: OpaquePointer?, _ where_: Int32, _ value: Int32) {
        guard let ssl, where_ & SSL_CB_WRITE_ALERT == SSL_CB_WRITE_ALERT, value & 0xff == SSL_AD_NO_RENEGOTIATION,
            let data = SSL_get_ex_data(ssl, 0)
        else { return }
        Unmanaged<TLSSession>.fromOpaque(data).takeUnretainedValue().refusedRenegotiation = true
    }
}
