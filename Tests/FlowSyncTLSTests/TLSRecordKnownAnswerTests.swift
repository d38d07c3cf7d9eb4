@_spi(Testing) import FlowSyncTLS
import Testing

/// The own record layer's cryptography against RFC 8448 ("Example Handshake Traces for
/// TLS 1.3", §3 "Simple 1-RTT Handshake", TLS_AES_128_GCM_SHA256): the application
/// traffic secrets give the RFC's keys and IVs, and the RFC's two protected
/// application-data records (50 bytes 00…31 each way) are sealed and opened byte for byte.
@Suite(.timeLimit(.minutes(1)))
struct TLSRecordKnownAnswerTests {
    static func hex(_ text: String) -> [UInt8] {
        let digits = text.filter { !$0.isWhitespace }.map { UInt8($0.hexDigitValue!) }
        return stride(from: 0, to: digits.count, by: 2).map { digits[$0] << 4 | digits[$0 + 1] }
    }

    // {client}/{server} derive secret "tls13 c ap traffic" / "tls13 s ap traffic".
    static let clientSecret = hex("9e40646ce79a7f9dc05af8889bce6552875afa0b06df0087f792ebb7c17504a5")
    static let serverSecret = hex("a11af9f05531f856ad47116b45a950328204b4f44bfb6b3a4b4f1f3fcb631643")
    static let payload = [UInt8](0...0x31)
    /// {client} send application_data record (sequence 0).
    static let clientRecord = hex(
        """
        17 03 03 00 43 a2 3f 70 54 b6 2c 94 d0 af fa fe 82 28 ba 55 cb ef ac ea 42 f9 14 aa
        66 bc ab 3f 2b 98 19 a8 a5 b4 6b 39 5b d5 4a 9a 20 44 1e 2b 62 97 4e 1f 5a 62 92 a2
        97 70 14 bd 1e 3d ea e6 3a ee bb 21 69 49 15 e4
        """)
    /// {server} send application_data record (sequence 1: the NewSessionTicket was 0).
    static let serverRecord = hex(
        """
        17 03 03 00 43 2e 93 7e 11 ef 4a c7 40 e5 38 ad 36 00 5f c4 a4 69 32 fc 32 25 d0 5f
        82 aa 1b 36 e3 0e fa f9 7d 90 e6 df fc 60 2d cb 50 1a 59 a8 fc c4 9c 4b f2 e5 f0 a2
        1c 00 47 c2 ab f3 32 54 0d d0 32 e1 67 c2 95 5d
        """)

    @Test func trafficSecretsGiveTheRFCsKeysAndIVs() {
        let suite = TLSRecordSuite.aes128GCMSHA256
        let server = suite.trafficKeys(secret: Self.serverSecret)
        #expect(server.key == Self.hex("9f02283b6c9c07efc26bb9f2ac92e356"))
        #expect(server.iv == Self.hex("cf782b88dd83549aadf1e984"))
        let client = suite.trafficKeys(secret: Self.clientSecret)
        #expect(client.key == Self.hex("17422dda596ed5d9acd890e3c63f5051"))
        #expect(client.iv == Self.hex("5b78923dee08579033e523d9"))
    }

    @Test func theServersRecordIsSealedByteForByte() {
        // The server's view: it opens the client's records and seals its own, here
        // from sequence 1 as in the trace.
        let layer = TLSRecordLayer(
            suite: .aes128GCMSHA256, readSecret: Self.clientSecret, writeSecret: Self.serverSecret, writeSequence: 1)
        var sent: [UInt8] = []
        let output = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 << 10, alignment: 16)
        defer { output.deallocate() }
        #expect(layer.seal([Self.payload], output: output, send: { sent += $0 }))
        #expect(sent == Self.serverRecord)
    }

    @Test func theClientsRecordIsOpenedWholeAndByteByByte() {
        for slice in [Self.clientRecord.count, 1, 7] {
            let layer = TLSRecordLayer(
                suite: .aes128GCMSHA256, readSecret: Self.clientSecret, writeSecret: Self.serverSecret)
            let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 17 << 10, alignment: 16)
            let output = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 << 10, alignment: 16)
            defer {
                scratch.deallocate()
                output.deallocate()
            }
            var received: [UInt8] = []
            var sent: [UInt8] = []
            for start in stride(from: 0, to: Self.clientRecord.count, by: slice) {
                let piece = Array(Self.clientRecord[start..<min(start + slice, Self.clientRecord.count)])
                let step = piece.withUnsafeBytes {
                    layer.received(
                        $0, scratch: scratch, send: { sent += $0 }, output: output,
                        deliver: {
                            received += $0
                            return true
                        })
                }
                guard case .wantsMore = step else {
                    Issue.record("slice \(slice): \(step)")
                    return
                }
            }
            #expect(received == Self.payload, "slice \(slice)")
            #expect(sent.isEmpty && !layer.holdsPartialRecord)
        }
    }

    @Test func everySuiteOpensWhatItSeals() {
        for suite in TLSRecordSuite.allCases {
            let a = [UInt8](repeating: 1, count: suite.secretLength)
            let b = [UInt8](repeating: 2, count: suite.secretLength)
            // Two ends of one connection: what one seals the other opens.
            let server = TLSRecordLayer(suite: suite, readSecret: a, writeSecret: b)
            let client = TLSRecordLayer(suite: suite, readSecret: b, writeSecret: a)
            let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 17 << 10, alignment: 16)
            let output = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 << 10, alignment: 16)
            defer {
                scratch.deallocate()
                output.deallocate()
            }
            var wire: [UInt8] = []
            let frames: [[UInt8]] = [[1, 2, 3], [UInt8](repeating: 9, count: 40_000), [4]]
            #expect(server.seal(frames, output: output, send: { wire += $0 }))
            // 40,004 bytes of content: three records of at most 2^14.
            #expect(wire.count == 40_004 + 3 * (5 + 1 + 16))
            var received: [UInt8] = []
            let step = wire.withUnsafeBytes {
                client.received(
                    $0, scratch: scratch, send: { _ in }, output: output,
                    deliver: {
                        received += $0
                        return true
                    })
            }
            #expect(received == frames.flatMap { $0 }, "\(suite)")
            guard case .wantsMore = step else {
                Issue.record("\(suite): \(step)")
                continue
            }
        }
    }
}
