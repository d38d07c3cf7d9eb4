import FlowSyncLoop
import FlowSyncProtocol
import FlowSyncTestSupport

/// Subscribe (fresh) → the whole Snapshot frame received, counted by its length prefix
/// and not decoded (Welcome + Snapshot = 2 frames), on a connection of its own: what a
/// joiner of `list` waits. Shared by the fan-out and the stall figures.
func timeFreshSnapshot(
    port: Int, list: String, clientID: String, on thread: EventLoopThread,
    timeout: Double
) async -> (seconds: Double, bytes: Int) {
    let counter = FrameCounter()
    let done = Shared(false)
    let started = Shared(0.0)
    let hello = FrameEncoder(configuration: .disabled).encode(
        .hello(Hello(minVersion: 1, maxVersion: 1, clientName: "bench", clientID: clientID, authToken: nil)))
    let subscribe = FrameEncoder(configuration: .disabled).encode(
        .subscribe(Subscribe(listName: list, resumeFrom: nil, digest: nil)))
    thread.loop.execute {
        TCPConnection.connect(loop: thread.loop, to: try! SocketAddress(host: "127.0.0.1", port: port)) { result in
            guard case .success(let tcp) = result else { return }
            tcp.onRead = {
                counter.consume($0)
                if counter.frames >= 2 {
                    done.set(true)
                    tcp.close()
                }
            }
            try? tcp.startReading()
            started.set(now())
            _ = try? tcp.write([hello, subscribe])
        }
    }
    _ = await eventually(timeout: timeout) { done.get() }
    return (counter.lastFrameAt - started.get(), counter.lastFrameBytes)
}
