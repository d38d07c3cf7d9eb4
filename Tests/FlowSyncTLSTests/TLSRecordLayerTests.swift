@_spi(Testing) import FlowSyncTLS
import FlowSyncTestSupport
import Testing

/// The own record layer behind a real OpenSSL handshake, two channels in memory: the
/// server hands its records over (``TLSRecordSwitch``), the client stays on OpenSSL,
/// so every record is checked by an independent implementation. Then hostile input:
/// a corrupted tag, a truncated record, a record dripped byte by byte, an oversized
/// length, a wrong content type, a KeyUpdate storm.
@Suite(.timeLimit(.minutes(2)))
struct TLSRecordLayerTests {
    private func pair(minimum: TLSVersion = .tls13, clientMaximum: TLSVersion? = nil) async throws -> MemoryPair {
        let certificates = try await TestCertificates.shared()
        var server = MemoryPair.options(certificates)
        server.recordLayer = .flowSync
        server.minimumVersion = minimum
        var client = try MemoryPair.trustingTestCA(certificates)
        client.maximumVersion = clientMaximum
        return try MemoryPair(server: server, client: client)
    }

    /// Sends a frame each way and checks both arrive.
    private func expectTraffic(_ pair: MemoryPair, _ label: String, slice: Int = .max) {
        let before = (pair.server.received.count, pair.client.received.count)
        pair.client.send([[1, 2, 3]])
        pair.server.send([[4, 5]])
        pair.pump(slice: slice)
        #expect(Array(pair.server.received.dropFirst(before.0)) == [1, 2, 3], "\(label)")
        #expect(Array(pair.client.received.dropFirst(before.1)) == [4, 5], "\(label)")
        #expect(pair.server.failure == nil && pair.client.failure == nil, "\(label)")
    }

    @Test func aTLS13ServerHandsItsRecordsOverAndCarriesFramesBothWays() async throws {
        let pair = try await pair()
        pair.client.send([Array("hello".utf8)])  // leaves with the client's Finished
        pair.connect()
        #expect(pair.server.channel.usesOwnRecordLayer)
        #expect(!pair.client.channel.usesOwnRecordLayer)
        #expect(pair.server.received == Array("hello".utf8))
        var frames: [[UInt8]] = (0..<200).map { [UInt8](repeating: UInt8($0 & 0xff), count: 1 + $0) }
        frames.append([UInt8](repeating: 7, count: 1 << 20))
        pair.server.send(frames)
        pair.client.send(frames)
        pair.pump()
        #expect(pair.client.received == frames.flatMap { $0 })
        #expect(pair.server.received == Array("hello".utf8) + frames.flatMap { $0 })
        expectTraffic(pair, "after the burst")
    }

    @Test func recordsDrippedByteByByteBothWays() async throws {
        let pair = try await pair()
        pair.connect(slice: 1)
        #expect(pair.server.channel.usesOwnRecordLayer)
        for round in 0..<3 { expectTraffic(pair, "round \(round)", slice: 1) }
        // A record split at every point of a two-record burst.
        let frames: [[UInt8]] = [[UInt8](repeating: 3, count: 20_000)]
        pair.client.send(frames)
        pair.pump(slice: 997)
        #expect(pair.server.received.suffix(20_000) == frames[0][...])
    }

