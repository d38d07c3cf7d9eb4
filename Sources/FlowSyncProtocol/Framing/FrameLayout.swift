/// The fixed part of every frame (`docs/PROTOCOL.md`, "Frames"):
///
/// ```
/// offset 0  u32 BE  length  = bytes after this field (2 + body length), 2 ≤ length ≤ limit
/// offset 4  u8      type    (MessageType)
/// offset 5  u8      flags   bit 0: body is a zlib stream; bits 1–7 reserved, must be 0
/// offset 6  …       body    (length − 2 bytes)
/// ```
///
/// Why a 4-byte prefix: a 100,000-row snapshot is tens of megabytes, more than a
/// 2-byte prefix holds, and a varint prefix would make "is the prefix complete?" a loop
/// instead of one comparison. Why the length counts the header: a receiver reads four
/// bytes, then exactly `length` more, and has the whole frame.
enum FrameLayout {
    /// Bytes of the length prefix.
    static let prefixBytes = 4
    /// Bytes of the header (type, flags).
    static let headerBytes = 2
    /// Prefix plus header: where the body starts.
    static let bodyOffset = prefixBytes + headerBytes
    /// Flag bit: the body is a zlib stream (RFC 1950) of the message body.
    static let compressedFlag: UInt8 = 0x01
    /// Flag bits this version defines; any other bit set is a malformed frame.
    static let knownFlags: UInt8 = compressedFlag

    /// Writes `length` big-endian at `offset`.
    static func storePrefix(_ length: Int, into bytes: UnsafeMutableRawBufferPointer, at offset: Int = 0) {
        let v = UInt32(length)
        bytes[offset] = UInt8(truncatingIfNeeded: v >> 24)
        bytes[offset + 1] = UInt8(truncatingIfNeeded: v >> 16)
        bytes[offset + 2] = UInt8(truncatingIfNeeded: v >> 8)
        bytes[offset + 3] = UInt8(truncatingIfNeeded: v)
    }

    /// Reads the big-endian prefix at `offset` (four bytes must be there).
    static func loadPrefix(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> Int {
        Int(bytes[offset]) << 24 | Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
    }
}
