import CLibSSL

/// One direction of a TLS 1.3 connection's record protection (RFC 8446 §5.2, §5.3):
/// an AEAD context whose key is set once per traffic secret, the IV, the current
/// secret (for the next KeyUpdate) and the 64-bit record sequence number. This is all
/// the own record layer (``TLSRecordLayer``) keeps per direction, instead of an `SSL`.
///
/// The rules, each with its reason:
/// 1. **The key is set once** (`EVP_CipherInit_ex` with the cipher and key at
///    creation and at a KeyUpdate); each record only sets its nonce, so a record costs
///    no key schedule and no cipher lookup.
/// 2. **Nonce = IV XOR the sequence number**, left-padded to 12 bytes (§5.3); the
///    sequence number starts at 0 for each traffic secret and rises by one per record.
///    The IV is kept inline as three words, so a record's nonce is two XORs on the
///    stack, with no array to reach (an array is one more object, and one more cache
///    miss, per delivery in a fan-out).
/// 3. **A sequence number never wraps** (§5.3: "MUST NOT wrap"): the record that would
///    use 2^64 − 1 is refused (``isExhausted``) and the connection closes.
/// 4. **The tag is checked by OpenSSL** (`EVP_DecryptFinal_ex`, constant time); the
///    decrypted bytes are used only after it said yes.
/// 5. **Secrets are wiped** when replaced and when the direction ends (best effort:
///    Swift arrays may have been copied by the optimizer; OpenSSL clears its context).
/// 6. **Sealing is a sequence of calls the layer drives** (``beginRecord(contentLength:into:)``,
///    ``encrypt(_:count:into:)`` any number of times, ``finishRecord(into:)``): the
///    content type byte is content to this object, so the layer can encrypt it in the
///    same call as the bytes before it (``TLSRecordLayer``, rule 1). In place
///    (source = destination) is allowed: AES-GCM and ChaCha20-Poly1305 are streams.
///
/// Loop-confined, like the channel that owns it.
final class TLSRecordProtection {
    let suite: TLSRecordSuite
    private let encrypts: Bool
    private let context: OpaquePointer
    private var secret: [UInt8]
    /// The IV's 12 bytes as three words in memory order (rule 2).
    private var iv: (UInt32, UInt32, UInt32)
    /// The next record's sequence number.
    private(set) var sequence: UInt64

    /// A direction keyed from `secret` (a traffic secret of `suite`), starting at
    /// record `sequence` (0 after a handshake; tests start elsewhere).
    init(suite: TLSRecordSuite, secret: [UInt8], encrypts: Bool, sequence: UInt64 = 0) {
        guard let context = EVP_CIPHER_CTX_new() else {
            preconditionFailure("TLSRecordProtection: EVP_CIPHER_CTX_new failed (out of memory)")
        }
        self.suite = suite
        self.encrypts = encrypts
        self.context = context
        self.secret = secret
        self.sequence = sequence
        let (key, iv) = suite.trafficKeys(secret: secret)
        self.iv = Self.words(iv)
        let ok = key.withUnsafeBufferPointer {
            EVP_CipherInit_ex(context, suite.cipher, nil, $0.baseAddress, nil, encrypts ? 1 : 0)
        }
        precondition(ok == 1, "Internal inconsistency in TLSRecordProtection: the cipher refused its key")
    }

    deinit {
        EVP_CIPHER_CTX_free(context)
        Self.wipe(&secret)
        iv = (0, 0, 0)
    }

    /// Rule 3: no record may use the last sequence number.
    var isExhausted: Bool { sequence == UInt64.max }

    /// A KeyUpdate (§4.6.3, §7.2): the next traffic secret, its key and IV; the
    /// sequence number starts again at 0.
    func update() {
        let next = suite.nextSecret(after: secret)
        Self.wipe(&secret)
        secret = next
        let (key, iv) = suite.trafficKeys(secret: secret)
        self.iv = Self.words(iv)
        let ok = key.withUnsafeBufferPointer { EVP_CipherInit_ex(context, nil, nil, $0.baseAddress, nil, -1) }
        precondition(ok == 1, "Internal inconsistency in TLSRecordProtection: the cipher refused its new key")
        sequence = 0
    }

    /// The IV's bytes as the three words of ``iv``, in memory order.
    private static func words(_ iv: [UInt8]) -> (UInt32, UInt32, UInt32) {
        precondition(iv.count == TLSRecordSuite.ivLength, "Internal inconsistency in TLSRecordProtection: an IV")
        return iv.withUnsafeBytes {
            (
                $0.loadUnaligned(fromByteOffset: 0, as: UInt32.self),
                $0.loadUnaligned(fromByteOffset: 4, as: UInt32.self),
                $0.loadUnaligned(fromByteOffset: 8, as: UInt32.self)
            )
        }
    }

    /// Sets the nonce of the record about to be sealed or opened (rule 2): the
    /// sequence number, big-endian, XORed into the IV's last eight bytes.
    @inline(__always)
    private func startRecord() {
        var nonce = iv
        nonce.1 ^= UInt32(truncatingIfNeeded: sequence >> 32).bigEndian
        nonce.2 ^= UInt32(truncatingIfNeeded: sequence).bigEndian
        let ok = withUnsafeBytes(of: &nonce) {
            EVP_CipherInit_ex(context, nil, nil, nil, $0.baseAddress!.assumingMemoryBound(to: UInt8.self), -1)
        }
        precondition(ok == 1, "Internal inconsistency in TLSRecordProtection: the nonce was refused")
    }

