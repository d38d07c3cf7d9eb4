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
/// 3. **A sequence number never wraps** (§5.3: "MUST NOT wrap"): the record that would
///    use 2^64 − 1 is refused (``isExhausted``) and the connection closes.
/// 4. **The tag is checked by OpenSSL** (`EVP_DecryptFinal_ex`, constant time); the
///    decrypted bytes are used only after it said yes.
/// 5. **Secrets are wiped** when replaced and when the direction ends (best effort:
///    Swift arrays may have been copied by the optimizer; OpenSSL clears its context).
///
/// Loop-confined, like the channel that owns it.
final class TLSRecordProtection {
    let suite: TLSRecordSuite
    private let encrypts: Bool
    private let context: OpaquePointer
    private var secret: [UInt8]
    private var iv: [UInt8]
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
        self.iv = iv
        let ok = key.withUnsafeBufferPointer {
            EVP_CipherInit_ex(context, suite.cipher, nil, $0.baseAddress, nil, encrypts ? 1 : 0)
        }
        precondition(ok == 1, "Internal inconsistency in TLSRecordProtection: the cipher refused its key")
    }

    deinit {
        EVP_CIPHER_CTX_free(context)
        Self.wipe(&secret)
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
        self.iv = iv
        let ok = key.withUnsafeBufferPointer { EVP_CipherInit_ex(context, nil, nil, $0.baseAddress, nil, -1) }
        precondition(ok == 1, "Internal inconsistency in TLSRecordProtection: the cipher refused its new key")
        sequence = 0
    }

    /// Sets the nonce of the record about to be sealed or opened (rule 2).
    private func startRecord() {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: TLSRecordSuite.ivLength) { nonce in
            for index in 0..<TLSRecordSuite.ivLength { nonce[index] = iv[index] }
            var sequence = self.sequence
            for index in stride(from: TLSRecordSuite.ivLength - 1, through: TLSRecordSuite.ivLength - 8, by: -1) {
                nonce[index] ^= UInt8(truncatingIfNeeded: sequence)
                sequence >>= 8
            }
            let ok = EVP_CipherInit_ex(context, nil, nil, nil, nonce.baseAddress, -1)
            precondition(ok == 1, "Internal inconsistency in TLSRecordProtection: the nonce was refused")
        }
    }

    // MARK: Sealing (the write direction)

    /// Starts a record of `contentLength` bytes of content (plus the type byte): writes
    /// its header at `out` and authenticates it. Then ``sealPiece(_:into:)`` for each
    /// piece of content, then ``finishRecord(type:into:)``.
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

    /// Encrypts one piece of the record's content to `out`.
    /// - Returns: The bytes written (the piece's length: AEAD ciphers here are streams).
    func sealPiece(_ piece: UnsafeRawBufferPointer, into out: UnsafeMutableRawPointer) -> Int {
        guard let base = piece.baseAddress, !piece.isEmpty else { return 0 }
        var length: Int32 = 0
        let ok = EVP_EncryptUpdate(
            context, out.assumingMemoryBound(to: UInt8.self), &length, base.assumingMemoryBound(to: UInt8.self),
            Int32(piece.count))
        precondition(ok == 1 && Int(length) == piece.count, "Internal inconsistency in TLSRecordProtection: sealing")
        return Int(length)
    }

    /// Ends the record: the content type byte, then the tag.
    /// - Returns: The bytes written (1 + the tag).
    func finishRecord(type: TLSRecordFraming.ContentType, into out: UnsafeMutableRawPointer) -> Int {
        var typeByte = type.rawValue
        var written = 0
        var length: Int32 = 0
        var ok = EVP_EncryptUpdate(context, out.assumingMemoryBound(to: UInt8.self), &length, &typeByte, 1)
        written += Int(length)
        ok &= EVP_EncryptFinal_ex(context, (out + written).assumingMemoryBound(to: UInt8.self), &length)
        written += Int(length)
        ok &= EVP_CIPHER_CTX_ctrl(
            context, EVP_CTRL_AEAD_GET_TAG, Int32(TLSRecordSuite.tagLength), out + written)
        precondition(ok == 1 && written == 1, "Internal inconsistency in TLSRecordProtection: finishing a record")
        sequence += 1
        return written + TLSRecordSuite.tagLength
    }

    /// Seals a whole record of `content` and `type` at `out` (a KeyUpdate, an alert).
    /// - Returns: The record's length.
    func sealRecord(
        _ content: UnsafeRawBufferPointer, type: TLSRecordFraming.ContentType, into out: UnsafeMutableRawPointer
    ) -> Int {
        var written = beginRecord(contentLength: content.count, into: out)
        written += sealPiece(content, into: out + written)
        written += finishRecord(type: type, into: out + written)
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
