// Linux only: FlowSyncLoop (libuv) and FlowSyncTLS (OpenSSL) are dependencies of
// FlowSyncClient on Linux alone (Package.swift), so on Apple platforms this whole file
// compiles to nothing and ``NetworkTransport`` is the default instead.
#if canImport(FlowSyncLoop) && canImport(FlowSyncTLS)
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import FlowSyncLoop
import FlowSyncTLS

/// The default transport on Linux: TCP on a libuv loop that runs on its own thread,
/// with TLS (OpenSSL through memory BIOs, on that loop) when ``TLSPolicy/usesTLS(host:)``
/// says so: by default for every host that is not loopback. The chain is judged by
/// ``TLSPolicy/accepts(_:)`` — the system trust store (and
/// ``TLSPolicy/additionalTrustedRoots``) for the name, pins, the app's hook — before
/// `.connected` is reported, so nothing of the session (its Hello, its token) is sent
/// to a server the policy refused. At least TLS 1.2, ALPN `flowsync`.
///
/// Each client has its own loop thread, so an app's main thread never blocks on the
/// network and the client's timers keep running whatever the app does.
public final class LibUVTransport: ClientTransport {
    private let thread: EventLoopThread
    let state: LoopOwned
    let tls: TLSPolicy

    /// State touched only on the loop thread.
    final class LoopOwned: @unchecked Sendable {
        var connection: TCPConnection?
        /// The connection's TLS channel, when it speaks TLS.
        var channel: TLSChannel?
        /// Why the connection's TLS ended, for the `.closed` event.
        var tlsFailure: TLSError?
        /// Bumped per connection, so callbacks of an old one are ignored.
        var generation = 0
        /// Made at the first TLS connection from ``tls`` and kept (reading the trust
        /// store and the client identity once).
        var context: TLSContext?
        /// The channels' buffers (one per transport: one loop thread).
        lazy var scratch = TLSScratch()
    }

    /// Starts the loop thread. `tls` decides, per connection's host, whether and how
    /// TLS is spoken (default ``TLSPolicy/automatic``: TLS unless the host is loopback).
    public init(tls: TLSPolicy = .automatic) throws(UVError) {
        thread = try EventLoopThread()
        state = LoopOwned()
        self.tls = tls
    }

    public func connect(host: String, port: Int, handler: @escaping @Sendable (TransportEvent) -> Void) {
        let loop = thread.loop
        let state = self.state
        let tls = self.tls
        loop.execute {
            state.connection?.close()
            state.connection = nil
            state.channel = nil
            state.tlsFailure = nil
            state.generation += 1
            let generation = state.generation
            let address: SocketAddress
            do {
                address = try Self.resolve(host: host, port: port)
            } catch {
                handler(.closed(reason: "cannot resolve \(host): \(error)"))
                return
            }
            // The context before the socket: a client identity that does not load fails
            // the connection without one byte sent.
            var context: TLSContext?
            if tls.usesTLS(host: host) {
                do {
                    context = try Self.context(for: tls, in: state)
                } catch {
                    handler(.closed(reason: "\(error)"))
                    return
                }
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
                        state.channel = nil
                        handler(.closed(reason: state.tlsFailure.map { "\($0)" } ?? "connection closed"))
                    }
                    if let context {
                        // `.connected` comes from the channel, once the policy accepted the peer.
                        Self.startTLS(context, policy: tls, host: host, on: tcp, state: state, handler: handler)
                        return
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
            if let channel = state.channel {
                var io = TLSIO(tcp: tcp, state: state, handler: nil, policy: nil, serverName: "")
                channel.send(chunks, &io)
                channel.releaseIdleBuffers()
                return
            }
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
            // Keep the generation: the close callback reports `.closed` for it. Under TLS a
            // close_notify goes first (the channel's end shuts the socket down after it).
            if let channel = state.channel, let tcp = state.connection {
                var io = TLSIO(tcp: tcp, state: state, handler: nil, policy: nil, serverName: "")
                channel.close(&io)
                return
            }
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
            state.channel = nil
        }
        thread.shutdown(timeout: 5)
    }

    /// A numeric address for `host`: literal IPs as they are, names through the system
    /// resolver (blocking the loop thread briefly; it runs only when connecting).
    static func resolve(host: String, port: Int) throws -> SocketAddress {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        if let literal = try? SocketAddress(host: bare, port: port) { return literal }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(bare, nil, &hints, &result)
        guard rc == 0, let first = result else {
            throw UVError(code: -1, operation: "getaddrinfo(\(host)): \(String(cString: gai_strerror(rc)))")
        }
        defer { freeaddrinfo(result) }
        var buffer = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        guard
            getnameinfo(
                first.pointee.ai_addr, first.pointee.ai_addrlen, &buffer, socklen_t(buffer.count), nil, 0,
                NI_NUMERICHOST) == 0
        else {
            throw UVError(code: -1, operation: "getnameinfo(\(host))")
        }
        let numeric = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        return try SocketAddress(host: numeric, port: port)
    }
}
#endif
