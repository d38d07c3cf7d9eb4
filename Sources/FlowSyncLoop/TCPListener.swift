import CLibUV

/// A listening TCP socket; accepted connections are handed to ``onConnection``.
public final class TCPListener: LoopHandle {
    private let tcp: UnsafeMutablePointer<uv_tcp_t>
    /// Called on the loop thread for each accepted connection (not yet reading).
    public var onConnection: ((TCPConnection) -> Void)?
    /// Called when accepting fails (e.g. `EMFILE`: out of file descriptors).
    public var onAcceptError: ((UVError) -> Void)?

    private init(loop: EventLoop) {
        let tcp = UnsafeMutablePointer<uv_tcp_t>.allocate(capacity: 1)
        uv_tcp_init(loop.raw, tcp)
        self.tcp = tcp
        super.init(loop: loop, handle: CLibUV_tcp_as_handle(tcp), deallocate: { tcp.deallocate() })
    }

    /// Binds `address` and listens. Port 0 lets the OS choose (see ``port``).
    public convenience init(loop: EventLoop, address: SocketAddress, backlog: Int32 = 511) throws(UVError) {
        self.init(loop: loop)
        do {
            try UVError.check(address.withSockaddr { uv_tcp_bind(tcp, $0, 0) }, "uv_tcp_bind \(address)")
            try listen(backlog: backlog)
        } catch {
            close()
            throw error
        }
    }

    /// Adopts an already-listening socket, e.g. fd 3 handed over by systemd socket
    /// activation (`LISTEN_FDS`), so a restart drops no connection attempts.
    public convenience init(loop: EventLoop, adoptingDescriptor fd: Int32, backlog: Int32 = 511) throws(UVError) {
        self.init(loop: loop)
        do {
            try UVError.check(uv_tcp_open(tcp, uv_os_sock_t(fd)), "uv_tcp_open fd \(fd)")
            try listen(backlog: backlog)
        } catch {
            close()
            throw error
        }
    }

    private func listen(backlog: Int32) throws(UVError) {
        let result = uv_listen(CLibUV_tcp_as_stream(tcp), backlog) { server, status in
            guard let server else { return }
            let me = Unmanaged<TCPListener>.fromOpaque(server.pointee.data).takeUnretainedValue()
            guard status >= 0 else {
                me.onAcceptError?(UVError(code: status, operation: "listen"))
                return
            }
            let connection = TCPConnection(loop: me.loop)
            let accepted = uv_accept(server, connection.stream)
            guard accepted == 0 else {
                connection.close()
                me.onAcceptError?(UVError(code: accepted, operation: "uv_accept"))
                return
            }
            connection.setNoDelay()
            if let onConnection = me.onConnection { onConnection(connection) } else { connection.close() }
        }
        try UVError.check(result, "uv_listen")
    }

    /// The bound port (the OS's choice when bound to port 0).
    public var port: Int {
        var storage = sockaddr_storage()
        var length = Int32(MemoryLayout<sockaddr_storage>.size)
        let ok = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { uv_tcp_getsockname(tcp, $0, &length) }
        }
        guard ok == 0, let (_, port) = SocketAddress.describe(storage) else { return 0 }
        return port
    }

    override func willClose() {
        onConnection = nil
        onAcceptError = nil
    }
}