    // MARK: Sealing (the write direction)

    /// Starts a record of `contentLength` bytes of content (plus the type byte): writes
    /// its header at `out` and authenticates it. Then ``encrypt(_:count:into:)`` for
    /// the content and its type byte (rule 6), then ``finishRecord(into:)``.
    /// - Returns: The header's length.
    func beginRecord(contentLength: Int, into out: UnsafeMutableRawPointer) -> Int {
        precondition(encrypts && !isExhausted, "Internal inconsistency in TLSRecordProtection: sealing")
        let body = contentLength + 1 + TLSRecordSuite.tagLength
        let header = TLSRecordFraming.header(bodyLength: body)
        out.storeBytes(of: header.0, toByteOffset: 0, as: UInt8.self)
        out.storeBytes(of: header.1, toByteOffset: 1, as: UInt8.self)
        out.storeBytes(of: header.2, toByteOffset: 2, as: UInt8.self)
        out.storeBytes(of: header.3, toByteOffset: 3, as: UInt8.self)
        out.storeBytes(of: header.4, toByteOffset: 4, as: UInt8.self)
        startRecord()
        var length: Int32 = 0
        // The additional data is the record's header (§5.2).
        let ok = EVP_EncryptUpdate(
            context, nil, &length, out.assumingMemoryBound(to: UInt8.self), Int32(TLSRecordFraming.headerLength))
        precondition(ok == 1, "Internal inconsistency in TLSRecordProtection: the header was refused")
        return TLSRecordFraming.headerLength
    }

    /// Encrypts `count` bytes of the record's inner plaintext from `source` to `out`
    /// (the same address: in place).
    /// - Returns: The bytes written (`count`: AEAD ciphers here are streams).
    @inline(__always)
    func encrypt(_ source: UnsafeRawPointer, count: Int, into out: UnsafeMutableRawPointer) -> Int {
        guard count > 0 else { return 0 }
        var length: Int32 = 0
        let ok = EVP_EncryptUpdate(
            context, out.assumingMemoryBound(to: UInt8.self), &length, source.assumingMemoryBound(to: UInt8.self),
            Int32(count))
        precondition(ok == 1 && Int(length) == count, "Internal inconsistency in TLSRecordProtection: sealing")
        return count
    }

    /// Ends the record, its type byte already encrypted (rule 6): the tag.
    /// - Returns: The bytes written (the tag).
    func finishRecord(into out: UnsafeMutableRawPointer) -> Int {
        var length: Int32 = 0
        var ok = EVP_EncryptFinal_ex(context, out.assumingMemoryBound(to: UInt8.self), &length)
        let written = Int(length)
        ok &= EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_GET_TAG, Int32(TLSRecordSuite.tagLength), out + written)
        precondition(ok == 1 && written == 0, "Internal inconsistency in TLSRecordProtection: finishing a record")
        sequence += 1
        return TLSRecordSuite.tagLength
    }

    /// Seals a whole record of `content` and `type` at `out` (a KeyUpdate, an alert):
    /// the content and its type byte are copied behind the header and encrypted there.
    /// - Returns: The record's length.
    func sealRecord(
        _ content: UnsafeRawBufferPointer, type: TLSRecordFraming.ContentType, into out: UnsafeMutableRawPointer
    ) -> Int {
        var written = beginRecord(contentLength: content.count, into: out)
        let inner = out + written
        if let base = content.baseAddress { inner.copyMemory(from: base, byteCount: content.count) }
        inner.storeBytes(of: type.rawValue, toByteOffset: content.count, as: UInt8.self)
        written += encrypt(inner, count: content.count + 1, into: inner)
        written += finishRecord(into: out + written)
        return written
    }

    // MARK: Opening (the read direction)

    /// Decrypts one whole record (header and body, its length already checked by
    /// ``TLSRecordFraming/bodyLength(ofHeader:)``) into `out`, which holds at least
    /// the body's length.
    /// - Returns: The inner plaintext's length, or `nil` when the tag is wrong (rule 4).
    func open(_ record: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Int? {
        precondition(!encrypts && !isExhausted, "Internal inconsistency in TLSRecordProtection: opening")
        let header = TLSRecordFraming.headerLength
        let ciphertext = record.count - header - TLSRecordSuite.tagLength
        precondition(ciphertext >= 0 && out.count >= ciphertext, "Internal inconsistency in TLSRecordProtection: sizes")
        startRecord()
        let base = record.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let target = out.baseAddress!.assumingMemoryBound(to: UInt8.self)
        var length: Int32 = 0
        var ok = EVP_DecryptUpdate(context, nil, &length, base, Int32(header))
        ok &= EVP_DecryptUpdate(context, target, &length, base + header, Int32(ciphertext))
        let written = Int(length)
        // The expected tag is given before the final step, which compares it in
        // constant time.
        ok &= EVP_CIPHER_CTX_ctrl(
            context, EVP_CTRL_AEAD_SET_TAG, Int32(TLSRecordSuite.tagLength),
            UnsafeMutableRawPointer(mutating: record.baseAddress! + header + ciphertext))
        guard ok == 1, EVP_DecryptFinal_ex(context, target + written, &length) == 1 else { return nil }
        sequence += 1
        return written + Int(length)
    }

    private static func wipe(_ bytes: inout [UInt8]) {
        for index in bytes.indices { bytes[index] = 0 }
    }
}
