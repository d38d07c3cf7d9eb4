import CZlib
import NIOCore

/// One raw deflate stream (RFC 1951, no zlib header), reset per message: the
/// permessage-deflate payload of a message compressed with no context taken over
/// (RFC 7692 §7.2.1), so the same bytes are valid on every socket that negotiated the
/// extension (docs/GATEWAY.md, "Compress once per feed message").
///
/// The `z_stream` is heap-allocated and never moves (zlib keeps a pointer back to it);
/// it is ended in `deinit`. Not `Sendable`: one owner (a feed, under its lock).
final class MessageDeflater {
    private let stream: UnsafeMutablePointer<z_stream>

    /// - Parameter level: zlib's level; 6, its default, as hummingbird-websocket used.
    init(level: Int32 = 6) {
        stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        // windowBits -15: raw deflate with a 32 KiB window, what permessage-deflate carries
        // when the client did not ask for a smaller `server_max_window_bits` (the
        // negotiation declines offers that do).
        let rc = CZlib_deflateInit2(stream, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY)
        precondition(rc == Z_OK, "deflateInit2 failed (\(rc)): out of memory")
    }

    deinit {
        deflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
    }

    /// The message's payload for a frame with RSV1 set: `bytes` deflated alone, ended
    /// with `Z_SYNC_FLUSH` (never `Z_FINISH`: a final block would end a browser's inflater
    /// that keeps its context), the trailing `00 00 FF FF` removed.
    /// - Complexity: O(n); about 10 µs of zlib reset per call (PLATFORM-NOTES.md).
    func compress(_ bytes: [UInt8]) -> ByteBuffer {
        let reset = deflateReset(stream)
        precondition(reset == Z_OK, "Internal inconsistency in MessageDeflater: deflateReset returned \(reset)")
        // deflateBound covers Z_FINISH; a sync flush adds at most the 5-byte empty block
        // and a few bits, so this is always enough (the loop below grows it if not).
        var output = [UInt8](repeating: 0, count: Int(deflateBound(stream, uLong(bytes.count))) + 16)
        var produced = 0
        bytes.withUnsafeBufferPointer { input in
            stream.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
            stream.pointee.avail_in = uInt(input.count)
            while true {
                if produced == output.count { output.append(contentsOf: repeatElement(0, count: output.count)) }
                let room = output.count - produced
                let rc = output.withUnsafeMutableBufferPointer { out in
                    stream.pointee.next_out = out.baseAddress! + produced
                    stream.pointee.avail_out = uInt(room)
                    return deflate(stream, Z_SYNC_FLUSH)
                }
                precondition(
                    rc == Z_OK || rc == Z_BUF_ERROR, "Internal inconsistency in MessageDeflater: deflate returned \(rc)"
                )
                produced += room - Int(stream.pointee.avail_out)
                // Done when zlib had room left over: all input consumed and flushed.
                if stream.pointee.avail_out != 0 { break }
            }
            stream.pointee.next_in = nil
            stream.pointee.next_out = nil
        }
        precondition(
            produced >= 4 && output[produced - 4..<produced] == [0, 0, 0xFF, 0xFF],
            "Internal inconsistency in MessageDeflater: a sync flush did not end in 00 00 FF FF")
        return ByteBuffer(bytes: output[0..<(produced - 4)])
    }
}

/// One raw inflate stream for what a browser sends under permessage-deflate. It is kept
/// across messages (the browser may take its context over, RFC 7692 §7.2.2; a client that
/// does not still decodes right), and each message's output is bounded.
///
/// Not `Sendable`: one owner (a socket's extension, under its lock).
final class MessageInflater {
    private let stream: UnsafeMutablePointer<z_stream>

    init() {
        stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        // -15: raw deflate, and a 32 KiB window decodes any smaller client window.
        let rc = CZlib_inflateInit2(stream, -15)
        precondition(rc == Z_OK, "inflateInit2 failed (\(rc)): out of memory")
    }

    deinit {
        inflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
    }

    /// Why a payload could not be inflated.
    enum Failure: Error, Equatable {
        /// Past the limit: the bytes inflated so far in this message exceed it.
        case tooLarge
        /// Corrupt deflate data.
        case corrupt
    }

    /// Inflates one frame's payload; `limit` is what the message may still grow by.
    /// With `last` set the frame ends the message and the RFC 7692 tail `00 00 FF FF`
    /// is fed after it.
    /// - Throws: ``Failure/tooLarge`` as soon as the output passes `limit` (a bomb costs
    ///   at most `limit` + 64 KiB of memory), ``Failure/corrupt`` for bad data.
    func inflate(_ payload: ByteBuffer, last: Bool, limit: Int) throws(Failure) -> ByteBuffer {
        var output = ByteBuffer()
        var input = Array(payload.readableBytesView)
        if last { input += [0, 0, 0xFF, 0xFF] }
        let chunk = 1 << 16
        var scratch = [UInt8](repeating: 0, count: chunk)
        var failure: Failure?
        input.withUnsafeMutableBufferPointer { input in
            stream.pointee.next_in = input.baseAddress
            stream.pointee.avail_in = uInt(input.count)
            defer {
                stream.pointee.next_in = nil
                stream.pointee.next_out = nil
            }
            while true {
                let rc = scratch.withUnsafeMutableBufferPointer { out in
                    stream.pointee.next_out = out.baseAddress
                    stream.pointee.avail_out = uInt(chunk)
                    return zlibInflate(stream, Z_SYNC_FLUSH)
                }
                let produced = chunk - Int(stream.pointee.avail_out)
                if output.readableBytes + produced > limit {
                    failure = .tooLarge
                    return
                }
                output.writeBytes(scratch[0..<produced])
                switch rc {
                case Z_OK:
                    // More to do while zlib filled the scratch or has input left.
                    if stream.pointee.avail_out == 0 || stream.pointee.avail_in != 0 { continue }
                    return
                case Z_BUF_ERROR:
                    // No progress possible: all input used.
                    return
                case Z_STREAM_END:
                    // A final block (BFINAL): legal, the next message starts a new stream.
                    let reset = inflateReset(stream)
                    precondition(reset == Z_OK, "Internal inconsistency in MessageInflater: inflateReset \(reset)")
                    if stream.pointee.avail_in == 0 { return }
                default:
                    failure = .corrupt
                    return
                }
            }
        }
        if let failure { throw failure }
        return output
    }
}

/// zlib's `inflate`, renamed so it does not clash with ``MessageInflater/inflate(_:last:limit:)``.
@inline(__always) private func zlibInflate(_ stream: z_streamp, _ flush: Int32) -> Int32 {
    inflate(stream, flush)
}
