/// Why a peer link's bytes are not a frame (``PeerFrameDecoder``); the link is closed
/// with it, and the node falls back to PostgreSQL for that peer.
struct PeerFrameError: Error, Equatable, CustomStringConvertible {
    enum Reason: Equatable {
        /// The length prefix names more than the decoder's limit (refused before any of
        /// it is buffered).
        case tooLong(length: Int, limit: Int)
        /// A length of 0: not even a type byte.
        case empty
        case unknownType(UInt8)
        /// A field runs past the end of its frame.
        case truncatedField
        /// Bytes left in the frame after its last field.
        case trailingBytes(Int)
        /// A string field is not UTF-8.
        case invalidUTF8
    }

    let reason: Reason

    var description: String {
        switch reason {
        case .tooLong(let length, let limit): return "peer frame of \(length) bytes, over the limit of \(limit)"
        case .empty: return "empty peer frame"
        case .unknownType(let type): return "unknown peer frame type \(type)"
        case .truncatedField: return "a peer frame's field runs past its end"
        case .trailingBytes(let count): return "\(count) bytes after a peer frame's last field"
        case .invalidUTF8: return "a peer frame's string is not UTF-8"
        }
    }
}

/// Reads ``PeerFrame``s from a peer link's bytes, however they are split. Pure.
///
/// Hostile input is expected (anyone who reaches the peer port can send anything):
/// 1. **The length is checked before anything is buffered for it**: a prefix over
///    ``limit`` fails at once, so a peer cannot make this node hold more than one
///    frame's limit plus one read. The shell sets a small limit until the handshake
///    ended (``PeerLink``), so an unauthenticated peer cannot make it buffer much.
/// 2. **Every field is bounded by its frame**: a field length past the frame's end is
///    an error, never a read out of bounds; bytes left over are an error too.
/// 3. **After an error the decoder stays failed** (the link is closed; nothing after
///    a bad frame is trusted).
///
/// - Complexity: O(bytes fed); buffered bytes are compacted when more than half of the
///   buffer was consumed, so the buffer stays within twice one frame.
struct PeerFrameDecoder {
    /// The largest frame accepted (length prefix excluded).
    var limit: Int
    private var buffer: [UInt8] = []
    private var start = 0
    private var failed: PeerFrameError?

    init(limit: Int) {
        precondition(limit > 0, "Internal inconsistency in PeerFrameDecoder: a limit of \(limit)")
        self.limit = limit
    }

    /// Bytes fed and not yet returned as frames.
    var bufferedByteCount: Int { buffer.count - start }

    mutating func feed(_ bytes: UnsafeRawBufferPointer) {
        guard failed == nil else { return }
        buffer.append(contentsOf: bytes)
    }

    mutating func feed(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { feed($0) }
    }

    /// The next whole frame, or `nil` when more bytes are needed.
    mutating func next() throws(PeerFrameError) -> PeerFrame? {
        if let failed { throw failed }
        guard buffer.count - start >= 4 else { return nil }
        let length =
            Int(buffer[start]) << 24 | Int(buffer[start + 1]) << 16 | Int(buffer[start + 2]) << 8
            | Int(buffer[start + 3])
        do throws(PeerFrameError) {
            guard length <= limit else { throw PeerFrameError(reason: .tooLong(length: length, limit: limit)) }
            guard length > 0 else { throw PeerFrameError(reason: .empty) }
            guard buffer.count - start - 4 >= length else { return nil }
            let body = start + 4
            start = body + length
            let frame = try Self.parse(buffer[body..<start])
            if start > buffer.count / 2 {
                // Compact: what is consumed is dropped, so the buffer does not grow with
                // the link's lifetime.
                buffer.removeSubrange(0..<start)
                start = 0
            }
            return frame
        } catch {
            failed = error
            buffer = []
            start = 0
            throw error
        }
    }

    /// One frame's type and fields (`body` excludes the length prefix).
    static func parse(_ body: ArraySlice<UInt8>) throws(PeerFrameError) -> PeerFrame {
        var reader = Reader(bytes: body)
        let type = try reader.byte()
        guard let kind = PeerFrame.Kind(rawValue: type) else { throw PeerFrameError(reason: .unknownType(type)) }
        let frame: PeerFrame
        switch kind {
        case .hello:
            frame = .hello(node: try reader.string(), nonce: try reader.bytes())
        case .challenge:
            frame = .challenge(node: try reader.string(), nonce: try reader.bytes(), proof: try reader.bytes())
        case .proof:
            frame = .proof(try reader.bytes())
        case .accepted:
            frame = .accepted
        case .ping:
            frame = .ping
        case .follow:
            frame = .follow(list: try reader.string())
        case .unfollow:
            frame = .unfollow(list: try reader.string())
        case .push:
            frame = .push(
                list: try reader.string(), epoch: try reader.int(), term: try reader.int(), version: try reader.int(),
                frame: try reader.bytes())
        case .forward:
            frame = .forward(mutate: try reader.bytes())
        case .answer:
            frame = .answer(
                list: try reader.string(), clientID: try reader.string(), seq: UInt64(bitPattern: try reader.int()),
                epoch: try reader.int(), version: try reader.int(), code: try reader.int(), message: try reader.string()
            )
        }
        guard reader.remaining == 0 else { throw PeerFrameError(reason: .trailingBytes(reader.remaining)) }
        return frame
    }

    /// Reads fields from one frame's body, never past it (rule 2).
    private struct Reader {
        let body: ArraySlice<UInt8>
        var index: Int

        init(bytes: ArraySlice<UInt8>) {
            self.body = bytes
            self.index = bytes.startIndex
        }

        var remaining: Int { body.endIndex - index }

        mutating func byte() throws(PeerFrameError) -> UInt8 {
            guard remaining >= 1 else { throw PeerFrameError(reason: .truncatedField) }
            defer { index += 1 }
            return body[index]
        }

        mutating func int() throws(PeerFrameError) -> Int64 {
            guard remaining >= 8 else { throw PeerFrameError(reason: .truncatedField) }
            var value: UInt64 = 0
            for offset in 0..<8 { value = value << 8 | UInt64(body[index + offset]) }
            index += 8
            return Int64(bitPattern: value)
        }

        mutating func bytes() throws(PeerFrameError) -> [UInt8] {
            guard remaining >= 4 else { throw PeerFrameError(reason: .truncatedField) }
            var count = 0
            for offset in 0..<4 { count = count << 8 | Int(body[index + offset]) }
            index += 4
            guard remaining >= count else { throw PeerFrameError(reason: .truncatedField) }
            defer { index += count }
            return Array(body[index..<(index + count)])
        }

        mutating func string() throws(PeerFrameError) -> String {
            let raw = try bytes()
            guard let string = String(validating: raw, as: UTF8.self) else {
                throw PeerFrameError(reason: .invalidUTF8)
            }
            return string
        }
    }
}
