/// Turns messages into complete frames (prefix, header, body), ready to write.
///
/// The server calls ``encode(_:)`` **once** per batch and writes the same bytes to every
/// subscriber: compression is per frame (no per-connection stream state), so a frame
/// depends only on the message and the ``configuration``.
///
/// Owns one reused deflate stream (see `Deflater`); not `Sendable`: each loop thread
/// (or client session) owns its encoder. Encoding is deterministic: the same message
/// and configuration always give the same bytes (the golden vectors rely on it).
public final class FrameEncoder {
    /// The compression rules; a change applies from the next frame.
    public var configuration: CompressionConfiguration {
        didSet {
            if configuration.level != oldValue.level { deflater = nil }
        }
    }

    private var deflater: Deflater?
    /// Capacity to reserve for the next body: the last body's size, so a stream of
    /// similar frames reallocates rarely.
    private var capacityHint = 256

    /// Whether the last frame ``encode(_:)`` returned is compressed (for stats and tests).
    public private(set) var lastFrameWasCompressed = false

    /// Creates an encoder. The deflate stream is created on the first frame that is
    /// worth compressing.
    public init(configuration: CompressionConfiguration = .default) {
        self.configuration = configuration
    }

    /// The value of an encoded frame's length prefix: what a peer compares with its
    /// `maxFrameBytes` (header and body, not the prefix itself).
    public static func lengthPrefixValue(ofEncodedFrame frame: [UInt8]) -> Int {
        frame.count - FrameLayout.prefixBytes
    }

    /// Encodes `message` as one frame.
    ///
    /// The body is deflated when it is at least `configuration.threshold` bytes, its type
    /// may be compressed (``MessageType/isNeverCompressed``), and the result is smaller;
    /// otherwise the frame carries the raw body.
    /// - Complexity: O(body size); deflate dominates for compressed frames.
    /// - Precondition: the message's indices and counts are in 0…2³¹−1 and the frame is
    ///   under 4 GiB (the prefix is a `u32`).
    public func encode(_ message: Message) -> [UInt8] {
        let type = message.type
        var writer = WireWriter()
        writer.bytes.reserveCapacity(capacityHint)
        // Prefix and header placeholders; the body is written right after them so a raw
        // frame needs no copy.
        writer.bytes.append(contentsOf: [0, 0, 0, 0, type.rawValue, 0])
        writer.body(message)
        var frame = writer.bytes
        let bodyCount = frame.count - FrameLayout.bodyOffset
        capacityHint = max(64, frame.count)
        precondition(
            frame.count - FrameLayout.prefixBytes <= Int(UInt32.max), "FlowSyncProtocol: a frame must be under 4 GiB")

        if !type.isNeverCompressed, bodyCount >= configuration.threshold, bodyCount > 1,
            let compressed = compress(frame, bodyCount: bodyCount, type: type)
        {
            lastFrameWasCompressed = true
            return compressed
        }
        lastFrameWasCompressed = false
        let length = frame.count - FrameLayout.prefixBytes
        frame.withUnsafeMutableBytes { FrameLayout.storePrefix(length, into: $0) }
        return frame
    }

    /// The compressed frame, or `nil` when deflate does not make the body smaller.
    private func compress(_ raw: [UInt8], bodyCount: Int, type: MessageType) -> [UInt8]? {
        let deflater: Deflater
        if let existing = self.deflater {
            deflater = existing
        } else {
            deflater = Deflater(level: configuration.level)
            self.deflater = deflater
        }
        let dictionary = configuration.dictionary
        // Room for one byte less than the raw body: a result that does not fit does not pay.
        let capacity = FrameLayout.bodyOffset + bodyCount - 1
        let frame = raw.withUnsafeBytes { rawBytes in
            [UInt8](unsafeUninitializedCapacity: capacity) { buffer, count in
                let output = UnsafeMutableRawBufferPointer(buffer)
                let input = UnsafeRawBufferPointer(rebasing: rawBytes[FrameLayout.bodyOffset...])
                guard
                    let n = deflater.compress(
                        input, dictionary: dictionary,
                        into: UnsafeMutableRawBufferPointer(rebasing: output[FrameLayout.bodyOffset...]))
                else {
                    count = 0
                    return
                }
                FrameLayout.storePrefix(FrameLayout.headerBytes + n, into: output)
                output[4] = type.rawValue
                output[5] = FrameLayout.compressedFlag
                count = FrameLayout.bodyOffset + n
            }
        }
        return frame.isEmpty ? nil : frame
    }
}
