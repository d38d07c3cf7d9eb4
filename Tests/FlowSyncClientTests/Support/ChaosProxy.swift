import FlowSyncLoop
import FlowSyncTestSupport

/// A TCP proxy on 127.0.0.1 port 0 between SDK clients and a server, which a test can
/// turn against them: cut every connection, swallow what the server sends, or point new
/// connections at another server (a "restarted" daemon on a new port), or blackhole
/// the path: nothing passes either way, not even a close (a phone that lost its network).
final class ChaosProxy: Sendable {
    let thread: EventLoopThread
    let port: Int
    private let state: LoopConfined<State>
    /// Outside ``State``: read by close callbacks, which may run inside a ``run(_:)``
    /// that holds the state (a cut closes a pair, whose callbacks fire at once).
    private let blackholed = Shared(false)

    final class Pair {
        var client: TCPConnection
        var server: TCPConnection?
        /// Client bytes that arrived before the upstream connection was up.
        var early: [[UInt8]] = []
        init(client: TCPConnection) { self.client = client }
    }

    struct State {
        var listener: TCPListener?
        var upstreamPort: Int
        var pairs: [ObjectIdentifier: Pair] = [:]
        var swallowDownstream = false
        var accepted = 0
    }

    init(upstreamPort: Int) async throws {
        thread = try EventLoopThread()
        state = LoopConfined(State(upstreamPort: upstreamPort))
        let port = Shared<Int?>(nil)
        let loop = thread.loop
        let state = self.state
        let blackholed = self.blackholed
        thread.loop.execute {
            let listener = try! TCPListener(loop: loop, address: SocketAddress(host: "127.0.0.1", port: 0))
            state.value.listener = listener
            listener.onConnection = { client in
                ChaosProxy.accept(client, loop: loop, state: state, blackholed: blackholed)
            }
            port.set(listener.port)
        }
        guard await eventually({ port.get() != nil }), let bound = port.get() else {
            throw UVError(code: -1, operation: "proxy did not start")
        }
        self.port = bound
    }

    private static func accept(
        _ client: TCPConnection, loop: EventLoop, state: LoopConfined<State>, blackholed: Shared<Bool>
    ) {
        let pair = Pair(client: client)
        let key = ObjectIdentifier(client)
        state.value.pairs[key] = pair
        state.value.accepted += 1
        client.onRead = { bytes in
            if blackholed.get() { return }
            let chunk = Array(bytes)
            if let server = pair.server { _ = try? server.write([chunk]) } else { pair.early.append(chunk) }
        }
        // Blackholed, a close does not cross either: each side must find out by itself.
        client.onEnd = { [weak client] _ in if !blackholed.get() { client?.close() } }
        client.onClose = {
            if !blackholed.get() { pair.server?.close() }
            state.value.pairs[key] = nil
        }
        try? client.startReading()
        TCPConnection.connect(loop: loop, to: try! SocketAddress(host: "127.0.0.1", port: state.value.upstreamPort)) {
            result in
            guard case .success(let server) = result, !client.isClosing else {
                if case .success(let server) = result { server.close() }
                client.close()
                return
            }
            pair.server = server
            for chunk in pair.early { _ = try? server.write([chunk]) }
            pair.early = []
            server.onRead = { bytes in
                if state.value.swallowDownstream || blackholed.get() { return }
                _ = try? client.write([Array(bytes)])
            }
            server.onEnd = { [weak server] _ in if !blackholed.get() { server?.close() } }
            server.onClose = { if !blackholed.get() { client.close() } }
            try? server.startReading()
        }
    }

    /// Closes every proxied connection (both sides), as a network failure would.
    func cutAll() async {
        await run { state in
            for pair in state.pairs.values {
                pair.client.close()
                pair.server?.close()
            }
        }
    }

    /// While true, bytes from the server are dropped (the client hears nothing).
    func swallowDownstream(_ on: Bool) async { await run { $0.swallowDownstream = on } }

    /// While true, nothing passes in either direction — bytes nor closes — on the
    /// connections there are and on new ones.
    func blackhole(_ on: Bool) async {
        let flag = blackholed
        await run { _ in flag.set(on) }
    }

    /// New connections go to `port` from now on.
    func redirect(to port: Int) async { await run { $0.upstreamPort = port } }

    /// Connections accepted so far.
    func acceptedCount() async -> Int { await run { $0.accepted } }

    private func run<T: Sendable>(_ body: @escaping @Sendable (inout State) -> T) async -> T {
        let result = Shared<T?>(nil)
        let state = self.state
        thread.loop.execute { result.set(body(&state.value)) }
        _ = await eventually { result.get() != nil }
        return result.get()!
    }

    func stop() {
        thread.loop.execute { [state] in
            state.value.listener?.close()
            for pair in state.value.pairs.values {
                pair.client.close()
                pair.server?.close()
            }
        }
        thread.shutdown(timeout: 5)
    }
}
