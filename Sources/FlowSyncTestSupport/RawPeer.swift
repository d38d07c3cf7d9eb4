import Dispatch
import FlowSyncLoop

/// A raw TCP peer on a client loop thread, for hostile-input tests: it sends whatever
/// bytes it is given, records what comes back and when the server closed it. Nothing
/// blocks: the test awaits its state with ``eventually(timeout:isolation:_:)``.
public final class RawPeer: Sendable {
    private let connection = LoopConfined<TCPConnection?>(nil)
    private let state = Shared<(received: [UInt8], closed: Bool, closedAt: UInt64?)>(([], false, nil))
    public let thread: EventLoopThread

    private init(thread: EventLoopThread) { self.thread = thread }

    /// Opens `count` connections to 127.0.0.1:`port` from one loop job, each sending
    /// `firstBytes` as soon as it is connected; returns once all are connected.
    public static func connect(
        count: Int = 1, port: Int, on thread: EventLoopThread, firstBytes: [UInt8] = []
    ) async throws -> [RawPeer] {
        let peers = (0..<count).map { _ in RawPeer(thread: thread) }
        let outcome = Shared<(connected: Int, failure: UVError?)>((0, nil))
        thread.loop.execute {
            for peer in peers {
                TCPConnection.connect(loop: thread.loop, to: try! SocketAddress(host: "127.0.0.1", port: port)) {
                    result in
                    switch result {
                    case .failure(let error):
                        outcome.update { $0.failure = error }
                    case .success(let tcp):
                        peer.adopt(tcp)
                        if !firstBytes.isEmpty { _ = try? tcp.write([firstBytes]) }
                        outcome.update { $0.connected += 1 }
                    }
                }
            }
        }
        guard
            await eventually(
                timeout: 60,
                {
                    let o = outcome.get()
                    return o.connected == count || o.failure != nil
                })
        else {
            throw UVError(code: -1, operation: "connect timed out")
        }
        if let failure = outcome.get().failure { throw failure }
        return peers
    }

    /// Loop thread only.
    private func adopt(_ tcp: TCPConnection) {
        connection.value = tcp
        tcp.onRead = { [state] bytes in state.update { $0.received += bytes } }
        let ended: @Sendable () -> Void = { [state] in
            state.update {
                if !$0.closed {
                    $0.closed = true
                    $0.closedAt = MonotonicNanoseconds.now()
                }
            }
        }
        tcp.onEnd = { _ in ended() }
        tcp.onClose = { ended() }
        try? tcp.startReading()
    }

    /// Sends bytes as they are.
    public func send(_ bytes: [UInt8]) {
        let connection = self.connection
        thread.loop.execute { _ = try? connection.value?.write([bytes]) }
    }

    /// Half-closes (FIN) after what was sent: the server sees the end of the stream.
    public func finish() {
        let connection = self.connection
        thread.loop.execute { connection.value?.shutdownAndClose() }
    }

    /// Closes the socket.
    public func close() {
        let connection = self.connection
        thread.loop.execute { connection.value?.close() }
    }

    /// What the server sent.
    public var received: [UInt8] { state.get().received }
    /// Whether the server closed the connection.
    public var isClosed: Bool { state.get().closed }
    /// When it was seen closed (monotonic nanoseconds).
    public var closedAt: UInt64? { state.get().closedAt }
}

/// The monotonic clock tests compare with ``RawPeer/closedAt``.
public enum MonotonicNanoseconds {
    public static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }
}
