import CZlib

/// One reused deflate stream. Reset per frame (`deflateReset`) instead of created: an
/// init/end pair costs 37–69 µs for zlib's 256 KB of state, a reset about 10 µs
/// (`PLATFORM-NOTES.md`).
///
/// The `z_stream` is heap-allocated and never moves (zlib keeps a pointer back to it
/// from its internal state); it is ended in `deinit`. Not `Sendable`: one owner.
final class Deflater {
    private let stream: UnsafeMutablePointer<z_stream>
    let level: Int32

    init(level: Int32) {
        self.level = level
        stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        // windowBits 15: the zlib wrapper (RFC 1950) with a 32 KiB window, so any
        // zlib binding decodes it and the header names the preset dictionary.
        // memLevel 8 is zlib's default.
        let rc = CZlib_deflateInit2(stream, level, Z_DEFLATED, 15, 8, Z_DEFAULT_STRATEGY)
        precondition(rc == Z_OK, "deflateInit2 failed (\(rc)): out of memory")
    }

    deinit {
        deflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
    }

    /// Deflates `input` into `output`, as one complete zlib stream.
    /// - Returns: the compressed size, or `nil` when it does not fit in `output` (the
    ///   caller sizes `output` one byte below the raw size, so `nil` means "does not
    ///   pay" and deflate stops as soon as that is known).
    func compress(
        _ input: UnsafeRawBufferPointer, dictionary: CompressionDictionary?, into output: UnsafeMutableRawBufferPointer
    ) -> Int? {
        guard output.count > 0, let outBase = output.baseAddress else { return nil }
        let reset = deflateReset(stream)
        precondition(reset == Z_OK, "Internal inconsistency in Deflater: deflateReset returned \(reset)")
        if let dictionary {
            // The dictionary must be set again after every reset, before the first deflate.
            let rc = dictionary.bytes.withUnsafeBufferPointer { d in
                deflateSetDictionary(stream, d.baseAddress, uInt(d.count))
            }
            precondition(rc == Z_OK, "Internal inconsistency in Deflater: deflateSetDictionary returned \(rc)")
        }
        stream.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress?.assumingMemoryBound(to: Bytef.self))
        stream.pointee.avail_in = uInt(input.count)
        stream.pointee.next_out = outBase.assumingMemoryBound(to: Bytef.self)
        stream.pointee.avail_out = uInt(output.count)
        let rc = deflate(stream, Z_FINISH)
        let produced = output.count - Int(stream.pointee.avail_out)
        stream.pointee.next_in = nil
        stream.pointee.next_out = nil
        // Z_STREAM_END: all done. Z_OK / Z_BUF_ERROR: ran out of output space.
        return rc == Z_STREAM_END ? produced : nil
    }
}
