/// Turns bytes, received in any split, into messages: an incremental, pure decoder.
///
/// Feed it whatever the socket read (``feed(_:)-([UInt8])``), then call ``next()`` until
/// it returns `nil` (more bytes needed). Splitting the same bytes differently never
/// changes the messages (the tests feed byte by byte, all at once and at random splits).
///
/// ## Limits before allocation
/// Every ``DecoderLimits`` bound is checked before the memory it protects is
/// allocated: the length prefix before the frame is buffered (a frame whose prefix
/// exceeds `maxFrameBytes` is refused as soon as its four prefix bytes arrive, and its
/// bytes are dropped), the inflated size while inflating (never trusting any declared
/// size), every count against the bytes left and its limit before an array is
/// reserved. The decoder holds at most the bytes fed and not yet consumed; a caller that
/// drains ``next()`` after each ``feed(_:)-([UInt8])`` therefore holds at most one
/// frame (≤ `maxFrameBytes` + 4) plus one read.
///
/// ## Errors
/// A violation throws a ``ProtocolError`` and poisons the decoder: framing can no longer
/// be trusted, so every later ``next()`` throws the same error and fed bytes are
/// dropped. The connection sends an ``ErrorMessage`` with the error's code and closes.
///
/// ``limits`` and ``dictionary`` may change between calls (after the handshake); a
/// change applies to the next frame returned.
///
/// Not `Sendable`: owned by one connection.
public final class FrameDecoder {
    /// The limits applied to the next frame.
    public var limits: DecoderLimits
    /// The preset dictionary agreed in the Welcome, if any.
    public var dictionary: CompressionDictionary?

    private var buffer: [UInt8] = []
    private var readIndex = 0
    private var failure: ProtocolError?
    private var inflater: Inflater?
    /// Buffers above this capacity are released once drained. Small, because a server
    /// holds one decoder per connection and most connections are idle: a buffer kept at
    /// the size of the largest frame a connection ever sent would stay resident for its
    /// life. Frames up to this size (nearly every mutation) reuse the buffer; a larger
    /// one costs one allocation per read that carries it, small beside decoding it.
    static let retainedCapacity = 4 * 1024

    /// Whether the last message ``next()`` returned arrived compressed.
    public private(set) var lastFrameWasCompressed = false

    /// Creates a decoder.
    public init(limits: DecoderLimits, dictionary: CompressionDictionary? = nil) {
        self.limits = limits
        self.dictionary = dictionary
    }

    /// Bytes fed and not yet consumed by ``next()``.
    public var bufferedByteCount: Int { buffer.count - readIndex }

    /// The capacity of the buffer that holds unconsumed bytes (for the memory tests).
    var bufferCapacity: Int { buffer.capacity }

    /// The largest inflate output buffer this decoder allocated (for the hostile tests).
    var peakInflateCapacity: Int { inflater?.peakCapacity ?? 0 }

    /// True once a ``ProtocolError`` was thrown.
    public var isPoisoned: Bool { failure != nil }

    /// Appends received bytes.
    public func feed(_ bytes: UnsafeRawBufferPointer) {
        guard failure == nil, !bytes.isEmpty else { return }
        compact()
        buffer.append(contentsOf: bytes)
        checkPendingPrefix()
    }

    /// Appends received bytes.
    public func feed(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { feed($0) }
    }

    /// The next complete message, or `nil` when more bytes are needed.
    /// - Throws: the first ``ProtocolError`` found, then the same one forever.
    public func next() throws(ProtocolError) -> Message? {
        if let failure { throw failure }
        let unread = buffer.count - readIndex
        guard unread >= FrameLayout.prefixBytes else { return nil }
        let length = buffer.withUnsafeBytes { FrameLayout.loadPrefix($0, at: readIndex) }
        if let error = prefixError(length) { throw fail(error) }
        guard unread >= FrameLayout.prefixBytes + length else { return nil }

        let frameStart = readIndex + FrameLayout.prefixBytes
        let frameEnd = frameStart + length
        // Consume the frame before decoding it: an error poisons the decoder anyway, and
        // success must not see the frame again.
        readIndex = frameEnd
        let result = buffer.withUnsafeBytes { all in
            decodeFrame(UnsafeRawBufferPointer(rebasing: all[frameStart..<frameEnd]))
        }
        switch result {
        case .success(let message):
            if readIndex == buffer.count { releaseDrained() }
            return message
        case .failure(let error):
            throw fail(error)
        }
    }

