// libFuzzer target for the frame decoder.
//
//   scripts/fuzz.sh 60        # builds with -DFUZZING, seeds from the golden vectors, runs 60 s
//   .build/debug/FuzzDecoder fuzz-artifacts/crash-…   # replays inputs in a plain build
//
// Built with `-DFUZZING` (the script passes it), the module has no `main`, so libFuzzer's
// driver is linked. In a plain `swift build` (CI builds every target), a small `@main`
// replays the files named on the command line through the same function instead, so a
// crash found by the fuzzer can be debugged without sanitizers.
// Each input is fed to a decoder with small limits (so the fuzzer reaches the limit
// paths quickly) that accepts compressed frames with the standard dictionary. The
// input's first byte chooses how the rest is split across `feed` calls, so partial
// frames are exercised too. Anything but a clean message or a catalog `ProtocolError`
// — a trap, an out-of-bounds read, a leak — is a finding. Every decoded message is
// re-encoded and decoded again: the encoding is canonical, so it must be the same.
//
// Pre-auth mode (bit 3 of the first byte, issue #10): the same input goes to a decoder
// with the server's pre-auth limits (`DecoderLimits.preAuth`: 16 KiB frames, nothing
// compressed, no operations), as a connection before its Welcome. Extra invariant:
// nothing is ever inflated for an unauthenticated peer, so a first frame with the
// compressed flag never yields a message, and no message is larger than the limit.
#if canImport(Glibc)
import Glibc
#endif
import FlowSyncProtocol

let fuzzLimits = DecoderLimits(
    maxFrameBytes: 1 << 20, maxInflatedBytes: 1 << 20, maxPayloadBytes: 4_096, maxTextBytes: 1_024,
    maxOpsPerMutation: 64, maxSectionsPerMessage: 256, maxRowsPerMessage: 4_096, maxChangesPerMessage: 4_096
)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDecoder(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let split = Int(data[0] % 8)  // 0: all at once; k: chunks of k·7 bytes
    let preAuth = data[0] & 0x08 != 0
    let input = UnsafeRawBufferPointer(start: data + 1, count: size - 1)
    let decoder = preAuth ? FrameDecoder(limits: .preAuth) : FrameDecoder(limits: fuzzLimits, dictionary: .standard)
    var messages: [Message] = []
    var offset = 0
    let chunk = split == 0 ? max(input.count, 1) : split * 7
    outer: while offset < input.count {
        let n = min(chunk, input.count - offset)
        decoder.feed(UnsafeRawBufferPointer(rebasing: input[offset..<offset + n]))
        offset += n
        while true {
            do {
                guard let message = try decoder.next() else { break }
                messages.append(message)
            } catch {
                precondition((1000..<6000).contains(error.code.rawValue), "error outside the catalog: \(error)")
                break outer
            }
        }
    }
    if preAuth, input.count >= 6, input[5] & 1 != 0 {
        precondition(messages.isEmpty, "a compressed frame was decoded before the handshake")
    }
    // Canonical re-encoding: what decoded once decodes again to the same message.
    let encoder = FrameEncoder(configuration: .default)
    for message in messages {
        let again = FrameDecoder(limits: .client, dictionary: .standard)
        again.feed(encoder.encode(message))
        let decoded = try? again.next()
        precondition(decoded == message, "re-encoded message differs: \(message.type)")
    }
    return 0
}

#if !FUZZING
/// Replays inputs (files named on the command line) through ``fuzzDecoder(_:_:)``.
@main enum FuzzDecoderReplay {
    static func main() {
        for path in CommandLine.arguments.dropFirst() {
            guard let bytes = readFile(path) else {
                print("cannot read \(path)")
                continue
            }
            _ = bytes.withUnsafeBufferPointer { buffer in
                fuzzDecoder(buffer.baseAddress ?? UnsafePointer(bitPattern: 1)!, buffer.count)
            }
            print("\(path): ok")
        }
    }

    static func readFile(_ path: String) -> [UInt8]? {
        guard let file = fopen(path, "rb") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = fread(&chunk, 1, chunk.count, file)
            if n <= 0 { break }
            bytes += chunk[..<n]
        }
        return bytes
    }
}
#endif
