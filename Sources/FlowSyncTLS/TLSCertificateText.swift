import CLibSSL

/// Facts read from an `X509` certificate: its subject as text, its DER bytes and their
/// SHA-256 (a pin), its expiry.
enum TLSCertificateText {
    /// The subject in RFC 2253 form (`CN=reporting,O=Acme`), as
    /// `openssl x509 -noout -subject -nameopt RFC2253` prints it.
    static func subject(of certificate: OpaquePointer) -> String? {
        guard let name = X509_get_subject_name(certificate), let bio = BIO_new(BIO_s_mem()) else { return nil }
        defer { BIO_free(bio) }
        guard X509_NAME_print_ex(bio, name, 0, CLibSSL_XN_FLAG_RFC2253()) >= 0 else { return nil }
        var memory: UnsafeMutablePointer<BUF_MEM>?
        _ = CLibSSL_BIO_get_mem_ptr(bio, &memory)
        guard let memory, let data = memory.pointee.data else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: data, count: memory.pointee.length), as: UTF8.self)
    }

    /// The SHA-256 of the certificate's DER encoding (what ``TLSPolicy`` pins).
    static func sha256(of certificate: OpaquePointer) -> [UInt8] {
        var der: UnsafeMutablePointer<UInt8>?
        let length = i2d_X509(certificate, &der)
        guard length > 0, let der else { return [] }
        defer { CRYPTO_free(der, #fileID, #line) }
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var size: UInt32 = 0
        guard EVP_Digest(der, Int(length), &digest, &size, EVP_sha256(), nil) == 1 else { return [] }
        return Array(digest.prefix(Int(size)))
    }
}
