// Linux only: FlowSyncLoop (libuv) is a dependency of FlowSyncClient on Linux alone
// (Package.swift), so on Apple platforms this whole file compiles to nothing and
// ``NetworkTransport`` is the default instead.
#if canImport(FlowSyncLoop)
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import FlowSyncLoop

/// The default transport on Linux: TCP on a libuv loop that runs on its own thread.
/// It has no TLS (``TLSPolicy``: a non-loopback host needs a local TLS tunnel, see
/// docs/SDK.md, "Transports and TLS").
///
/// Each client has its own loop thread, so an app's main thread never blocks on the
/// network and the client's timers keep running whatever the app does.
public final class LibUVTransport: ClientTransport {
    private let thread: EventLoopThread
    private let state: LoopOwned

    /// State touched only on the loop thread.
    private final class LoopOwned: @unchecked Sendable {
        var connection: TCPConnection?
        /// Bumped per connection, so callbacks of an old one are ignored.
        var generation = 0
    }

    /// Starts the loop thread.
    public init() throws(UVError) {
        thread = try EventLoopThread()
        state = LoopOwned()
    }

    public func connect(host: String, port: Int, handler: @escaping @Sendable (TransportEvent) -> Void) {
        let loop = thread.loop
        let state = self.state
        loop.execute {
            state.connection?.close()
            state.connection = nil
            state.generation += 1
            let generation = state.generation
            let address: SocketAddress
            do {
                address = try Self.resolve(host: host, port: port)
            } catch {
                handler(.closed(reason: "cannot resolve \(host): \(error)"))
                return
            }
            TCPConnection.connect(loop: loop, to: address) { result in
                guard state.generation == generation else {
                    if case .success(let stale) = result { stale.close() }
                    return
                }
                switch result {
                case .failure(let error):
                    handler(.closed(reason: "connect to \(address): \(error)"))
                case .success(let tcp):
                    state.connection = tcp
                    tcp.onRead = { bytes in handler(.received(Array(bytes))) }
                    tcp.onEnd = { [weak tcp] error in
                        // EOF or a read error: close; onClose reports it once.
                        _ = error
                        tcp?.close()
                    }
                    tcp.onClose = {
                        guard state.generation == generation else { return }
                        state.connection = nil
                        handler(.closed(reason: "connection closed"))
                    }
                    do {
                        try tcp.startReading()
                    } catch {
                        tcp.close()
                        return
                    }
                    handler(.connected)
                }
            }
        }
    }

    public func send(_ chunks: [[UInt8]]) {
        let state = self.state
        thread.loop.execute {
            guard let tcp = state.connection else { return }
            do {
                try tcp.write(chunks)
            } catch {
                tcp.close()
            }
        }
    }

    public func disconnect() {
        let state = self.state
        thread.loop.execute {
            // Keep the generation: the close callback reports `.closed` for it.
            state.connection?.close()
        }
    }

    public func schedule(after milliseconds: UInt64, _ work: @escaping @Sendable () -> Void) {
        let loop = thread.loop
        loop.execute {
            let timer = LoopTimer(loop: loop)
            timer.start(after: milliseconds) { [weak timer] in
                timer?.close()
                work()
            }
        }
    }

    public func shutdown() {
        let state = self.state
        thread.loop.execute {
            state.generation += 1
            state.connection?.close()
            state.connection = nil
        }
        thread.shutdown(timeout: 5)
    }

    /// A numeric address for `host`: literal IPs as they are, names through the system
    /// resolver (blocking the loop thread briefly; it runs only when connecting).
    static func resolve(host: String, port: Int) throws -> SocketAddress {
        if let literal = try? SocketAddress(host: host, port: port) { return literal }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, nil, &hints, &result)
        guard rc == 0, let first = result else {
            throw UVError(code: -1, operation: "getaddrinfo(\(host)): \(String(cString: gai_strerror(rc)))")
        }
        defer { freeaddrinfo(result) }
        var buffer = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        guard getnameinfo(first.pointee.ai_addr, first.pointee.ai_addrlen, &buffer, socklen_t(buffer.count), nil, 0, NI_NUMERICHOST) == 0 else {
            throw UVError(code: -1, operation: "getnameinfo(\(host))")
        }
        let numeric = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        return try SocketAddress(host: numeric, port: port)
    }
}
#endif
