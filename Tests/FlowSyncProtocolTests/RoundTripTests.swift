import FlowSyncCore
import Testing

@testable import FlowSyncProtocol

/// Property tests: every random message survives encode → decode unchanged, and the
/// bytes of a decoded message re-encode identically (the encoding is canonical).
@Suite(.timeLimit(.minutes(2))) struct RoundTripTests {
    @Test func randomMessagesRoundTrip() {
        for seed: UInt64 in 1...10_000 {
            var generator = MessageGenerator(seed: seed)
            let message = generator.message()
            let encoder = FrameEncoder(configuration: generator.configuration())
            let frame = encoder.encode(message)
            let decoded = decodeAll(frame)
            guard case .success(let messages) = decoded else {
                Issue.record("seed \(seed): \(message.type) failed to decode: \(decoded)")
                continue
            }
            #expect(messages == [message], "seed \(seed): \(message.type) changed in the round trip")
            // Canonical: decoding then re-encoding gives the same bytes.
            if let again = messages.first {
                #expect(encoder.encode(again) == frame, "seed \(seed): re-encoding differs")
            }
        }
    }

    @Test(arguments: MessageType.allCases) func everyTypeRoundTrips(type: MessageType) {
        for seed: UInt64 in 1...150 {
            var generator = MessageGenerator(seed: seed &* 7919 &+ UInt64(type.rawValue))
            let message = generator.message(of: type)
            for configuration in [CompressionConfiguration.disabled, CompressionConfiguration(threshold: 0)] {
                let frame = FrameEncoder(configuration: configuration).encode(message)
                #expect(frame[4] == type.rawValue)
                guard case .success(let messages) = decodeAll(frame) else {
                    Issue.record("seed \(seed), \(type): decode failed")
                    continue
                }
                #expect(messages == [message], "seed \(seed), \(type)")
            }
        }
    }

    /// A bare body round trip through the reader, without frames: checks every
    /// operation case in isolation.
    @Test func everyOperationCaseRoundTrips() throws {
        var generator = MessageGenerator(seed: 99)
        var seen = Set<UInt8>()
        for _ in 0..<2_000 {
            let op = generator.operation()
            var writer = WireWriter()
            writer.operation(op)
            seen.insert(writer.bytes[0])
            let decoded: Operation = try writer.bytes.withUnsafeBytes { raw throws(ProtocolError) in
                var reader = WireReader(raw, limits: .client)
                let op = try reader.operation()
                try reader.expectEnd("operation")
                return op
            }
            #expect(decoded == op)
        }
        #expect(seen.count == 15, "every operation tag was generated")
    }

    @Test func varintBoundaries() throws {
        for value: UInt64 in [0, 1, 127, 128, 255, 16_383, 16_384, 1 << 32, UInt64.max >> 1, UInt64.max] {
            var writer = WireWriter()
            writer.varint(value)
            let expectedLength = value == 0 ? 1 : (64 - value.leadingZeroBitCount + 6) / 7
            #expect(writer.bytes.count == expectedLength, "\(value)")
            let decoded: UInt64 = try writer.bytes.withUnsafeBytes { raw throws(ProtocolError) in
                var reader = WireReader(raw, limits: .client)
                return try reader.varint("value")
            }
            #expect(decoded == value)
        }
    }

    @Test func largeSnapshotRoundTripsCompressed() {
        let rows = (0..<20_000).map {
            Row(id: "row-\($0)", kind: "cell", text: "{\"id\":\($0),\"title\":\"Row number \($0)\",\"read\":false}")
        }
        let snapshot = Message.snapshot(
            Snapshot(
                listName: "big", position: ListVersion(epoch: 3, version: 77), digest: StateDigest(rawValue: 42),
                reason: .freshSubscribe, sections: [Section(id: "s", header: [1, 2], rows: rows)]))
        let encoder = FrameEncoder()
        let frame = encoder.encode(snapshot)
        #expect(encoder.lastFrameWasCompressed)
        #expect(
            decodeAll(frame, chunks: Array(repeating: 65_536, count: frame.count / 65_536 + 1)) == .success([snapshot]))
    }
}
