import Foundation
import NIOCore
import NIOPosix

/// A WebSocket peer that upgrades, sends one message, and then never reads: the slow
/// browser. Built on a raw NIO channel with auto-read off and a tiny receive buffer, so
/// the gateway's writes back up as they would toward a stalled tab.
final class StalledWebSocket: Sendable {
    private let channel: any Channel

    private init(channel: any Channel) { self.channel = channel }

    /// Connects, upgrades (no extensions) and sends `text` as one masked frame. The 101
    /// is not read: the frame may follow the request at once (RFC 6455 allows a client to
    /// send as soon as it has sent its handshake only after the 101, but the gateway reads
    /// in order, so the frame is parsed after the upgrade).
    static func connect(port: Int, thenSend text: String) async throws -> StalledWebSocket {
        let request =
            "GET /v1/ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        // The upgrade is written on the event loop as soon as the connection is up, not
        // when this task resumes (RawConnection.connect says why).
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.seconds(5))
            .channelOption(.autoRead, value: false)
            .channelOption(.socketOption(.so_rcvbuf), value: 4096)
            .connect(host: "127.0.0.1", port: port)
            .flatMap { channel in channel.writeAndFlush(ByteBuffer(string: request)).map { channel } }
            .get()
        // Give the gateway the time to answer 101 and switch its pipeline to frames.
        try await Task.sleep(for: .milliseconds(200))
        try await channel.writeAndFlush(ByteBuffer(bytes: maskedTextFrame(text))).get()
        return StalledWebSocket(channel: channel)
    }

    /// A final text frame, masked with a zero key (allowed; the bytes stay readable).
    static func maskedTextFrame(_ text: String) -> [UInt8] {
        let payload = Array(text.utf8)
        var frame: [UInt8] = [0x81]
        if payload.count < 126 {
            frame.append(0x80 | UInt8(payload.count))
        } else {
            frame.append(0x80 | 126)
            frame.append(UInt8(payload.count >> 8))
            frame.append(UInt8(payload.count & 0xFF))
        }
        frame += [0, 0, 0, 0]
        return frame + payload
    }

    /// Whether the gateway has closed the connection.
    var isClosed: Bool { !channel.isActive }

    func close() { channel.close(promise: nil) }
}
