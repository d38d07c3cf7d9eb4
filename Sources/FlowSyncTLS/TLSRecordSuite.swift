import CLibSSL

/// A TLS 1.3 cipher suite the daemon's own record layer (``TLSRecordLayer``) can
/// protect records with, and its key schedule (RFC 8446 §7.1, §7.3): the traffic key
/// and IV of a traffic secret, and the next secret of a KeyUpdate (§7.2).
///
/// All three suites OpenSSL 3.0 negotiates by default are here, so a switch to the own
/// record layer never depends on which one the client preferred. Another suite (the
/// CCM ones, never enabled here) keeps the connection on OpenSSL's record layer.
public enum TLSRecordSuite: UInt16, Sendable, CaseIterable {
    case aes128GCMSHA256 = 0x1301
    case aes256GCMSHA384 = 0x1302
    case chacha20Poly1305SHA256 = 0x1303

    /// The AEAD key's length in bytes.
    public var keyLength: Int { self == .aes128GCMSHA256 ? 16 : 32 }
    /// The hash's output length: the length of every traffic secret.
    public var secretLength: Int { self == .aes256GCMSHA384 ? 48 : 32 }
    /// Every suite here has a 12-byte nonce and a 16-byte tag (RFC 8446 §5.3, RFC 5116).
    public static let ivLength = 12
    public static let tagLength = 16

    /// The digest of the suite's HKDF.
    var digest: OpaquePointer { self == .aes256GCMSHA384 ? EVP_sha384() : EVP_sha256() }

    /// The AEAD, fetched once per process: OpenSSL 3.0 looks a cipher up by name on
    /// every implicit fetch (an `EVP_aes_128_gcm()` handed to an init), which costs
    /// string compares and a lock; a fetched one is looked up here only.
    var cipher: OpaquePointer {
        switch self {
        case .aes128GCMSHA256: return Self.aes128
        case .aes256GCMSHA384: return Self.aes256
        case .chacha20Poly1305SHA256: return Self.chacha
        }
    }

    nonisolated(unsafe) private static let aes128 = fetch("AES-128-GCM")
    nonisolated(unsafe) private static let aes256 = fetch("AES-256-GCM")
    nonisolated(unsafe) private static let chacha = fetch("ChaCha20-Poly1305")

    private static func fetch(_ name: String) -> OpaquePointer {
        guard let cipher = EVP_CIPHER_fetch(nil, name, nil) else {
            preconditionFailure("Internal inconsistency in TLSRecordSuite: OpenSSL has no \(name)")
        }
        return cipher  // kept for the process's life: a handful of bytes, shared
    }

    /// HKDF-Expand-Label(secret, label, "", length) (RFC 8446 §7.1) for a `length` of at
    /// most the hash's: then HKDF-Expand (RFC 5869) is its first block,
    /// HMAC(secret, HkdfLabel ‖ 0x01), cut to `length`. Every use here (key, iv,
    /// "traffic upd") is that short.
    public func expandLabel(secret: [UInt8], label: String, length: Int) -> [UInt8] {
        precondition(length <= secretLength, "Internal inconsistency in TLSRecordSuite: one HKDF block only")
        let fullLabel = Array(("tls13 " + label).utf8)
        // struct { uint16 length; opaque label<7..255>; opaque context<0..255>; } HkdfLabel,
        // then the block counter 0x01 of HKDF-Expand's T(1).
        var info: [UInt8] = [UInt8(length >> 8), UInt8(length & 0xff), UInt8(fullLabel.count)]
        info += fullLabel
        info += [0, 1]
        var out = [UInt8](repeating: 0, count: 64)
        var outLength: UInt32 = 0
        let ok = secret.withUnsafeBytes { key in
            info.withUnsafeBytes { data in
                out.withUnsafeMutableBytes { md in
                    HMAC(
                        digest, key.baseAddress, Int32(key.count),
                        data.baseAddress?.assumingMemoryBound(to: UInt8.self),
                        data.count, md.baseAddress?.assumingMemoryBound(to: UInt8.self), &outLength) != nil
                }
            }
        }
        precondition(ok && Int(outLength) == secretLength, "Internal inconsistency in TLSRecordSuite: HMAC failed")
        return Array(out[..<length])
    }

    /// The traffic key and IV of a traffic secret (RFC 8446 §7.3).
    public func trafficKeys(secret: [UInt8]) -> (key: [UInt8], iv: [UInt8]) {
        (
            expandLabel(secret: secret, label: "key", length: keyLength),
            expandLabel(secret: secret, label: "iv", length: Self.ivLength)
        )
    }

    /// The traffic secret after a KeyUpdate (RFC 8446 §7.2):
    /// HKDF-Expand-Label(secret, "traffic upd", "", Hash.length).
    public func nextSecret(after secret: [UInt8]) -> [UInt8] {
        expandLabel(secret: secret, label: "traffic upd", length: secretLength)
    }
}
