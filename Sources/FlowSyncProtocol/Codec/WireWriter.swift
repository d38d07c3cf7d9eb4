import FlowSyncCore

/// Appends the protocol's primitive types to a byte array (`docs/PROTOCOL.md`,
/// "Primitive types").
///
/// Why varints: most numbers in a diff are small indices and counts; LEB128 stores them
/// in one byte where a fixed `u32` would take four, and every language has a
/// two-line implementation. Hashes and digests are fixed `u64` (they are uniformly
/// random, a varint would make them longer).
struct WireWriter {
    /// The bytes written so far.
    var bytes: [UInt8]

    init(bytes: [UInt8] = []) { self.bytes = bytes }

    @inline(__always) mutating func u8(_ v: UInt8) { bytes.append(v) }

    mutating func u16(_ v: UInt16) {
        bytes.append(UInt8(truncatingIfNeeded: v >> 8))
        bytes.append(UInt8(truncatingIfNeeded: v))
    }

    mutating func u32(_ v: UInt32) {
        for shift in stride(from: 24, through: 0, by: -8) {
            bytes.append(UInt8(truncatingIfNeeded: v >> UInt32(shift)))
        }
    }

    mutating func u64(_ v: UInt64) {
        for shift in stride(from: 56, through: 0, by: -8) {
            bytes.append(UInt8(truncatingIfNeeded: v >> UInt64(shift)))
        }
    }

    /// Unsigned LEB128: 7 bits per byte, least significant group first, high bit set on
    /// every byte but the last; always the shortest form.
    @inline(__always) mutating func varint(_ v: UInt64) {
        var v = v
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(truncatingIfNeeded: v))
    }

    /// A count or an index.
    /// - Precondition: `0 <= n <= WireReader.maxIndex`. A negative index or count is a
    ///   programming error in the sender (the core never produces one), not wire data.
    @inline(__always) mutating func index(_ n: Int) {
        precondition(
            n >= 0 && n <= WireReader.maxIndex, "FlowSyncProtocol: index or count \(n) cannot be encoded (0...2³¹−1)")
        varint(UInt64(n))
    }

    mutating func bool(_ b: Bool) { bytes.append(b ? 1 : 0) }

    mutating func string(_ s: String) {
        var s = s
        s.withUTF8 { utf8 in
            varint(UInt64(utf8.count))
            bytes.append(contentsOf: utf8)
        }
    }

    mutating func optionalString(_ s: String?) {
        if let s {
            u8(1)
            string(s)
        } else {
            u8(0)
        }
    }

    mutating func blob(_ b: [UInt8]) {
        varint(UInt64(b.count))
        bytes.append(contentsOf: b)
    }

    mutating func optionalBlob(_ b: [UInt8]?) {
        if let b {
            u8(1)
            blob(b)
        } else {
            u8(0)
        }
    }

    mutating func listVersion(_ v: ListVersion) {
        varint(v.epoch)
        varint(v.version)
    }
}
