/// Splits a byte stream into whole frames by their 4-byte big-endian length prefix,
/// without decoding them (docs/PROTOCOL.md, "Frames").
///
/// The common case — whole frames inside one read — hands out views of the read buffer
/// with no copy; only a frame cut by a read boundary is copied into ``pending``.
public struct FrameSplitter: Sendable {
    /// A frame longer than this (the prefix value) is refused: the stream is broken.
    public var maxFrameBytes: Int
    /// Bytes of an incomplete frame, kept for the next read.
    public private(set) var pending: [UInt8] = []

    /// Splitting failed: the length prefix is impossible.
    public struct Failure: Error, Equatable, CustomStringConvertible {
        /// The prefix value found.
        public let length: Int
        /// A failure for the prefix value `length`.
        public init(length: Int) { self.length = length }
        public var description: String { "frame length \(length) outside 2…limit" }
    }

    /// A splitter refusing frames longer than `maxFrameBytes`.
    public init(maxFrameBytes: Int = 256 << 20) { self.maxFrameBytes = maxFrameBytes }

    /// Calls `body` with each whole frame (prefix included) that `bytes` completes.
    /// The frame view is valid only during the call.
    public mutating func split(
        _ bytes: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> Void
    ) throws(Failure) {
        if pending.isEmpty {
            let used = try Self.frames(in: bytes, limit: maxFrameBytes, body)
            if used < bytes.count { pending.append(contentsOf: bytes[used...]) }
            return
        }
        pending.append(contentsOf: bytes)
        var failure: Failure?
        let used = pending.withUnsafeBytes { all -> Int in
            do throws(Failure) { return try Self.frames(in: all, limit: maxFrameBytes, body) } catch {
                failure = error
                return 0
            }
        }
        if let failure { throw failure }
        if used == pending.count {
            pending.removeAll(keepingCapacity: pending.capacity <= 1 << 20)
        } else if used > 0 {
            pending.removeFirst(used)
        }
    }

    /// Hands out whole frames of `bytes`; returns how many bytes they used.
    private static func frames(
        in bytes: UnsafeRawBufferPointer, limit: Int, _ body: (UnsafeRawBufferPointer) -> Void
    ) throws(Failure) -> Int {
        var offset = 0
        while bytes.count - offset >= 4 {
            let length =
                Int(bytes[offset]) << 24 | Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8
                | Int(bytes[offset + 3])
            guard length >= 2, length <= limit else { throw Failure(length: length) }
            guard bytes.count - offset >= 4 + length else { break }
            body(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + 4 + length)]))
            offset += 4 + length
        }
        return offset
    }
}
