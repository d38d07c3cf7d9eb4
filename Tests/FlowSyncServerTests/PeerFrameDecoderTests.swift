import FlowSyncCoreTestSupport
import Testing

@testable import FlowSyncServer

/// The peer links' codec (issue #33), tested hostile: every frame round-trips fed all
/// at once, byte by byte and split at random points; oversized and zero lengths,
/// unknown types, fields past their frame, trailing bytes and bad UTF-8 each fail with
/// their exact error, and a failed decoder stays failed.
@Suite(.timeLimit(.minutes(1))) struct PeerFrameDecoderTests {
    static let frames: [PeerFrame] = [
        .hello(node: "n1", nonce: Array(repeating: 7, count: 32)),
        .challenge(node: "nœud-2", nonce: Array(0..<32), proof: Array(repeating: 0xAB, count: 32)),
        .proof(Array(repeating: 1, count: 32)),
        .accepted,
        .ping,
        .follow(list: "team/42: inbox"),
        .unfollow(list: ""),
        .push(list: "w-0", epoch: Int64.max, term: 3, version: 12, frame: Array(0..<200).map { UInt8($0 % 256) }),
        .forward(mutate: [1, 2, 3, 0, 255]),
        .answer(list: "l", clientID: "c", seq: UInt64.max, epoch: 9, version: 10, code: 0, message: ""),
        .answer(list: "l", clientID: "c", seq: 2, epoch: 0, version: 0, code: 4004, message: "unknown section “s”"),
    ]

    static func decodeAll(_ decoder: inout PeerFrameDecoder) throws(PeerFrameError) -> [PeerFrame] {
        var out: [PeerFrame] = []
        while let frame = try decoder.next() { out.append(frame) }
        return out
    }

    @Test func everyFrameRoundTripsAllAtOnceByteByByteAndSplitAtRandom() throws {
        let stream = Self.frames.flatMap { $0.encoded() }
        var whole = PeerFrameDecoder(limit: 1 << 20)
        whole.feed(stream)
        #expect(try Self.decodeAll(&whole) == Self.frames)
        #expect(whole.bufferedByteCount == 0)

        var dripped = PeerFrameDecoder(limit: 1 << 20)
        var out: [PeerFrame] = []
        for byte in stream {
            dripped.feed([byte])
            out += try Self.decodeAll(&dripped)
        }
        #expect(out == Self.frames)

        let seed = UInt64.random(in: 0...UInt64.max)
        var random = SeededRandom(seed: seed)
        for _ in 0..<200 {
            var split = PeerFrameDecoder(limit: 1 << 20)
            var got: [PeerFrame] = []
            var at = 0
            while at < stream.count {
                let take = min(stream.count - at, Int(random.next() % 64) + 1)
                split.feed(Array(stream[at..<(at + take)]))
                at += take
                got += try Self.decodeAll(&split)
            }
            #expect(got == Self.frames, "seed \(seed)")
        }
    }

    @Test func anOversizedLengthFailsBeforeItsBytesArrive() {
        var decoder = PeerFrameDecoder(limit: 1_024)
        decoder.feed([0x00, 0x00, 0x04, 0x01])  // 1025
        #expect(throws: PeerFrameError(reason: .tooLong(length: 1_025, limit: 1_024))) { try decoder.next() }
        var huge = PeerFrameDecoder(limit: 64 << 20)
        huge.feed([0xFF, 0xFF, 0xFF, 0xFF])
        #expect(throws: PeerFrameError(reason: .tooLong(length: 0xFFFF_FFFF, limit: 64 << 20))) { try huge.next() }
        #expect(huge.bufferedByteCount == 0, "nothing is kept after the error")
    }

    @Test func malformedFramesFailWithTheirExactError() {
        func failure(_ bytes: [UInt8]) -> PeerFrameError? {
            var decoder = PeerFrameDecoder(limit: 1_024)
            decoder.feed(bytes)
            do {
                _ = try decoder.next()
                return nil
            } catch { return error }
        }
        #expect(failure([0, 0, 0, 0]) == PeerFrameError(reason: .empty))
        #expect(failure([0, 0, 0, 1, 99]) == PeerFrameError(reason: .unknownType(99)))
        #expect(failure([0, 0, 0, 1, 0]) == PeerFrameError(reason: .unknownType(0)))
        // A follow whose string claims 100 bytes in a 9-byte frame.
        #expect(failure([0, 0, 0, 9, 5, 0, 0, 0, 100, 65, 66, 67, 68]) == PeerFrameError(reason: .truncatedField))
        // A follow whose string length is cut short.
        #expect(failure([0, 0, 0, 3, 5, 0, 0]) == PeerFrameError(reason: .truncatedField))
        // An `accepted` with two bytes after it.
        #expect(failure([0, 0, 0, 3, 4, 1, 2]) == PeerFrameError(reason: .trailingBytes(2)))
        // A follow of invalid UTF-8.
        #expect(failure([0, 0, 0, 7, 5, 0, 0, 0, 2, 0xC3, 0x28]) == PeerFrameError(reason: .invalidUTF8))
        // A push whose integers are cut off.
        var push = PeerFrame.push(list: "l", epoch: 1, term: 1, version: 1, frame: []).encoded()
        push.removeLast(10)
        let length = UInt32(push.count - 4)
        push[0...3] = [
            UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF),
        ]
        #expect(failure(push) == PeerFrameError(reason: .truncatedField))
    }

    @Test func aFailedDecoderStaysFailed() {
        var decoder = PeerFrameDecoder(limit: 1_024)
        decoder.feed([0, 0, 0, 1, 200])
        #expect(throws: PeerFrameError(reason: .unknownType(200))) { try decoder.next() }
        decoder.feed(PeerFrame.accepted.encoded())
        #expect(throws: PeerFrameError(reason: .unknownType(200))) { try decoder.next() }
    }

    @Test func seededGarbageNeverCrashesAndAlwaysEndsInAFrameAnErrorOrAWait() {
        let seed = UInt64.random(in: 0...UInt64.max)
        var random = SeededRandom(seed: seed)
        for _ in 0..<2_000 {
            var decoder = PeerFrameDecoder(limit: 512)
            let count = Int(random.next() % 300)
            var bytes = (0..<count).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            // Half the time a plausible prefix, so the parser's fields are reached.
            if random.next() % 2 == 0, count > 5 {
                let length = UInt32(count - 4)
                bytes[0...3] = [0, 0, UInt8(length >> 8), UInt8(length & 0xFF)]
                bytes[4] = UInt8(random.next() % 10)
            }
            decoder.feed(bytes)
            var rounds = 0
            while rounds < 400 {
                rounds += 1
                do {
                    guard try decoder.next() != nil else { break }
                } catch { break }
            }
            #expect(rounds < 400, "seed \(seed)")
        }
    }
}
