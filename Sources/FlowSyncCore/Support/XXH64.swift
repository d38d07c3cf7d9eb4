/// XXH64, the 64-bit xxHash of Yann Collet (reference: `xxhash.h`, XXH64).
///
/// FlowSync uses it for row content hashes and the state digest because it is fast,
/// well distributed and implemented in every language a client might be written in,
/// so `docs/PROTOCOL.md` can specify the digest exactly. It is **not** a cryptographic
/// hash: it detects drift and corruption, not tampering.
///
/// - Complexity: O(n) in the number of bytes, about one cycle per byte.
public enum XXH64 {
    @usableFromInline static let prime1: UInt64 = 11_400_714_785_074_694_791
    @usableFromInline static let prime2: UInt64 = 14_029_467_366_897_019_727
    @usableFromInline static let prime3: UInt64 = 1_609_587_929_392_839_161
    @usableFromInline static let prime4: UInt64 = 9_650_029_242_287_828_579
    @usableFromInline static let prime5: UInt64 = 2_870_177_450_012_600_261

    /// Hashes raw bytes.
    public static func hash(_ bytes: UnsafeRawBufferPointer, seed: UInt64 = 0) -> UInt64 {
        let length = bytes.count
        var offset = 0
        var h: UInt64
        @inline(__always) func load64(_ at: Int) -> UInt64 {
            UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: at, as: UInt64.self))
        }
        if length >= 32 {
            var v1 = seed &+ prime1 &+ prime2
            var v2 = seed &+ prime2
            var v3 = seed
            var v4 = seed &- prime1
            let limit = length - 32
            repeat {
                v1 = round(v1, load64(offset))
                v2 = round(v2, load64(offset + 8))
                v3 = round(v3, load64(offset + 16))
                v4 = round(v4, load64(offset + 24))
                offset += 32
            } while offset <= limit
            h = rotl(v1, 1) &+ rotl(v2, 7) &+ rotl(v3, 12) &+ rotl(v4, 18)
            h = mergeRound(h, v1)
            h = mergeRound(h, v2)
            h = mergeRound(h, v3)
            h = mergeRound(h, v4)
        } else {
            h = seed &+ prime5
        }
        h &+= UInt64(length)
        while offset + 8 <= length {
            h ^= round(0, load64(offset))
            h = rotl(h, 27) &* prime1 &+ prime4
            offset += 8
        }
        if offset + 4 <= length {
            let k = UInt64(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
            h ^= k &* prime1
            h = rotl(h, 23) &* prime2 &+ prime3
            offset += 4
        }
        while offset < length {
            h ^= UInt64(bytes[offset]) &* prime5
            h = rotl(h, 11) &* prime1
            offset += 1
        }
        h ^= h >> 33
        h &*= prime2
        h ^= h >> 29
        h &*= prime3
        h ^= h >> 32
        return h
    }

    /// Hashes a byte array.
    @inlinable
    public static func hash(_ bytes: [UInt8], seed: UInt64 = 0) -> UInt64 {
        bytes.withUnsafeBytes { hash($0, seed: seed) }
    }

    /// Hashes the UTF-8 encoding of a string.
    @inlinable
    public static func hash(_ string: String, seed: UInt64 = 0) -> UInt64 {
        if let h = string.utf8.withContiguousStorageIfAvailable({ hash(UnsafeRawBufferPointer($0), seed: seed) }) {
            return h
        }
        return hash(Array(string.utf8), seed: seed)
    }

    /// Hashes four 64-bit words as 32 little-endian bytes (the digest's term shape).
    @inlinable
    public static func hash(words a: UInt64, _ b: UInt64, _ c: UInt64, _ d: UInt64) -> UInt64 {
        var tuple = (a.littleEndian, b.littleEndian, c.littleEndian, d.littleEndian)
        return withUnsafeBytes(of: &tuple) { hash($0, seed: 0) }
    }

    @inline(__always) @usableFromInline
    static func rotl(_ x: UInt64, _ r: UInt64) -> UInt64 { (x << r) | (x >> (64 - r)) }

    @inline(__always) @usableFromInline
    static func round(_ acc: UInt64, _ input: UInt64) -> UInt64 {
        rotl(acc &+ input &* prime2, 31) &* prime1
    }

    @inline(__always) @usableFromInline
    static func mergeRound(_ acc: UInt64, _ value: UInt64) -> UInt64 {
        (acc ^ round(0, value)) &* prime1 &+ prime4
    }
}
