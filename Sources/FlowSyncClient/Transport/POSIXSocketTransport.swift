import Dispatch

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Android)
import Android
#endif

/// Plain TCP on a non-blocking BSD socket driven by Dispatch sources: no libuv, no
/// Network.framework. It builds on every platform the SDK supports and runs the same
/// code on Linux and Darwin, so the tests exercise, on Linux, a transport whose shape
/// (one serial queue, Dispatch timers, no loop thread) is the Apple one's. It is the
/// default only where neither Network.framework nor libuv exists (e.g. Android). No TLS:
/// under ``TLSPolicy`` it is for loopback or a local tunnel.
///
/// `SIGPIPE` is handled per socket, never for the process: `MSG_NOSIGNAL` on each
/// `send` (Linux), `SO_NOSIGPIPE` on the socket (Darwin). A write to a peer that has
/// gone fails with `EPIPE` and closes the connection.
///
/// Threading: all state lives on one serial queue; events are reported on it, in order.
public final class POSIXSocketTransport: ClientTransport, @unchecked Sendable {
    private let queue = DispatchQueue(label: "FlowSyncClient.POSIXSocketTransport")
    private let onQueue = DispatchSpecificKey<Bool>()
    // Touched only on `queue`.
    private var connection: Connection?
    private var isShutDown = false

    /// One socket and its two Dispatch sources. The descriptor is closed only after
    /// both sources are cancelled (Dispatch's rule: a source must not outlive its fd).
    private final class Connection {
        let fd: Int32
        let handler: @Sendable (TransportEvent) -> Void
        var read: DispatchSourceRead?
        var write: DispatchSourceWrite?
        var writeArmed = false
        var connected = false
        var outbound: [UInt8] = []
        var outboundStart = 0
        var sourcesLeft = 2

        init(fd: Int32, handler: @escaping @Sendable (TransportEvent) -> Void) {
            self.fd = fd
            self.handler = handler
        }
    }

    /// Creates the transport (no thread: its work runs on a Dispatch queue).
    public init() {
        queue.setSpecific(key: onQueue, value: true)
    }

    public func connect(host: String, port: Int, handler: @escaping @Sendable (TransportEvent) -> Void) {
        queue.async { [self] in
            guard !isShutDown else { return }
            if let old = connection { drop(old) }
            let fd: Int32
            do throws(SocketError) {
                fd = try Self.startConnecting(host: host, port: port)
            } catch {
                handler(.closed(reason: "connect to \(host):\(port): \(error.message)"))
                return
            }
            let connection = Connection(fd: fd, handler: handler)
            self.connection = connection
            let read = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
            let write = DispatchSource.makeWriteSource(fileDescriptor: fd, queue: queue)
            connection.read = read
            connection.write = write
            let release: () -> Void = { [weak self] in self?.sourceCancelled(connection) }
            read.setCancelHandler(handler: release)
            write.setCancelHandler(handler: release)
            read.setEventHandler { [weak self] in self?.readable(connection) }
            write.setEventHandler { [weak self] in self?.writable(connection) }
            // The non-blocking connect completes when the socket turns writable.
            connection.writeArmed = true
            write.resume()
        }
    }

    public func send(_ chunks: [[UInt8]]) {
        queue.async { [self] in
            guard let connection, connection.connected else { return }
            for chunk in chunks { connection.outbound.append(contentsOf: chunk) }
            flush(connection)
        }
    }

    public func disconnect() {
        queue.async { [self] in
            if let connection { finish(connection, reason: "disconnected") }
        }
    }

    public func schedule(after milliseconds: UInt64, _ work: @escaping @Sendable () -> Void) {
        let delay = DispatchTimeInterval.milliseconds(Int(min(milliseconds, UInt64(Int32.max))))
        queue.asyncAfter(deadline: .now() + delay) { [weak self] in
            guard let self, !self.isShutDown else { return }
            work()
        }
    }

    public func shutdown() {
        let stop: () -> Void = { [self] in
            isShutDown = true
            if let connection { drop(connection) }
        }
        if DispatchQueue.getSpecific(key: onQueue) == true { stop() } else { queue.sync(execute: stop) }
    }

    // MARK: On `queue`

    private func writable(_ connection: Connection) {
        guard self.connection === connection else { return }
        if !connection.connected {
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(connection.fd, SOL_SOCKET, SO_ERROR, &error, &length)
            guard error == 0 else {
                finish(connection, reason: "connect: \(String(cString: strerror(error)))")
                return
            }
            connection.connected = true
            connection.read?.resume()
            connection.handler(.connected)
        }
        flush(connection)
    }

