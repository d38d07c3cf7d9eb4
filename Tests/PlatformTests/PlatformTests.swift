import CLibUV
import CZlib
import Testing

/// The C boundaries link and work: libuv's loop runs, and the zlib shim's init
/// wrappers round-trip data.
@Suite(.timeLimit(.minutes(2))) struct PlatformTests {
    @Test func libuvLoopRunsAndClosesCleanly() {
        var loop = uv_loop_t()
        #expect(uv_loop_init(&loop) == 0)
        #expect(uv_run(&loop, UV_RUN_DEFAULT) == 0, "a loop with no handles returns at once")
        #expect(uv_loop_close(&loop) == 0)
        #expect(uv_version() >= 0x012C00, "libuv 1.44 or later")
    }

    @Test func zlibShimRoundTrips() {
        let input = [UInt8](repeating: 65, count: 10_000) + (0..<256).map { UInt8($0) }
        let z = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        defer { z.deallocate() }
        z.initialize(to: z_stream())
        #expect(CZlib_deflateInit2(z, 6, Z_DEFLATED, 15, 8, Z_DEFAULT_STRATEGY) == Z_OK)
        var compressed = [UInt8](repeating: 0, count: 20_000)
        var input2 = input
        let produced = input2.withUnsafeMutableBufferPointer { inBuf in
            compressed.withUnsafeMutableBufferPointer { outBuf in
                z.pointee.next_in = inBuf.baseAddress
                z.pointee.avail_in = UInt32(inBuf.count)
                z.pointee.next_out = outBuf.baseAddress
                z.pointee.avail_out = UInt32(outBuf.count)
                #expect(deflate(z, Z_FINISH) == Z_STREAM_END)
                return outBuf.count - Int(z.pointee.avail_out)
            }
        }
        deflateEnd(z)
        #expect(produced < input.count / 10)

        z.initialize(to: z_stream())
        #expect(CZlib_inflateInit2(z, 15) == Z_OK)
        var output = [UInt8](repeating: 0, count: input.count)
        output.withUnsafeMutableBufferPointer { outBuf in
            compressed.withUnsafeMutableBufferPointer { inBuf in
                z.pointee.next_in = inBuf.baseAddress
                z.pointee.avail_in = UInt32(produced)
                z.pointee.next_out = outBuf.baseAddress
                z.pointee.avail_out = UInt32(outBuf.count)
                #expect(inflate(z, Z_FINISH) == Z_STREAM_END)
            }
        }
        inflateEnd(z)
        #expect(output == input)
        #expect(String(cString: CZlib_compiledVersion()).hasPrefix("1."))
    }
}
