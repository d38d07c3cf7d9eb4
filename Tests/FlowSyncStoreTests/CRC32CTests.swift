import FlowSyncServer
import FlowSyncTestSupport
import Testing

@Suite(.timeLimit(.minutes(2))) struct CRC32CTests {
    /// The bit-at-a-time definition, the oracle for the table version.
    static func reference(_ bytes: [UInt8]) -> UInt32 {
        var c: UInt32 = 0xFFFF_FFFF
        for b in bytes {
            c ^= UInt32(b)
            for _ in 0..<8 { c = (c & 1) != 0 ? (c >> 1) ^ 0x82F6_3B78 : c >> 1 }
        }
        return ~c
    }

    @Test func standardCheckValue() {
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
        #expect(CRC32C.checksum([UInt8]()) == 0)
        // RFC 3720 (iSCSI) B.4 vectors.
        #expect(CRC32C.checksum([UInt8](repeating: 0, count: 32)) == 0x8A91_36AA)
        #expect(CRC32C.checksum([UInt8](repeating: 0xFF, count: 32)) == 0x62A8_AB43)
        #expect(CRC32C.checksum((0..<32).map { UInt8($0) }) == 0x46DD_794E)
    }

    @Test func matchesTheBitwiseDefinitionAndContinues() {
        var random = SeededRandom(seed: 9)
        for _ in 0..<300 {
            let bytes = (0..<random.int(0...200)).map { _ in UInt8.random(in: 0...255, using: &random) }
            #expect(CRC32C.checksum(bytes) == Self.reference(bytes), "length \(bytes.count)")
            let cut = random.int(0...bytes.count)
            let continued = CRC32C.checksum(bytes[cut...], continuing: CRC32C.checksum(bytes[..<cut]))
            #expect(continued == CRC32C.checksum(bytes), "split at \(cut) of \(bytes.count)")
        }
    }
}
