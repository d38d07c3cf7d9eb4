import CryptoKit
import Foundation
import Testing

/// The CryptoKit stand-in's SHA-256 (OpenSSL's EVP underneath) against the FIPS 180-2
/// test vectors, in one call and in pieces, with value semantics on copy.
@Suite(.timeLimit(.minutes(1))) struct CryptoKitStandInTests {
    static func hex<D: Digest>(_ digest: D) -> String { digest.map { String(format: "%02x", $0) }.joined() }

    @Test func knownVectors() {
        #expect(
            Self.hex(SHA256.hash(data: Data("abc".utf8)))
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(
            Self.hex(SHA256.hash(data: [UInt8]())) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        )
        let long = Data("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)
        #expect(Self.hex(SHA256.hash(data: long)) == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(Array(SHA256.hash(data: Data("abc".utf8))).count == SHA256Digest.byteCount)
    }

    @Test func inPiecesAndCopiesAreValues() {
        var hasher = SHA256()
        hasher.update(data: Data("ab".utf8))
        let copy = hasher
        hasher.update(data: Data("c".utf8))
        #expect(Self.hex(hasher.finalize()) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(hasher.finalize() == hasher.finalize())
        #expect(copy.finalize() == SHA256.hash(data: Data("ab".utf8)))
    }
}
