import FlowSyncCore
import FlowSyncProtocol
import Testing

/// The decoder is incremental: the same bytes fed byte by byte, all at once, or split at
/// random points give the same messages (NIO's `ByteToMessageDecoderVerifier` idea).
@Suite(.timeLimit(.minutes(2))) struct SplitDecodingTests {
    @Test func anySplitGivesTheSameMessages() {
        for seed: UInt64 in 1...60 {
            var generator = MessageGenerator(seed: seed &+ 10_000)
            let encoder = FrameEncoder(configuration: generator.configuration())
            let messages = (0..<generator.random.int(1...12)).map { _ in generator.message() }
            let stream = messages.flatMap { encoder.encode($0) }

            let allAtOnce = decodeAll(stream)
            #expect(allAtOnce == .success(messages), "seed \(seed): all at once")

            let byteByByte = decodeAll(stream, chunks: Array(repeating: 1, count: stream.count))
            #expect(byteByByte == .success(messages), "seed \(seed): byte by byte")

            for _ in 0..<5 {
                var chunks: [Int] = []
                var left = stream.count
                while left > 0 {
                    let size = min(left, generator.random.chance(0.3) ? 1 : generator.random.int(1...64))
                    chunks.append(size)
                    left -= size
                }
                #expect(decodeAll(stream, chunks: chunks) == .success(messages), "seed \(seed): split \(chunks)")
            }
        }
    }

    @Test func nextReturnsNilUntilTheFrameIsComplete() throws {
        let frame = FrameEncoder().encode(.ping(Ping(nonce: 300)))
        let decoder = FrameDecoder(limits: .server)
        for byte in frame.dropLast() {
            decoder.feed([byte])
            #expect(try decoder.next() == nil)
        }
        decoder.feed([frame.last!])
        #expect(try decoder.next() == .ping(Ping(nonce: 300)))
        #expect(try decoder.next() == nil)
        #expect(decoder.bufferedByteCount == 0)
    }

    /// Limits may change between frames: a client switches from pre-handshake limits to
    /// its full limits after the Welcome, even when the next frame arrived in the same read.
    @Test func limitsChangeBetweenFramesOfOneRead() throws {
        let welcome = Message.welcome(Welcome(serverName: "s", dictionary: CompressionDictionary.standard.bytes))
        let big = Message.snapshot(
            Snapshot(
                listName: "l", position: ListVersion(epoch: 1, version: 1), digest: StateDigest(rawValue: 1),
                reason: .freshSubscribe,
                sections: [Section(id: "s", rows: (0..<2_000).map { Row(id: "r\($0)", text: "{}") })]))
        let encoder = FrameEncoder()
        let decoder = FrameDecoder(limits: .preAuth)
        decoder.feed(encoder.encode(welcome) + encoder.encode(big))
        guard case .welcome(let w) = try decoder.next() else {
            Issue.record("expected a Welcome")
            return
        }
        decoder.limits = .client
        decoder.dictionary = CompressionDictionary(welcomeBytes: w.dictionary)
        #expect(try decoder.next() == big)
    }
}