    /// ``TLSRecordLayer/seal(_:output:send:)`` copies pieces shorter than
    /// ``TLSRecordLayer/copiedPieceLimit`` behind the header and seals them in place
    /// with the type byte, and seals longer ones from their frame, both kinds mixed in
    /// one record. Seeded random turns of frames around every limit (the copy limit,
    /// 2^14, empty frames): the records are full (one per 2^14 bytes of content, only
    /// the last shorter), and OpenSSL's client, fed the wire cut at random points (a
    /// record boundary at any byte position), reads exactly the frames' bytes in order.
    @Test func framesAroundEveryLimitAreSealedIntoFullRecordsThatOpenSSLReads() async throws {
        let limit = TLSRecordLayer.copiedPieceLimit
        let record = TLSRecordFraming.maxPlaintext
        let sizes = [
            0, 1, 2, 17, 300, limit - 1, limit, limit + 1, record - 1, record, record + 1, 2 * record + 5, 40_000,
        ]
        for seed: UInt64 in 1...24 {
            var random = SplitMix64(seed: seed)
            let pair = try await pair()
            pair.connect()
            #expect(pair.server.channel.usesOwnRecordLayer)
            var frames: [[UInt8]] = []
            for index in 0..<(1 + Int(random.next() % 12)) {
                let size = sizes[Int(random.next() % UInt64(sizes.count))]
                frames.append((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ index &+ Int(seed)) })
            }
            let total = frames.reduce(0) { $0 + $1.count }
            let sealedBefore = pair.scratch.records.sealed
            pair.server.send(frames)
            let wire = pair.server.outgoing
            pair.server.outgoing = []
            // The records: full ones, then the rest.
            var contents: [Int] = []
            var offset = 0
            while offset + 5 <= wire.count {
                #expect(wire[offset] == 23, "seed \(seed)")
                let body = Int(wire[offset + 3]) << 8 | Int(wire[offset + 4])
                contents.append(body - 1 - TLSRecordSuite.tagLength)
                offset += 5 + body
            }
            #expect(offset == wire.count, "seed \(seed)")
            #expect(contents.reduce(0, +) == total, "seed \(seed)")
            #expect(contents.count == (total + record - 1) / record, "seed \(seed): \(contents)")
            #expect(contents.dropLast().allSatisfy { $0 == record }, "seed \(seed): \(contents)")
            // The loop's counts (TLSRecordCounts): one per record.
            #expect(pair.scratch.records.sealed - sealedBefore == contents.count, "seed \(seed)")
            // OpenSSL reads them, cut anywhere.
            var io = pair.client.io
            offset = 0
            while offset < wire.count {
                let end = min(wire.count, offset + 1 + Int(random.next() % 3_000))
                wire[offset..<end].withUnsafeBytes { pair.client.channel.received($0, &io) }
                offset = end
            }
            #expect(pair.client.received == frames.flatMap { $0 }, "seed \(seed): sizes \(frames.map(\.count))")
            #expect(pair.client.failure == nil, "seed \(seed)")
            expectTraffic(pair, "seed \(seed): after the turn")
        }
    }

    @Test func tls12StaysOnOpenSSL() async throws {
        let pair = try await pair(minimum: .tls12, clientMaximum: .tls12)
        pair.connect()
        #expect(pair.server.established?.protocolVersion == "TLSv1.2")
        #expect(!pair.server.channel.usesOwnRecordLayer)
        expectTraffic(pair, "TLS 1.2")
    }

    @Test func keyUpdatesFromTheClientAreFollowedAndAnswered() async throws {
        let pair = try await pair()
        pair.connect()
        for round in 0..<6 {
            var io = pair.client.io
            pair.client.channel.requestKeyUpdate(askingPeer: round % 2 == 0, &io)
            pair.pump()
            expectTraffic(pair, "after KeyUpdate \(round)")
        }
    }

    @Test func aKeyUpdateStormIsBounded() async throws {
        let pair = try await pair()
        pair.connect()
        var io = pair.client.io
        for _ in 0..<(TLSRecordLayer.maxKeyUpdatesWithoutData + 1) {
            pair.client.channel.requestKeyUpdate(askingPeer: true, &io)
        }
        let storm = pair.client.outgoing.count
        pair.client.deliver(to: pair.server)
        #expect(pair.server.failure?.reason == .badRecord)
        // The answer: at most one KeyUpdate and the alert, whatever the storm's size.
        let answered = pair.server.outgoing.count
        let bound = 2 * (5 + 5 + 1 + 16)  // two records of at most 5 bytes of content
        #expect(answered <= bound, "\(answered) bytes answered \(storm)")
        pair.server.deliver(to: pair.client)
        #expect(pair.client.failure != nil)
    }

    @Test func aCorruptedTagIsABadRecordMAC() async throws {
        let pair = try await pair()
        pair.connect()
        pair.client.send([[1, 2, 3, 4]])
        pair.client.outgoing[pair.client.outgoing.count - 1] ^= 1
        pair.client.deliver(to: pair.server)
        #expect(pair.server.failure?.reason == .badRecord)
        #expect(pair.server.received.isEmpty)
        pair.server.deliver(to: pair.client)  // the bad_record_mac alert, which OpenSSL reads
        #expect(pair.client.failure != nil)
        // Nothing more is opened or sealed.
        pair.server.send([[9]])
        #expect(pair.server.outgoing.isEmpty)
    }

    @Test func aRecordCutByTheTransportIsTruncated() async throws {
        let pair = try await pair()
        pair.connect()
        pair.client.send([[1, 2, 3, 4]])
        let record = pair.client.outgoing
        pair.client.outgoing = Array(record.dropLast(3))
        pair.client.deliver(to: pair.server)
        #expect(pair.server.failure == nil && pair.server.received.isEmpty)
        var io = pair.server.io
        pair.server.channel.transportEnded(&io)
        #expect(pair.server.failure?.reason == .truncated)
    }

    @Test func hostileHeadersAfterTheSwitch() async throws {
        let inputs: [(String, [UInt8])] = [
            ("oversized length", [23, 3, 3, 0xff, 0xff]),
            ("plaintext handshake record", [22, 3, 3, 0, 4, 1, 0, 0, 0]),
            ("change_cipher_spec", [20, 3, 3, 0, 1, 1]),
            ("too short for a tag", [23, 3, 3, 0, 3, 1, 2, 3]),
            ("a forged record", [23, 3, 3, 0, 20] + [UInt8](repeating: 0x5a, count: 20)),
        ]
        for (label, input) in inputs {
            let pair = try await pair()
            pair.connect()
            pair.client.outgoing = input
            pair.client.deliver(to: pair.server)
            #expect(pair.server.failure?.reason == .badRecord, "\(label)")
            // The alert reaches the client, which OpenSSL reads as one.
            pair.server.deliver(to: pair.client)
            #expect(pair.client.failure != nil, "\(label)")
        }
    }

    /// Damaged records after the switch, each fed whole and a byte at a time, after a
    /// good frame: the good frame is delivered, the connection ends with `bad_record`
    /// (its alert reaches the client, which OpenSSL reads as one), and nothing more is
    /// opened or sealed. Each case is its own connection; none affects another.
    @Test func damagedRecordsWholeAndByteByByte() async throws {
        let overLimit = TLSRecordFraming.maxCiphertext + 1
        let damages: [(String, ([UInt8]) -> [UInt8])] = [
            (
                "a bad tag",
                {
                    var r = $0
                    r[r.count - 1] ^= 0x80
                    return r
                }
            ),
            (
                "a flipped ciphertext byte",
                {
                    var r = $0
                    r[7] ^= 1
                    return r
                }
            ),
            (
                "a flipped header byte (the additional data)",
                {
                    var r = $0
                    r[2] ^= 1
                    return r
                }
            ),
            (
                "a length one short",
                {
                    var r = $0
                    r[4] &-= 1
                    return r
                }
            ),
            (
                "a length one long, and one more byte",
                {
                    var r = $0
                    r[4] &+= 1
                    return r + [0]
                }
            ),
            (
                "a length over 2^14 + 256",
                { [23, 3, 3, UInt8(overLimit >> 8), UInt8(overLimit & 0xff)] + $0.dropFirst(5) }
            ),
            (
                "2^14 + 256 bytes of noise, a length allowed",
                { _ in
                    [
                        23, 3, 3, UInt8(TLSRecordFraming.maxCiphertext >> 8),
                        UInt8(TLSRecordFraming.maxCiphertext & 0xff),
                    ]
                        + [UInt8](repeating: 0xa5, count: TLSRecordFraming.maxCiphertext)
                }
            ),
            ("a record repeated (a replay)", { $0 + $0 }),
        ]
        for (label, damage) in damages {
            for slice in [Int.max, 1] {
                let pair = try await pair()
                pair.connect()
                pair.client.send([[1, 2, 3]])
                pair.client.deliver(to: pair.server)
                pair.client.send([[UInt8](repeating: 4, count: 100)])
                let record = pair.client.outgoing
                pair.client.outgoing = damage(record)
                pair.client.deliver(to: pair.server, slice: slice)
                let expected: [UInt8] =
                    label.contains("replay") ? [1, 2, 3] + [UInt8](repeating: 4, count: 100) : [1, 2, 3]
                #expect(pair.server.received == expected, "\(label), slice \(slice)")
                #expect(pair.server.failure?.reason == .badRecord, "\(label), slice \(slice)")
                pair.server.deliver(to: pair.client)
                #expect(pair.client.failure != nil, "\(label), slice \(slice)")
                pair.server.send([[9]])
                #expect(pair.server.outgoing.isEmpty, "\(label), slice \(slice)")
            }
        }
        // The oversized length is refused from its header alone, before any body byte.
        let pair = try await pair()
        pair.connect()
        pair.client.outgoing = [23, 3, 3, UInt8(overLimit >> 8), UInt8(overLimit & 0xff)]
        pair.client.deliver(to: pair.server, slice: 1)
        #expect(pair.server.failure?.reason == .badRecord)
    }

    /// A close_notify in the middle of the stream, fed whole and a byte at a time: what
    /// came before it is delivered, the connection ends in order (no failure), and the
    /// bytes after it (here a forged record) are never opened.
    @Test func aCloseNotifyMidStreamEndsInOrder() async throws {
        for slice in [Int.max, 1] {
            let pair = try await pair()
            pair.connect()
            pair.client.send([[1, 2, 3]])
            var io = pair.client.io
            pair.client.channel.close(&io)
            pair.client.outgoing += [23, 3, 3, 0, 20] + [UInt8](repeating: 0x5a, count: 20)
            pair.client.deliver(to: pair.server, slice: slice)
            #expect(pair.server.received == [1, 2, 3], "slice \(slice)")
            #expect(pair.server.ended == .some(nil), "slice \(slice)")
        }
    }

    @Test func closeNotifyEitherWay() async throws {
        let fromClient = try await pair()
        fromClient.connect()
        var io = fromClient.client.io
        fromClient.client.channel.close(&io)
        fromClient.pump()
        #expect(fromClient.server.ended == .some(nil))
        #expect(fromClient.client.ended == .some(nil))

        let fromServer = try await pair()
        fromServer.connect()
        fromServer.client.send([[7]])  // in flight when the server closes
        fromServer.client.deliver(to: fromServer.server)
        io = fromServer.server.io
        fromServer.server.channel.close(&io)
        fromServer.server.deliver(to: fromServer.client)
        #expect(fromServer.server.received == [7])
        #expect(fromServer.server.ended == .some(nil))
        #expect(fromServer.client.ended != nil)
        #expect(fromServer.client.failure == nil)
    }
}

/// A seeded generator for the tests above (SplitMix64): the seed of a failure is in
/// its message.
struct SplitMix64 {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE5_E4B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