    // MARK: Frames

    private func prefixError(_ length: Int) -> ProtocolError? {
        if length < FrameLayout.headerBytes {
            return ProtocolError(
                code: .malformedFrame, message: "frame length \(length) is shorter than the 2-byte header")
        }
        if length > limits.maxFrameBytes {
            return ProtocolError(
                code: .frameTooLarge,
                message: "frame length \(length) exceeds the limit of \(limits.maxFrameBytes) bytes")
        }
        return nil
    }

    /// Decodes one frame (header and body, without the prefix).
    private func decodeFrame(_ frame: UnsafeRawBufferPointer) -> Result<Message, ProtocolError> {
        let rawType = frame[0]
        let flags = frame[1]
        guard flags & ~FrameLayout.knownFlags == 0 else {
            return .failure(
                ProtocolError(code: .malformedFrame, message: "reserved flag bits set: 0x\(String(flags, radix: 16))"))
        }
        guard let type = MessageType(rawValue: rawType) else {
            return .failure(
                ProtocolError(
                    code: .unknownMessageType, message: "unknown message type 0x\(String(rawType, radix: 16))"))
        }
        let body = UnsafeRawBufferPointer(rebasing: frame[FrameLayout.headerBytes...])
        let limits = self.limits
        guard flags & FrameLayout.compressedFlag != 0 else {
            lastFrameWasCompressed = false
            return Self.decodeBody(body, type: type, limits: limits)
        }
        guard limits.allowCompressed else {
            return .failure(
                ProtocolError(code: .compressionNotAllowed, message: "compressed frame before the handshake completed"))
        }
        lastFrameWasCompressed = true
        let inflater: Inflater
        if let existing = self.inflater {
            inflater = existing
        } else {
            inflater = Inflater()
            self.inflater = inflater
        }
        do {
            return try inflater.inflate(body, maxOutput: limits.maxInflatedBytes, dictionary: dictionary) { inflated in
                Self.decodeBody(inflated, type: type, limits: limits)
            }
        } catch {
            return .failure(error)
        }
    }

    private static func decodeBody(
        _ body: UnsafeRawBufferPointer, type: MessageType, limits: DecoderLimits
    ) -> Result<Message, ProtocolError> {
        var reader = WireReader(body, limits: limits)
        do {
            return .success(try reader.body(of: type))
        } catch {
            return .failure(error)
        }
    }

    // MARK: Buffer

    /// Refuses an oversized frame as soon as its prefix is buffered, so its body is never
    /// held (checked again by ``next()`` in case the limits change in between).
    private func checkPendingPrefix() {
        guard buffer.count - readIndex >= FrameLayout.prefixBytes else { return }
        let length = buffer.withUnsafeBytes { FrameLayout.loadPrefix($0, at: readIndex) }
        if let error = prefixError(length) { _ = fail(error) }
    }

    private func fail(_ error: ProtocolError) -> ProtocolError {
        failure = error
        buffer = []
        readIndex = 0
        return error
    }

    /// Drops consumed bytes when they are at least half the buffer (amortized O(1) per
    /// byte, instead of a memmove per frame).
    private func compact() {
        guard readIndex > 0 else { return }
        if readIndex == buffer.count {
            releaseDrained()
        } else if readIndex >= buffer.count / 2 {
            buffer.removeSubrange(0..<readIndex)
            readIndex = 0
        }
    }

    private func releaseDrained() {
        if buffer.capacity > Self.retainedCapacity {
            buffer = []
        } else {
            buffer.removeAll(keepingCapacity: true)
        }
        readIndex = 0
    }
}
