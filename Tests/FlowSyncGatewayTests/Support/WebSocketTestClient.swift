import FlowSyncClient
import Foundation
import HTTPTypes
import HummingbirdWSClient
import HummingbirdWSCompression
import Logging
import NIOCore
import NIOPosix
import NIOWebSocket

@testable import FlowSyncGateway

/// A WebSocket client for the gateway's `/v1/ws` (swift-websocket's `WebSocketClient`,
/// with permessage-deflate offered as a browser does): messages out through `send`,
/// every text message in collected as parsed JSON, and the server's close frame kept.
final class WebSocketTestClient: Sendable {
    private struct State {
        var messages: [[String: Any]] = []
        var texts: [String] = []
        var ended = false
        var closeCode: Int?
    }

    private let state = Locked(State())
    private let outgoing: AsyncStream<String>.Continuation
    private let task: Task<Void, Never>

    /// Connects to `ws://127.0.0.1:PORT/v1/ws` and waits until the upgrade is done.
    init(port: Int, headers: HTTPFields = [:], deflate: Bool = true) async throws {
        let (stream, continuation) = AsyncStream<String>.makeStream()
        outgoing = continuation
        let state = self.state
        let connected = OneShot<Void>()
        var logger = Logger(label: "ws-test-client")
        logger.logLevel = .critical
        let configuration = WebSocketClientConfiguration(
            maxFrameSize: 1 << 22, additionalHeaders: headers,
            extensions: deflate ? [.perMessageDeflate(maxDecompressedFrameSize: 1 << 22)] : [])
        task = Task {
            do {
                let frame = try await WebSocketClient.connect(
                    url: "ws://127.0.0.1:\(port)/v1/ws", configuration: configuration, logger: logger
                ) { inbound, outbound, _ in
                    connected.succeed(())
                    let writer = Task {
                        for await text in stream { try await outbound.write(.text(text)) }
                    }
                    defer { writer.cancel() }
                    for try await message in inbound.messages(maxSize: 1 << 22) {
                        guard case .text(let text) = message else { continue }
                        let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any]
                        state.withLock {
                            $0.texts.append(text)
                            $0.messages.append(object ?? [:])
                        }
                    }
                }
                state.withLock { $0.closeCode = frame.map { Int(UInt16(webSocketErrorCode: $0.closeCode)) } }
            } catch {
                connected.fail(error)
            }
            state.withLock { $0.ended = true }
            connected.fail(CancellationError())
        }
        let timer = MultiThreadedEventLoopGroup.singleton.next().scheduleTask(in: .seconds(10)) {
            connected.fail(CancellationError())
        }
        defer { timer.cancel() }
        try await connected.value
    }

    /// Sends one text message.
    func send(_ text: String) { outgoing.yield(text) }

    /// Every JSON message received so far, in order.
    var messages: [[String: Any]] { state.withLock { $0.messages } }

    /// The raw texts received so far.
    var texts: [String] { state.withLock { $0.texts } }

    /// Whether the socket has ended, and the server's close code if it sent one.
    var ended: Bool { state.withLock { $0.ended } }
    var closeCode: Int? { state.withLock { $0.closeCode } }

    /// Polls (every 10 ms, at most `timeout`) until `condition` holds on the messages.
    func waitUntil(
        timeout: Duration = .seconds(10), _ condition: ([[String: Any]]) -> Bool
    ) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if condition(messages) { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return condition(messages)
    }

    /// Waits until the socket has ended (bounded).
    func waitUntilEnded(timeout: Duration = .seconds(10)) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if ended { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return ended
    }

    /// Closes from the client side and waits for the end.
    func close() async {
        outgoing.finish()
        task.cancel()
        _ = await task.value
    }
}
