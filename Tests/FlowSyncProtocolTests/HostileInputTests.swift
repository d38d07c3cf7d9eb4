import CZlib
import FlowSyncCore
import Testing

@testable import FlowSyncProtocol

/// Hostile input, each case with its exact error (Redis `tests/unit/protocol.tcl` in
/// spirit): nothing traps, nothing allocates past the limits, the decoder stays poisoned.
@Suite(.timeLimit(.minutes(2))) struct HostileInputTests {
    /// Deflates `bytes` as one zlib stream (level 9, optional dictionary), for building
    /// hostile compressed frames by hand.
    static func zlib(_ bytes: [UInt8], dictionary: [UInt8]? = nil) -> [UInt8] {
        var stream = z_stream()
        precondition(CZlib_deflateInit2(&stream, 9, Z_DEFLATED, 15, 9, Z_DEFAULT_STRATEGY) == Z_OK)
        defer { deflateEnd(&stream) }
        if let dictionary {
            _ = dictionary.withUnsafeBufferPointer { deflateSetDictionary(&stream, $0.baseAddress, uInt($0.count)) }
        }
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, uLong(bytes.count))) + 16)
        var input = bytes
        let produced = input.withUnsafeMutableBufferPointer { inBuf in
            output.withUnsafeMutableBufferPointer { outBuf in
                stream.next_in = inBuf.baseAddress
                stream.avail_in = uInt(inBuf.count)
                stream.next_out = outBuf.baseAddress
                stream.avail_out = uInt(outBuf.count)
                precondition(deflate(&stream, Z_FINISH) == Z_STREAM_END)
                return outBuf.count - Int(stream.avail_out)
            }
        }
        return Array(output[..<produced])
    }

    static func body(_ write: (inout WireWriter) -> Void) -> [UInt8] {
        var writer = WireWriter()
        write(&writer)
        return writer.bytes
    }

    static let pingBody = body { $0.varint(7) }
    static let t = MessageType.self

    struct Case: CustomTestStringConvertible, Sendable {
        let name: String
        let bytes: [UInt8]
        var limits: DecoderLimits = .server
        var dictionary: CompressionDictionary? = nil
        let code: ErrorCode
        let message: String
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(
            name: "zero length", bytes: [0, 0, 0, 0], code: .malformedFrame,
            message: "frame length 0 is shorter than the 2-byte header"),
        Case(
            name: "length 1", bytes: [0, 0, 0, 1, 0x31], code: .malformedFrame,
            message: "frame length 1 is shorter than the 2-byte header"),
        Case(
            name: "maximal length", bytes: [0xFF, 0xFF, 0xFF, 0xFF], code: .frameTooLarge,
            message: "frame length 4294967295 exceeds the limit of 4194304 bytes"),
        Case(
            name: "length one above the limit", bytes: [0, 0, 0x40, 0x01], limits: DecoderLimits(maxFrameBytes: 16_384),
            code: .frameTooLarge, message: "frame length 16385 exceeds the limit of 16384 bytes"),
        Case(
            name: "garbage (an HTTP request)", bytes: Array("GET / HTTP/1.1\r\n".utf8), code: .frameTooLarge,
            message: "frame length 1195725856 exceeds the limit of 4194304 bytes"),
        Case(
            name: "unknown type", bytes: frame(type: 0x7F, body: []), code: .unknownMessageType,
            message: "unknown message type 0x7f"),
        Case(
            name: "reserved flag", bytes: frame(type: 0x31, flags: 0x02, body: pingBody), code: .malformedFrame,
            message: "reserved flag bits set: 0x2"),
        Case(
            name: "compressed before the handshake", bytes: frame(type: 0x31, flags: 1, body: zlib(pingBody)),
            limits: .preAuth,
            code: .compressionNotAllowed, message: "compressed frame before the handshake completed"),
        Case(
            name: "bad zlib stream", bytes: frame(type: 0x31, flags: 1, body: [0x78, 0x9C, 0xFF, 0xFF, 0xFF, 0xFF]),
            code: .badCompression,
            message: "corrupt zlib stream: invalid block type"),
        Case(
            name: "not zlib at all", bytes: frame(type: 0x31, flags: 1, body: [0x07]), code: .badCompression,
            message: "the zlib stream is truncated"),
        Case(
            name: "empty compressed body", bytes: frame(type: 0x31, flags: 1, body: []), code: .badCompression,
            message: "the zlib stream is truncated"),
        Case(
            name: "truncated zlib stream",
            bytes: frame(type: 0x31, flags: 1, body: Array(zlib(Array(repeating: 7, count: 100)).dropLast(3))),
            code: .badCompression, message: "the zlib stream is truncated"),
        Case(
            name: "trailing bytes after the zlib stream",
            bytes: frame(type: 0x31, flags: 1, body: zlib(pingBody) + [0, 0]),
            code: .badCompression, message: "2 bytes after the end of the zlib stream"),
        Case(
            name: "zip bomb", bytes: frame(type: 0x31, flags: 1, body: zlib(Array(repeating: 0, count: 10_000_000))),
            limits: DecoderLimits(maxInflatedBytes: 65_536), code: .inflatedTooLarge,
            message: "the body inflates past the limit of 65536 bytes"),
        Case(
            name: "dictionary not agreed",
            bytes: frame(type: 0x31, flags: 1, body: zlib(pingBody, dictionary: CompressionDictionary.standard.bytes)),
            code: .badCompression, message: "the zlib stream needs a preset dictionary but none was agreed"),
        Case(
            name: "another dictionary",
            bytes: frame(type: 0x31, flags: 1, body: zlib(pingBody, dictionary: [1, 2, 3])),
            dictionary: .standard, code: .badCompression,
            message: "the zlib stream names dictionary 851975, the agreed one is \(CompressionDictionary.standard.id)"),
        Case(
            name: "empty body where a field is due", bytes: frame(type: 0x31, body: []), code: .malformedFrame,
            message: "truncated varint (nonce)"),
        Case(
            name: "trailing bytes after the body", bytes: frame(type: 0x31, body: pingBody + [0]),
            code: .malformedFrame,
            message: "1 trailing bytes after the ping body"),
        Case(
            name: "non-minimal varint", bytes: frame(type: 0x31, body: [0x87, 0x00]), code: .malformedFrame,
            message: "non-minimal varint (nonce)"),
        Case(
            name: "varint past 64 bits", bytes: frame(type: 0x31, body: Array(repeating: 0xFF, count: 9) + [0x02]),
            code: .malformedFrame,
            message: "varint overflows 64 bits (nonce)"),
        Case(
            name: "eleven-byte varint", bytes: frame(type: 0x31, body: Array(repeating: 0x80, count: 10) + [0x01]),
            code: .malformedFrame,
            message: "varint overflows 64 bits (nonce)"),
        Case(
            name: "op count overflows Int32",
            bytes: frame(
                type: 0x12,
                body: body { w in
                    w.string("l")
                    w.string("c")
                    w.varint(1)
                    w.varint(0)
                    w.varint(0)
                    w.varint(UInt64.max)
                }), code: .malformedFrame, message: "operations count 18446744073709551615 exceeds 2³¹−1"),
        Case(
            name: "op count beyond the bytes left",
            bytes: frame(
                type: 0x12,
                body: body { w in
                    w.string("l")
                    w.string("c")
                    w.varint(1)
                    w.varint(0)
                    w.varint(0)
                    w.varint(1_000)
                    w.u8(4)
                }), code: .malformedFrame, message: "operations count 1000 exceeds the 1 bytes left"),
        Case(
            name: "too many ops",
            bytes: frame(
                type: 0x12,
                body: body { w in
                    w.string("l")
                    w.string("c")
                    w.varint(1)
                    w.varint(0)
                    w.varint(0)
                    w.varint(1_001)
                    for _ in 0..<1_001 { w.u8(0x04) }
                }), code: .tooManyOps, message: "1001 operations exceed the limit of 1000"),
        Case(
            name: "row count beyond the budget",
            bytes: frame(
                type: 0x12,
                body: body { w in
                    w.string("l")
                    w.string("c")
                    w.varint(1)
                    w.varint(0)
                    w.varint(0)
                    w.varint(2)
                    for _ in 0..<2 {
                        w.u8(0x11)
                        w.u8(1)
                        w.varint(0)
                        w.varint(0)
                        w.varint(3)
                        for _ in 0..<3 { w.row(Row(id: "r")) }
                    }
                }), limits: DecoderLimits(maxRowsPerMessage: 5), code: .tooManyElements,
            message: "3 rows exceed the limit of 2"),
        Case(
            name: "section count beyond the bytes left",
            bytes: frame(
                type: 0x20,
                body: body { w in
                    w.string("l")
                    w.varint(1)
                    w.varint(1)
                    w.u64(0)
                    w.u8(0)
                    w.varint(1_000_000)
                }), limits: .client, code: .malformedFrame, message: "sections count 1000000 exceeds the 0 bytes left"),
        Case(
            name: "list name too long",
            bytes: frame(type: 0x11, body: body { $0.string(String(repeating: "x", count: 257)) }),
            code: .idTooLong, message: "list name of 257 bytes exceeds the limit of 256"),
        Case(
            name: "string length beyond the bytes left", bytes: frame(type: 0x11, body: body { $0.varint(200) }),
            code: .malformedFrame, message: "list name length 200 exceeds the 0 bytes left"),
        Case(
            name: "invalid UTF-8", bytes: frame(type: 0x11, body: [2, 0xC3, 0x28]), code: .malformedFrame,
            message: "list name is not valid UTF-8"),
        Case(
            name: "payload too large",
            bytes: frame(
                type: 0x12,
                body: body { w in
                    w.string("l")
                    w.string("c")
                    w.varint(1)
                    w.varint(0)
                    w.varint(0)
                    w.varint(1)
                    w.operation(.replaceRow(.id("r"), with: Row(id: "r", payload: Array(repeating: 1, count: 65_537))))
                }), code: .payloadTooLarge, message: "row payload of 65537 bytes exceeds the limit of 65536"),
        Case(
            name: "flag neither 0 nor 1",
            bytes: frame(
                type: 0x10,
                body: body {
                    $0.string("l")
                    $0.u8(2)
                }), code: .malformedFrame,
            message: "resume presence flag is 2, not 0 or 1"),
        Case(
            name: "unknown operation tag",
            bytes: frame(
                type: 0x12,
                body: body { w in
                    w.string("l")
                    w.string("c")
                    w.varint(1)
                    w.varint(0)
                    w.varint(0)
                    w.varint(1)
                    w.u8(0x09)
                }), code: .malformedFrame, message: "unknown operation tag 0x9"),
        Case(
            name: "stage list present with count 0",
            bytes: frame(
                type: 0x21,
                body: body { w in
                    w.string("l")
                    w.varint(1)
                    w.varint(1)
                    w.varint(2)
                    w.u64(0)
                    w.varint(1)
                    w.u8(0x01)
                    w.varint(0)
                    w.varint(0)
                }), limits: .client, code: .malformedFrame, message: "section deletes marked present with a zero count"),
        Case(
            name: "Hello without the magic",
            bytes: frame(type: 0x01, body: Array("HTTP".utf8) + [0, 1, 0, 1, 0, 0, 0]), limits: .preAuth,
            code: .unsupportedProtocolVersion, message: "the Hello does not start with the FSYN magic"),
        Case(
            name: "unknown snapshot reason",
            bytes: frame(
                type: 0x20,
                body: body { w in
                    w.string("l")
                    w.varint(1)
                    w.varint(1)
                    w.u64(0)
                    w.u8(9)
                    w.varint(0)
                }), limits: .client, code: .malformedFrame, message: "unknown snapshot reason 9"),
    ]

    @Test(arguments: cases) func hostileFrameYieldsItsExactError(_ c: Case) {
        // Same result whatever the split: all at once and byte by byte.
        for chunks in [[], Array(repeating: 1, count: c.bytes.count)] {
            let decoder = FrameDecoder(limits: c.limits, dictionary: c.dictionary)
            var thrown: ProtocolError?
            var offset = 0
            while offset < c.bytes.count, thrown == nil {
                let size = chunks.isEmpty ? c.bytes.count : 1
                decoder.feed(Array(c.bytes[offset..<offset + size]))
                offset += size
                do {
                    while try decoder.next() != nil {}
                } catch {
                    thrown = error
                }
            }
            #expect(
                thrown == ProtocolError(code: c.code, message: c.message),
                "\(c.name) (\(chunks.isEmpty ? "all at once" : "byte by byte"))")
            #expect(decoder.isPoisoned)
            #expect(decoder.bufferedByteCount == 0, "\(c.name): the decoder drops its buffer on error")
            #expect(
                decoder.peakInflateCapacity <= c.limits.maxInflatedBytes + 1, "\(c.name): inflate stays within its cap")
            // Poisoned: the same error again, and a valid frame changes nothing.
            decoder.feed(FrameEncoder().encode(.ping(Ping(nonce: 1))))
            #expect(throws: ProtocolError(code: c.code, message: c.message)) { try decoder.next() }
        }
    }

    @Test func truncatedPrefixWaitsForMoreBytes() throws {
        let decoder = FrameDecoder(limits: .server)
        decoder.feed([0, 0, 0])
        #expect(try decoder.next() == nil)
        #expect(decoder.bufferedByteCount == 3)
        decoder.feed([8, 0x31, 0])
        #expect(try decoder.next() == nil, "a frame whose body has not arrived is not an error")
    }

    @Test func frameAtExactlyTheLimitIsAccepted() throws {
        let message = Message.unsubscribe(Unsubscribe(listName: String(repeating: "n", count: 200)))
        let bytes = FrameEncoder(configuration: .disabled).encode(message)
        let length = bytes.count - 4
        let decoder = FrameDecoder(limits: DecoderLimits(maxFrameBytes: length))
        decoder.feed(bytes)
        #expect(try decoder.next() == message)
        let tooSmall = FrameDecoder(limits: DecoderLimits(maxFrameBytes: length - 1))
        tooSmall.feed(Array(bytes.prefix(4)))
        #expect(throws: ProtocolError.self) { try tooSmall.next() }
    }

    /// The oversized frame is refused when its prefix arrives: its body is never buffered.
    @Test func oversizedFrameIsNotBuffered() {
        let decoder = FrameDecoder(limits: DecoderLimits(maxFrameBytes: 1_000))
        decoder.feed([0, 0, 0x10, 0])
        decoder.feed(Array(repeating: 0, count: 2_000))
        #expect(decoder.isPoisoned)
        #expect(decoder.bufferedByteCount == 0)
    }

    /// A bomb within the frame limit inflates only to the cap, never further.
    @Test func zipBombAllocatesNoMoreThanTheCap() {
        let bomb = frame(type: 0x31, flags: 1, body: Self.zlib(Array(repeating: 0, count: 50_000_000)))
        #expect(bomb.count < 60_000)
        let decoder = FrameDecoder(limits: DecoderLimits(maxInflatedBytes: 1 << 20))
        decoder.feed(bomb)
        #expect(
            throws: ProtocolError(code: .inflatedTooLarge, message: "the body inflates past the limit of 1048576 bytes")
        ) { try decoder.next() }
        #expect(decoder.peakInflateCapacity == (1 << 20) + 1)
    }

    /// A connection that once sent a large frame does not keep a buffer of that size
    /// for the rest of its life (a server holds one decoder per idle connection); small
    /// frames keep reusing theirs.
    @Test func aDrainedLargeFrameDoesNotStayBuffered() throws {
        let encoder = FrameEncoder(configuration: .disabled)
        let decoder = FrameDecoder(limits: DecoderLimits(maxTextBytes: 1 << 20))
        let large = encoder.encode(
            .hello(
                Hello(
                    minVersion: 1, maxVersion: 1, clientName: String(repeating: "x", count: 200_000), clientID: "c",
                    authToken: nil)))
        // In pieces, as reads bring it: the buffer grows to the frame's size meanwhile.
        for start in stride(from: 0, to: large.count, by: 65_536) {
            decoder.feed(Array(large[start..<min(start + 65_536, large.count)]))
        }
        #expect(decoder.bufferCapacity >= large.count)
        #expect(try decoder.next() != nil)
        #expect(decoder.bufferCapacity <= FrameDecoder.retainedCapacity)
        let small = encoder.encode(.ping(Ping(nonce: 1)))
        decoder.feed(small)
        #expect(try decoder.next() != nil)
        #expect(decoder.bufferCapacity > 0 && decoder.bufferCapacity <= FrameDecoder.retainedCapacity)
    }

    /// Random garbage never traps; it decodes or fails with a catalog code.
    @Test func randomGarbageNeverTraps() {
        var random = SplitMix64(seed: 4)
        for _ in 0..<3_000 {
            let length = Int(random.next() % 64)
            var bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            if random.next() % 2 == 0, bytes.count >= 6 {
                // A plausible prefix so the body parsers see the garbage.
                let n = UInt32(bytes.count - 4)
                bytes[0] = 0
                bytes[1] = 0
                bytes[2] = UInt8(n >> 8)
                bytes[3] = UInt8(truncatingIfNeeded: n)
                bytes[4] = MessageType.allCases[Int(random.next() % 15)].rawValue
                bytes[5] = 0
            }
            if case .failure(let error) = decodeAll(bytes, limits: .server) {
                #expect(ErrorCode.allKnown.contains(error.code))
            }
        }
    }
}
