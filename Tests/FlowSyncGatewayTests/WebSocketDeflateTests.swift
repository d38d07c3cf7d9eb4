import CZlib
import FlowSyncServer
import FlowSyncTestSupport
import Foundation
import HTTPTypes
import HummingbirdWebSocket
import Testing

@testable import FlowSyncGateway

/// permessage-deflate as the gateway does it (docs/GATEWAY.md, "Compression"): the
/// negotiation as a pure function, then a raw socket that makes Chromium's offer and reads
/// the frames itself, inflating them with zlib as a browser would.
@Suite(.timeLimit(.minutes(2))) struct WebSocketDeflateTests {
    typealias E2E = WebSocketEndToEndTests
    static let chromiumOffer = "permessage-deflate; client_max_window_bits"

    static func offers(_ value: String) -> [WebSocketExtensionHTTPParameters] {
        WebSocketExtensionHTTPParameters.parseHeaders([.secWebSocketExtensions: value])
    }

    // MARK: The negotiation

    @Test func theAnswerAlwaysCarriesServerNoContextTakeover() {
        #expect(
            PerMessageDeflateNegotiation.response(to: Self.offers(Self.chromiumOffer))
                == "permessage-deflate; server_no_context_takeover")
        #expect(
            PerMessageDeflateNegotiation.response(to: Self.offers("permessage-deflate"))
                == "permessage-deflate; server_no_context_takeover")
        #expect(
            PerMessageDeflateNegotiation.response(
                to: Self.offers("permessage-deflate; client_max_window_bits=10; client_no_context_takeover"))
                == "permessage-deflate; server_no_context_takeover; client_no_context_takeover")
        // A smaller server window is declined (the shared payload uses 32 KiB), and the
        // next offer is taken.
        #expect(
            PerMessageDeflateNegotiation.response(to: Self.offers("permessage-deflate; server_max_window_bits=10"))
                == nil)
        #expect(
            PerMessageDeflateNegotiation.response(
                to: Self.offers("permessage-deflate; server_max_window_bits=10") + Self.offers("permessage-deflate"))
                == "permessage-deflate; server_no_context_takeover")
        #expect(PerMessageDeflateNegotiation.response(to: Self.offers("permessage-deflate; x_unknown")) == nil)
        #expect(
            PerMessageDeflateNegotiation.response(to: Self.offers("permessage-deflate; client_max_window_bits=99"))
                == nil)
        #expect(PerMessageDeflateNegotiation.response(to: []) == nil)
        #expect(!PerMessageDeflateNegotiation.negotiates([:]))
        #expect(PerMessageDeflateNegotiation.negotiates([.secWebSocketExtensions: Self.chromiumOffer]))
    }

    // MARK: zlib, independently of the gateway's wrappers

    /// A raw inflater as a browser holds it; `reset` drops the window between messages.
    final class TestInflater {
        let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        init() {
            stream.initialize(to: z_stream())
            precondition(CZlib_inflateInit2(stream, -15) == Z_OK)
        }
        deinit {
            inflateEnd(stream)
            stream.deallocate()
        }
        func reset() { inflateReset(stream) }
        /// One message's payload, with RFC 7692's tail put back.
        func inflate(_ payload: [UInt8]) -> [UInt8]? {
            var input = payload + [0, 0, 0xFF, 0xFF]
            var out: [UInt8] = []
            var scratch = [UInt8](repeating: 0, count: 4096)
            return input.withUnsafeMutableBufferPointer { input -> [UInt8]? in
                stream.pointee.next_in = input.baseAddress
                stream.pointee.avail_in = uInt(input.count)
                while true {
                    let rc = scratch.withUnsafeMutableBufferPointer { s -> Int32 in
                        stream.pointee.next_out = s.baseAddress
                        stream.pointee.avail_out = uInt(s.count)
                        return CZlib.inflate(stream, Z_SYNC_FLUSH)
                    }
                    out += scratch[0..<(scratch.count - Int(stream.pointee.avail_out))]
                    if rc == Z_BUF_ERROR
                        || (rc == Z_OK && stream.pointee.avail_in == 0 && stream.pointee.avail_out != 0)
                    {
                        return out
                    }
                    if rc != Z_OK { return nil }
                }
            }
        }
    }

    /// A raw deflater as a browser holds it: context kept across messages.
    final class TestDeflater {
        let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        init() {
            stream.initialize(to: z_stream())
            precondition(CZlib_deflateInit2(stream, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) == Z_OK)
        }
        deinit {
            deflateEnd(stream)
            stream.deallocate()
        }
        func deflate(_ bytes: [UInt8]) -> [UInt8] {
            var input = bytes
            var out = [UInt8](repeating: 0, count: bytes.count + 1024)
            let produced = input.withUnsafeMutableBufferPointer { input in
                out.withUnsafeMutableBufferPointer { o -> Int in
                    stream.pointee.next_in = input.baseAddress
                    stream.pointee.avail_in = uInt(input.count)
                    stream.pointee.next_out = o.baseAddress
                    stream.pointee.avail_out = uInt(o.count)
                    precondition(CZlib.deflate(stream, Z_SYNC_FLUSH) == Z_OK && stream.pointee.avail_in == 0)
                    return o.count - Int(stream.pointee.avail_out)
                }
            }
            #expect(Array(out[(produced - 4)..<produced]) == [0, 0, 0xFF, 0xFF])
            return Array(out[0..<(produced - 4)])
        }
    }

    // MARK: Frames

    struct Frame {
        var fin: Bool
        var rsv1: Bool
        var opcode: UInt8
        var payload: [UInt8]
    }

    /// The server's frames after the 101's head (unmasked, as a server sends).
    static func frames(_ bytes: [UInt8]) -> [Frame] {
        guard let end = bytes.indices.dropLast(3).first(where: { Array(bytes[$0..<($0 + 4)]) == [13, 10, 13, 10] })
        else { return [] }
        var i = end + 4
        var frames: [Frame] = []
        while i + 2 <= bytes.count {
            var length = Int(bytes[i + 1] & 0x7F)
            var at = i + 2
            if length == 126 {
                guard at + 2 <= bytes.count else { break }
                length = Int(bytes[at]) << 8 | Int(bytes[at + 1])
                at += 2
            } else if length == 127 {
                guard at + 8 <= bytes.count else { break }
                length = bytes[at..<(at + 8)].reduce(0) { $0 << 8 | Int($1) }
                at += 8
            }
            guard at + length <= bytes.count else { break }
            frames.append(
                Frame(
                    fin: bytes[i] & 0x80 != 0, rsv1: bytes[i] & 0x40 != 0, opcode: bytes[i] & 0x0F,
                    payload: Array(bytes[at..<(at + length)])))
            i = at + length
        }
        return frames
    }

    /// A client's frame: masked, FIN set.
    static func clientFrame(opcode: UInt8 = 1, rsv1: Bool, _ payload: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x80 | (rsv1 ? 0x40 : 0) | opcode]
        if payload.count < 126 {
            out.append(0x80 | UInt8(payload.count))
        } else if payload.count < 1 << 16 {
            out += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        } else {
            out.append(0x80 | 127)
            out += (0..<8).reversed().map { UInt8((payload.count >> ($0 * 8)) & 0xFF) }
        }
        let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        out += mask
        out += payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
        return out
    }

    static func upgrade(_ port: Int) async throws -> RawConnection {
        let raw = try await RawConnection.connect(
            port: port,
            firstBytes: "GET /v1/ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
                + "Sec-WebSocket-Extensions: \(chromiumOffer)\r\n\r\n")
        #expect(
            await raw.waitUntil(timeout: .seconds(10)) {
                String(decoding: $0.bytes, as: UTF8.self).contains("\r\n\r\n")
            })
        let head = raw.text.lowercased()
        #expect(head.hasPrefix("http/1.1 101"), "\(raw.text)")
        #expect(
            head.contains("sec-websocket-extensions: permessage-deflate; server_no_context_takeover\r\n"),
            "\(raw.text)")
        return raw
    }

    static func row(_ id: String, at index: Int, padding: Int) -> String {
        let text = String(repeating: "flowsync \(id) ", count: padding / 12 + 1)
        return
            #"[{"op":"insertRows","section":"S","at":\#(index),"rows":[{"id":"\#(id)","payload":{"t":"\#(text)"}}]}]"#
    }

    // MARK: Outbound: one payload, valid for every inflater

    @Test func aFeedsDeflatedFramesInflateToThePlainClientsJSONWithOrWithoutContextKept() async throws {
        let server = try await EmbeddedServer()
        let gateway = try await GatewayHarness(server: server)
        _ = try await ChangesStreamTests.post(gateway, "z", E2E.seed)
        for i in 0..<3 { _ = try await ChangesStreamTests.post(gateway, "z", Self.row("s\(i)", at: 0, padding: 400)) }
        let plain = try await WebSocketTestClient(port: gateway.port, deflate: false)
        plain.send(#"{"type":"subscribe","list":"z"}"#)
        #expect(await plain.waitUntil { E2E.types($0) == ["snapshot"] })
        let raw = try await Self.upgrade(gateway.port)
        try await raw.send(bytes: Self.clientFrame(rsv1: false, Array(#"{"type":"subscribe","list":"z"}"#.utf8)))
        #expect(await raw.waitUntil(timeout: .seconds(10)) { Self.frames($0.bytes).count == 1 })
        // Diffs of several sizes.
        for i in 0..<8 {
            _ = try await ChangesStreamTests.post(
                gateway, "z", Self.row("r\(i)", at: 0, padding: i % 2 == 0 ? 600 : 10))
        }
        // A joiner's snapshot mid-stream, compressed for it alone, then both get diff 13.
        #expect(await plain.waitUntil { $0.count == 9 }, "\(plain.texts.count)")
        #expect(await raw.waitUntil(timeout: .seconds(10)) { Self.frames($0.bytes).count == 9 })
        let frames = Self.frames(raw.bytes)
        #expect(frames.allSatisfy { $0.fin && $0.opcode == 1 })
        #expect(frames.filter(\.rsv1).count >= 5, "the snapshot and the large diffs are deflated")
        let kept = TestInflater()
        var texts: [String] = []
        for frame in frames {
            guard frame.rsv1 else {
                texts.append(String(decoding: frame.payload, as: UTF8.self))
                continue
            }
            let fresh = TestInflater()
            let alone = fresh.inflate(frame.payload)
            let continued = kept.inflate(frame.payload)
            #expect(alone != nil && alone == continued, "one payload, whatever the inflater saw before")
            #expect((alone?.count ?? 0) > frame.payload.count)
            texts.append(String(decoding: alone ?? [], as: UTF8.self))
        }
        // Deflated exactly when at least WebSocketFeed.minimumBytesToDeflate long.
        for (frame, text) in zip(frames, texts) {
            #expect(frame.rsv1 == (text.utf8.count >= WebSocketFeed.minimumBytesToDeflate), "\(text)")
        }
        // The snapshot is per joiner; the diffs are byte for byte the plain client's.
        #expect(texts.count == plain.texts.count)
        #expect(Array(texts.dropFirst()) == Array(plain.texts.dropFirst()))
        #expect(texts.first?.contains(#""type":"snapshot""#) == true)
        raw.close()
        await plain.close()
        await gateway.stop()
        #expect(await server.stop())
    }

    // MARK: Inbound: inflated with context kept, bounded

    @Test func aDeflatedMutateIsAckedAndABombIsRefusedWith1009() async throws {
        let server = try await EmbeddedServer()
        let gateway = try await GatewayHarness(server: server)
        _ = try await ChangesStreamTests.post(gateway, "in", E2E.seed)
        let raw = try await Self.upgrade(gateway.port)
        let deflater = TestDeflater()  // context kept, as Chromium does
        for i in 0..<2 {
            let text = E2E.mutate("in", id: "m\(i)", Self.row("x\(i)", at: 0, padding: 300))
            try await raw.send(bytes: Self.clientFrame(rsv1: true, deflater.deflate(Array(text.utf8))))
        }
        #expect(await raw.waitUntil(timeout: .seconds(10)) { Self.frames($0.bytes).count == 2 }, "\(raw.text)")
        let answers = Self.frames(raw.bytes).map { String(decoding: $0.payload, as: UTF8.self) }
        #expect(answers.allSatisfy { $0.contains(#""type":"ack""#) }, "\(answers)")
        // 2 MiB of spaces inside a string: a few KB deflated, past the 1 MiB limit.
        let bomb =
            Array(#"{"type":"mutate","list":"in","id":"b","operations":""#.utf8)
            + [UInt8](repeating: 0x20, count: 2 << 20) + Array(#""}"#.utf8)
        let compressed = deflater.deflate(bomb)
        #expect(compressed.count < 16 << 10)
        try await raw.send(bytes: Self.clientFrame(rsv1: true, compressed))
        #expect(await raw.waitUntil(timeout: .seconds(10)) { Self.frames($0.bytes).contains { $0.opcode == 8 } })
        let close = Self.frames(raw.bytes).first { $0.opcode == 8 }
        let code = close.map { Int($0.payload[0]) << 8 | Int($0.payload[1]) }
        #expect(code == 1009, "\(String(describing: close))")
        raw.close()
        await gateway.stop()
        #expect(await server.stop())
    }
}