    private func readable(_ connection: Connection) {
        guard self.connection === connection else { return }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while self.connection === connection {
            let n = buffer.withUnsafeMutableBytes { recv(connection.fd, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                connection.handler(.received(Array(buffer[0..<n])))
            } else if n == 0 {
                finish(connection, reason: "connection closed by the server")
            } else {
                let code = errno
                if code == EAGAIN || code == EWOULDBLOCK { return }
                if code == EINTR { continue }
                finish(connection, reason: "recv: \(String(cString: strerror(code)))")
            }
        }
    }

    /// Writes what it can; arms the write source only while bytes remain.
    private func flush(_ connection: Connection) {
        while connection.outboundStart < connection.outbound.count {
            let n = connection.outbound.withUnsafeBytes { bytes in
                Self.sendNoSignal(
                    connection.fd, bytes.baseAddress! + connection.outboundStart,
                    connection.outbound.count - connection.outboundStart)
            }
            if n >= 0 {
                connection.outboundStart += n
                continue
            }
            let code = errno
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK {
                if !connection.writeArmed {
                    connection.writeArmed = true
                    connection.write?.resume()
                }
                return
            }
            finish(connection, reason: "send: \(String(cString: strerror(code)))")  // EPIPE, not SIGPIPE
            return
        }
        connection.outbound.removeAll(keepingCapacity: true)
        connection.outboundStart = 0
        if connection.writeArmed {
            connection.writeArmed = false
            connection.write?.suspend()
        }
    }

    /// Reports `.closed` once and releases the socket.
    private func finish(_ connection: Connection, reason: String) {
        guard self.connection === connection else { return }
        drop(connection)
        connection.handler(.closed(reason: reason))
    }

    /// Forgets the connection and cancels its sources (the fd closes after both).
    private func drop(_ connection: Connection) {
        if self.connection === connection { self.connection = nil }
        // A suspended source must be resumed before it is cancelled (or its cancel
        // handler never runs); a never-resumed one counts as suspended.
        if !connection.writeArmed { connection.write?.resume() }
        if !connection.connected { connection.read?.resume() }
        connection.connected = true
        connection.writeArmed = true
        connection.read?.cancel()
        connection.write?.cancel()
    }

    private func sourceCancelled(_ connection: Connection) {
        connection.sourcesLeft -= 1
        if connection.sourcesLeft == 0 {
            close(connection.fd)
            connection.read = nil
            connection.write = nil
        }
    }

    // MARK: Sockets

    struct SocketError: Error { let message: String }

    static func sendNoSignal(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
        #if canImport(Darwin)
        return Darwin.send(fd, bytes, count, 0)  // SO_NOSIGPIPE is set on the socket
        #elseif canImport(Glibc)
        return Glibc.send(fd, bytes, count, Int32(MSG_NOSIGNAL))
        #elseif canImport(Musl)
        return Musl.send(fd, bytes, count, Int32(MSG_NOSIGNAL))
        #else
        return Android.send(fd, bytes, count, Int32(MSG_NOSIGNAL))
        #endif
    }

    /// A non-blocking socket with its connect under way (or done) to the first address
    /// of `host`. Names go through the system resolver (briefly blocking the queue).
    private static func startConnecting(host: String, port: Int) throws(SocketError) -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        // Darwin first, like the imports at the top: `make apple-check` compiles this file
        // where both Darwin (a stand-in) and Glibc can be imported.
        #if canImport(Darwin)
        hints.ai_socktype = SOCK_STREAM
        #elseif canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)  // an enum in Glibc only
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        var result: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &result)
        guard rc == 0, let first = result else {
            throw SocketError(message: "getaddrinfo: \(String(cString: gai_strerror(rc)))")
        }
        defer { freeaddrinfo(result) }
        let fd = socket(first.pointee.ai_family, first.pointee.ai_socktype, first.pointee.ai_protocol)
        guard fd >= 0 else { throw SocketError(message: "socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        #if canImport(Darwin)
        setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) | O_NONBLOCK)
        if connectSocket(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) != 0 && errno != EINPROGRESS {
            let message = String(cString: strerror(errno))
            close(fd)
            throw SocketError(message: "connect: \(message)")
        }
        return fd
    }

    private static func connectSocket(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Int32 {
        #if canImport(Darwin)
        return Darwin.connect(fd, address, length)
        #elseif canImport(Glibc)
        return Glibc.connect(fd, address, length)
        #elseif canImport(Musl)
        return Musl.connect(fd, address, length)
        #else
        return Android.connect(fd, address, length)
        #endif
    }
}
