import FlowSyncCore
import FlowSyncProtocol
import Testing

@Suite(.timeLimit(.minutes(2))) struct CompressionTests {
    static let row = Row(id: "r", kind: "cell", text: String(repeating: "{\"title\":\"hello\"}", count: 20))
    static let diff = Message.diff(
        Diff(
            listName: "l", epoch: 1, fromVersion: 1, toVersion: 2, digest: StateDigest(rawValue: 9),
            changeset: Changeset(stages: [
                {
                    var s = ChangesetStage()
                    s.rowInserts = [RowAtPath(path: RowPath(section: 0, row: 0), row: row)]
                    return s
                }()
            ])))

    @Test func belowTheThresholdIsRaw() {
        let encoder = FrameEncoder(configuration: CompressionConfiguration(threshold: 10_000))
        let frame = encoder.encode(Self.diff)
        #expect(!encoder.lastFrameWasCompressed)
        #expect(frame[5] == 0)
    }

    @Test func aboveTheThresholdIsCompressedAndSmaller() {
        let raw = FrameEncoder(configuration: .disabled).encode(Self.diff)
        let encoder = FrameEncoder()
        let frame = encoder.encode(Self.diff)
        #expect(encoder.lastFrameWasCompressed)
        #expect(frame[5] == 1)
        #expect(frame.count < raw.count)
    }

    /// Incompressible bodies are sent raw even above the threshold.
    @Test func compressionThatDoesNotPayIsSentRaw() {
        var random = SplitMix64(seed: 1)
        let noise = (0..<500).map { _ in UInt8.random(in: 0...255, using: &random) }
        let message = Message.mutate(
            Mutate(
                listName: "l", clientID: "c", seq: 1, base: ListVersion(epoch: 1, version: 1),
                operations: [.replaceRow(.id("r"), with: Row(id: "r", payload: noise))]))
        let encoder = FrameEncoder(configuration: CompressionConfiguration(threshold: 0))
        let frame = encoder.encode(message)
        #expect(!encoder.lastFrameWasCompressed)
        #expect(frame == FrameEncoder(configuration: .disabled).encode(message))
    }

    @Test func handshakeAndErrorsAreNeverCompressed() {
        let encoder = FrameEncoder(configuration: CompressionConfiguration(threshold: 0))
        let long = String(repeating: "abc", count: 500)
        for message in [
            Message.hello(Hello(clientName: long, clientID: "c")),
            .welcome(Welcome(serverName: long, dictionary: CompressionDictionary.standard.bytes)),
            .error(ErrorMessage(code: .internalError, message: long)),
        ] {
            #expect(encoder.encode(message)[5] == 0, "\(message.type)")
        }
    }

    /// One encoder, many frames: the reused stream gives each frame the same bytes as a
    /// fresh encoder would (frames are independent, so they can be fanned out).
    @Test func reusedStreamGivesIndependentFrames() {
        var generator = MessageGenerator(seed: 5)
        let shared = FrameEncoder(configuration: CompressionConfiguration(threshold: 0))
        for _ in 0..<300 {
            let message = generator.message()
            #expect(
                shared.encode(message)
                    == FrameEncoder(configuration: CompressionConfiguration(threshold: 0)).encode(message))
        }
    }

    @Test func levelChangeTakesEffect() {
        let big = Message.snapshot(
            Snapshot(
                listName: "l", position: ListVersion(epoch: 1, version: 1), digest: StateDigest(rawValue: 0),
                reason: .freshSubscribe,
                sections: [
                    Section(
                        id: "s",
                        rows: (0..<500).map { Row(id: "r\($0)", text: "{\"n\":\($0 * 7919 % 1000),\"x\":\"y\"}") })
                ]))
        let encoder = FrameEncoder(configuration: CompressionConfiguration(level: 9))
        let best = encoder.encode(big)
        encoder.configuration.level = 1
        let fast = encoder.encode(big)
        #expect(best != fast)
        #expect(decodeAll(best) == .success([big]))
        #expect(decodeAll(fast) == .success([big]))
    }

    @Test func standardDictionaryIsFrozen() {
        #expect(CompressionDictionary.standard.bytes.count == 2_028)
        #expect(CompressionDictionary.standard.id == 2_388_957_343)
    }
}
