// The CryptoKit stand-in: the part of CryptoKit the project uses (SHA-256 digests of
// certificates, for TLS pins), declared as Apple's pages declare it and computed by
// OpenSSL's libcrypto (EVP), which Debian's libssl-dev provides. It used to re-export
// swift-crypto; that package's first build took minutes of every clean `make apple-check`
// for one hash function. See ../DEVIATIONS-Network.md ("CryptoKit").
import CCryptoStandIn
import Foundation

// /documentation/CryptoKit/Digest (iOS 13.0+)
/// A type that represents the output of a hash.
public protocol Digest: ContiguousBytes, CustomStringConvertible, Hashable, Sendable, Sequence where Element == UInt8 {
    // /documentation/CryptoKit/Digest/byteCount (iOS 13.0+)
    /// The number of bytes in the digest.
    static var byteCount: Int { get }
}

// /documentation/CryptoKit/HashFunction (iOS 13.0+)
// STAND-IN: the `update(bufferPointer:)` requirement is internal here (Apple's protocol
// hides its implementation details the same way: HashFunctionImplementationDetails).
/// A type that performs cryptographically secure hashing.
@preconcurrency public protocol HashFunction: Sendable {
    associatedtype Digest: CryptoKit.Digest
    // /documentation/CryptoKit/HashFunction/init() (iOS 13.0+)
    /// Creates a hash function.
    init()
    // /documentation/CryptoKit/HashFunction/update(bufferPointer:) (iOS 13.0+)
    /// Incrementally updates the hash function with the contents of the buffer.
    mutating func update(bufferPointer: UnsafeRawBufferPointer)
    // /documentation/CryptoKit/HashFunction/finalize() (iOS 13.0+)
    /// Finalizes the hash function and returns the computed digest.
    func finalize() -> Digest
}

extension HashFunction {
    // /documentation/CryptoKit/HashFunction/hash(data:) (iOS 13.0+)
    /// Computes the digest of the bytes in the given data instance and returns the computed digest.
    public static func hash<D>(data: D) -> Self.Digest where D: DataProtocol {
        var function = Self()
        function.update(data: data)
        return function.finalize()
    }

    // /documentation/CryptoKit/HashFunction/update(data:) (iOS 13.0+)
    /// Incrementally updates the hash function with the given data.
    public mutating func update<D>(data: D) where D: DataProtocol {
        for region in data.regions {
            region.withUnsafeBytes { update(bufferPointer: $0) }
        }
    }
}

// /documentation/CryptoKit/SHA256 (iOS 13.0+)
/// An implementation of Secure Hashing Algorithm 2 (SHA-2) hashing with a 256-bit digest.
public struct SHA256: HashFunction {
    // /documentation/CryptoKit/SHA256/Digest (iOS 13.0+)
    /// The digest type for a SHA256 hash function.
    public typealias Digest = SHA256Digest

    // /documentation/CryptoKit/SHA256/byteCount (iOS 13.0+)
    /// The number of bytes that represents the hash function's output.
    public static var byteCount: Int { 32 }

    // /documentation/CryptoKit/SHA256/blockByteCount (iOS 13.0+)
    /// The number of bytes that represents the hash function's internal state.
    public static var blockByteCount: Int { 64 }

    private var context: EVPContext

    // /documentation/CryptoKit/SHA256/init() (iOS 13.0+)
    /// Initializes the hash function instance.
    public init() {
        context = EVPContext()
    }

    // /documentation/CryptoKit/SHA256/update(bufferPointer:) (iOS 13.0+)
    /// Incrementally updates the hash function with the contents of the buffer.
    public mutating func update(bufferPointer: UnsafeRawBufferPointer) {
        // Value semantics: a copy of the struct shares the context until one of them writes.
        if !isKnownUniquelyReferenced(&context) { context = context.copy() }
        context.update(bufferPointer)
    }

    // /documentation/CryptoKit/SHA256/finalize() (iOS 13.0+)
    /// Returns the digest from the data input in the hash function instance.
    public func finalize() -> SHA256Digest {
        SHA256Digest(bytes: context.copy().finish())  // finishing a copy keeps this value usable
    }
}

// /documentation/CryptoKit/SHA256Digest (iOS 13.0+)
/// The output of a Secure Hashing Algorithm 2 (SHA-2) hash with a 256-bit digest.
public struct SHA256Digest: Digest {
    private let bytes: [UInt8]

    init(bytes: [UInt8]) {
        precondition(
            bytes.count == 32,
            "Internal inconsistency in the CryptoKit stand-in: a SHA-256 digest of \(bytes.count) bytes")
        self.bytes = bytes
    }

    // /documentation/CryptoKit/SHA256Digest/byteCount (iOS 13.0+)
    /// The number of bytes in the digest.
    public static var byteCount: Int { 32 }

    // /documentation/CryptoKit/SHA256Digest/description (iOS 13.0+)
    /// A human-readable description of the digest.
    public var description: String { "SHA256 digest: " + bytes.map { String(format: "%02x", $0) }.joined() }

    public func makeIterator() -> IndexingIterator<[UInt8]> { bytes.makeIterator() }

    // /documentation/CryptoKit/SHA256Digest/withUnsafeBytes(_:) (iOS 13.0+)
    /// Invokes the given closure with a buffer pointer covering the raw bytes of the digest.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try bytes.withUnsafeBytes(body)
    }
}

/// One EVP digest context (SHA-256), freed with its box.
private final class EVPContext: @unchecked Sendable {
    // Touched only by the value that owns it uniquely (copy-on-write above).
    private let context: OpaquePointer

    init() {
        guard let context = EVP_MD_CTX_new(), EVP_DigestInit_ex(context, EVP_sha256(), nil) == 1 else {
            preconditionFailure("Internal inconsistency in the CryptoKit stand-in: OpenSSL could not start a SHA-256")
        }
        self.context = context
    }

    private init(copying other: EVPContext) {
        guard let context = EVP_MD_CTX_new(), EVP_MD_CTX_copy_ex(context, other.context) == 1 else {
            preconditionFailure("Internal inconsistency in the CryptoKit stand-in: OpenSSL could not copy a SHA-256")
        }
        self.context = context
    }

    deinit { EVP_MD_CTX_free(context) }

    func copy() -> EVPContext { EVPContext(copying: self) }

    func update(_ buffer: UnsafeRawBufferPointer) {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        EVP_DigestUpdate(context, base, buffer.count)
    }

    func finish() -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        EVP_DigestFinal_ex(context, &digest, &length)
        return digest
    }
}
