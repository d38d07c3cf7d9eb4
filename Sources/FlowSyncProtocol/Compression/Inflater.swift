import CZlib

/// One reused inflate stream with a capped, reused output buffer.
///
/// Inflation runs as a stream into a buffer that grows by doubling but never beyond
/// `maxOutput + 1` bytes: the first byte past the cap proves the frame is too large,
/// whatever the body claims, so a zip bomb costs at most the cap. The buffer is kept
/// between frames (no allocation per frame) and released after an unusually large one.
final class Inflater {
    private let stream: UnsafeMutablePointer<z_stream>
    private var storage: UnsafeMutableRawPointer?
    private var capacity = 0
    /// The largest output buffer ever allocated (tests check it stays within the cap).
    private(set) var peakCapacity = 0
    /// Output buffers larger than this are freed after the frame that needed them.
    private static let retainedCapacity = 1 << 20

    init() {
        stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        let rc = CZlib_inflateInit2(stream, 15)
        precondition(rc == Z_OK, "inflateInit2 failed (\(rc)): out of memory")
    }

    deinit {
        inflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
        storage?.deallocate()
    }

    private func grow(to newCapacity: Int, keeping used: Int) {
        let fresh = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 16)
        if let storage {
            fresh.copyMemory(from: storage, byteCount: used)
            storage.deallocate()
        }
        storage = fresh
        capacity = newCapacity
        peakCapacity = max(peakCapacity, newCapacity)
    }

    /// Inflates one complete zlib stream and calls `body` with the result.
    /// - Throws: ``ErrorCode/inflatedTooLarge`` past `maxOutput`;
    ///   ``ErrorCode/badCompression`` for corrupt, truncated or over-long input and for an
    ///   unknown or missing preset dictionary.
    func inflate<R>(
        _ input: UnsafeRawBufferPointer, maxOutput: Int, dictionary: CompressionDictionary?,
        _ body: (UnsafeRawBufferPointer) -> R
    ) throws(ProtocolError) -> R {
        let reset = inflateReset(stream)
        precondition(reset == Z_OK, "Internal inconsistency in Inflater: inflateReset returned \(reset)")
        defer {
            stream.pointee.next_in = nil
            stream.pointee.next_out = nil
            if capacity > Self.retainedCapacity {
                storage?.deallocate()
                storage = nil
                capacity = 0
            }
        }
        let hardCap = maxOutput + 1
        if capacity == 0 { grow(to: min(hardCap, max(4096, input.count * 4)), keeping: 0) }
        stream.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress?.assumingMemoryBound(to: Bytef.self))
        stream.pointee.avail_in = uInt(input.count)
        var produced = 0
        while true {
            if produced == capacity {
                guard capacity < hardCap else { break }
                grow(to: min(hardCap, capacity * 2), keeping: produced)
            }
            guard let storage else { preconditionFailure("Internal inconsistency in Inflater: no output buffer") }
            stream.pointee.next_out = (storage + produced).assumingMemoryBound(to: Bytef.self)
            let room = capacity - produced
            stream.pointee.avail_out = uInt(room)
            let rc = zlibInflate(stream, Z_NO_FLUSH)
            produced += room - Int(stream.pointee.avail_out)
            if produced > maxOutput { break }
            switch rc {
            case Z_STREAM_END:
                guard stream.pointee.avail_in == 0 else {
                    throw ProtocolError(
                        code: .badCompression,
                        message: "\(stream.pointee.avail_in) bytes after the end of the zlib stream")
                }
                return body(UnsafeRawBufferPointer(start: storage, count: produced))
            case Z_OK:
                continue
            case Z_NEED_DICT:
                guard let dictionary else {
                    throw ProtocolError(
                        code: .badCompression, message: "the zlib stream needs a preset dictionary but none was agreed")
                }
                guard UInt32(stream.pointee.adler) == dictionary.id else {
                    throw ProtocolError(
                        code: .badCompression,
                        message:
                            "the zlib stream names dictionary \(stream.pointee.adler), the agreed one is \(dictionary.id)"
                    )
                }
                let set = dictionary.bytes.withUnsafeBufferPointer {
                    inflateSetDictionary(stream, $0.baseAddress, uInt($0.count))
                }
                guard set == Z_OK else {
                    throw ProtocolError(code: .badCompression, message: "inflateSetDictionary failed (\(set))")
                }
            case Z_BUF_ERROR:
                // No progress possible: either the output is full (grow and go on) or the
                // input ended before the stream did.
                if stream.pointee.avail_out == 0 { continue }
                throw ProtocolError(code: .badCompression, message: "the zlib stream is truncated")
            case Z_MEM_ERROR:
                throw ProtocolError(code: .internalError, message: "inflate ran out of memory")
            default:
                let detail = stream.pointee.msg.map { String(cString: $0) } ?? "error \(rc)"
                throw ProtocolError(code: .badCompression, message: "corrupt zlib stream: \(detail)")
            }
        }
        throw ProtocolError(code: .inflatedTooLarge, message: "the body inflates past the limit of \(maxOutput) bytes")
    }
}

/// zlib's `inflate`, renamed so it does not clash with ``Inflater/inflate(_:maxOutput:dictionary:_:)``.
@inline(__always) private func zlibInflate(_ stream: z_streamp, _ flush: Int32) -> Int32 {
    inflate(stream, flush)
}
