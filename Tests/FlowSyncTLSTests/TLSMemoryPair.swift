@_spi(Testing) import FlowSyncTLS
import FlowSyncTestSupport

/// One side of an in-memory TLS connection: what it sent (ciphertext), what it
/// received (plaintext), and how it ended. The tests move ciphertext between two of
/// them by hand: no socket, no loop, every byte visible.
final class MemoryEnd {
    var outgoing: [UInt8] = []
    var received: [UInt8] = []
    var established: TLSConnectionInfo?
    /// `.some(nil)`: ended in order; `.some(error)`: failed.
    var ended: TLSError??
    var verify: (TLSConnectionInfo) -> TLSError? = { _ in nil }
    let channel: TLSChannel

    init(_ channel: TLSChannel) { self.channel = channel }

    var io: IO { IO(end: self) }

    struct IO: TLSChannelIO {
        let end: MemoryEnd
        mutating func sendCiphertext(_ bytes: UnsafeRawBufferPointer) { end.outgoing += bytes }
        mutating func deliverPlaintext(_ bytes: UnsafeRawBufferPointer) { end.received += bytes }
        mutating func handshakeCompleted(_ info: TLSConnectionInfo) { end.established = info }
        mutating func verifyPeer(_ info: TLSConnectionInfo) -> TLSError? { end.verify(info) }
        mutating func channelEnded(_ failure: TLSError?) {
            precondition(end.ended == nil, "channelEnded twice")
            end.ended = .some(failure)
        }
    }

    /// Hands what this end sent to `peer`, `slice` bytes at a time (all at once by default).
    @discardableResult
    func deliver(to peer: MemoryEnd, slice: Int = .max) -> Int {
        let bytes = outgoing
        outgoing = []
        var io = peer.io
        var offset = 0
        while offset < bytes.count {
            let end = min(bytes.count, offset + slice)
            bytes[offset..<end].withUnsafeBytes { peer.channel.received($0, &io) }
            offset = end
        }
        return bytes.count
    }

    func send(_ frames: [[UInt8]]) {
        var io = self.io
        channel.send(frames, &io)
    }

    var failure: TLSError? { ended ?? nil }
}

/// A client and a server channel wired in memory.
struct MemoryPair {
    let client: MemoryEnd
    let server: MemoryEnd
    /// Per pair: tests run in parallel, and a scratch is one thread's.
    let scratch = TLSScratch()

    init(
        server serverOptions: TLSContext.ServerOptions, client clientOptions: TLSContext.ClientOptions,
        serverName: String? = "localhost", handshakeLimit: Int = 64 << 10
    ) throws {
        let serverContext = try TLSContext.server(serverOptions)
        let clientContext = try TLSContext.client(clientOptions)
        server = MemoryEnd(
            try TLSChannel(
                context: serverContext, configuration: .init(handshakeByteLimit: handshakeLimit),
                scratch: scratch))
        client = MemoryEnd(try TLSChannel(context: clientContext, serverName: serverName, scratch: scratch))
        // The client's policy in these tests: OpenSSL's verdict decides.
        client.verify = { info in
            if case .failed(let reason, let text) = info.peerVerification { return .connection(reason, text) }
            return nil
        }
    }

    /// Starts the client's handshake and moves bytes both ways until neither side sends.
    func connect(slice: Int = .max) {
        var io = client.io
        client.channel.start(&io)
        pump(slice: slice)
    }

    func pump(slice: Int = .max) {
        for _ in 0..<100 {
            let moved = client.deliver(to: server, slice: slice) + server.deliver(to: client, slice: slice)
            if moved == 0 { return }
        }
    }

    static func options(_ certificates: TestCertificates, certificate: String = "server") -> TLSContext.ServerOptions {
        TLSContext.ServerOptions(
            certificateChainFile: certificates.path("\(certificate).pem"),
            privateKeyFile: certificates.path("\(certificate).key"))
    }

    /// A client that trusts the test CA only (not the system store).
    static func trustingTestCA(_ certificates: TestCertificates) throws -> TLSContext.ClientOptions {
        var options = TLSContext.ClientOptions()
        options.usesSystemTrustStore = false
        options.additionalTrustedRoots = [try certificates.der("ca.pem")]
        return options
    }
}
