import FlowSyncCore
import FlowSyncProtocol

/// Decodes every message in `bytes`, fed in chunks of the given sizes (the last chunk
/// takes the rest). Returns the messages, or the first error.
func decodeAll(
    _ bytes: [UInt8], chunks: [Int] = [], limits: DecoderLimits = .client,
    dictionary: CompressionDictionary? = .standard
) -> Result<[Message], ProtocolError> {
    let decoder = FrameDecoder(limits: limits, dictionary: dictionary)
    var messages: [Message] = []
    var offset = 0
    var sizes = chunks[...]
    do {
        while offset < bytes.count {
            let size = min(sizes.popFirst() ?? bytes.count, bytes.count - offset)
            decoder.feed(Array(bytes[offset..<offset + size]))
            offset += size
            while let message = try decoder.next() { messages.append(message) }
        }
        return .success(messages)
    } catch {
        return .failure(error)
    }
}

/// Lower-case hex of bytes.
func hex(_ bytes: [UInt8]) -> String {
    let digits = Array("0123456789abcdef")
    var s = ""
    s.reserveCapacity(bytes.count * 2)
    for b in bytes {
        s.append(digits[Int(b >> 4)])
        s.append(digits[Int(b & 0xF)])
    }
    return s
}

/// Bytes of a hex string (spaces ignored); traps on bad hex (test data only).
func bytes(hex: String) -> [UInt8] {
    let digits = Array(hex.filter { !$0.isWhitespace })
    precondition(digits.count % 2 == 0, "odd hex length")
    return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! }
}

/// Builds a frame by hand: prefix, type, flags, body.
func frame(type: UInt8, flags: UInt8 = 0, body: [UInt8]) -> [UInt8] {
    let length = UInt32(body.count + 2)
    return [
        UInt8(length >> 24), UInt8(truncatingIfNeeded: length >> 16), UInt8(truncatingIfNeeded: length >> 8),
        UInt8(truncatingIfNeeded: length), type, flags,
    ] + body
}
