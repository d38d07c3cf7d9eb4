import CLibUV

#if canImport(Glibc)
import Glibc
#endif

/// A TCP stream on the loop: reads into its loop's one read buffer
/// (``EventLoop/readBuffer``), writes with back-pressure accounting.
///
/// Write path (why it looks like this):
/// - `uv_try_write` first: on an idle socket the kernel takes the bytes at once and no
///   request, copy or callback is needed — the common case for fan-out.
/// - Only the remainder is copied to the heap and queued with `uv_write`; the copy
///   lives until the write callback (libuv keeps the pointer, not the bytes).
/// - `uv_write` never pushes back, so ``queuedBytes`` counts what libuv still holds;
///   the server compares it with its watermarks.
/// - Several frames for one connection go out in one call (``write(_:)`` takes a list):
///   on this machine fan-out cost is the number of write calls, not bytes.
/// - Order is kept: while anything is queued, new bytes are queued behind it, never
///   tried directly.
public final class TCPConnection: LoopHandle {
    let tcp: UnsafeMutablePointer<uv_tcp_t>
    var stream: UnsafeMutablePointer<uv_stream_t> { CLibUV_tcp_as_stream(tcp) }
    /// A Unix-domain stream accepted by a ``UnixListener``: the handle is a `uv_pipe_t`
    /// (in memory large enough for either); TCP-only calls are skipped.
    public let isUnixSocket: Bool

    /// Bytes handed to libuv and not yet written to the socket.
    public private(set) var queuedBytes = 0
    /// Called with the bytes read; the buffer is valid only during the call.
    public var onRead: ((UnsafeRawBufferPointer) -> Void)?
    /// Called once when the peer closed (`nil`) or the stream failed.
    public var onEnd: ((UVError?) -> Void)?
    /// Called after queued bytes were written (``queuedBytes`` already lowered).
    public var onDrain: (() -> Void)?
    private var ended = false

    init(loop: EventLoop, unixSocket: Bool = false) {
        // One allocation that fits a uv_tcp_t or a uv_pipe_t: both begin with the
        // uv_stream_t fields, which is all the read/write paths use.
        let raw = UnsafeMutableRawPointer.allocate(
            byteCount: max(MemoryLayout<uv_tcp_t>.size, MemoryLayout<uv_pipe_t>.size), alignment: 16)
        let tcp = raw.bindMemory(to: uv_tcp_t.self, capacity: 1)
        if unixSocket {
            uv_pipe_init(loop.raw, UnsafeMutablePointer<uv_pipe_t>(OpaquePointer(raw)), 0)
        } else {
            uv_tcp_init(loop.raw, tcp)
        }
        self.isUnixSocket = unixSocket
        self.tcp = tcp
        super.init(loop: loop, handle: CLibUV_tcp_as_handle(tcp), deallocate: { raw.deallocate() })
    }

    /// Connects to `address`; `completion` runs on the loop thread with the connection
    /// or the error. Call on the loop thread.
    ///
    /// `source`, when given, is bound first (port 0: any free port): a client that needs
    /// more connections to one address than one source address has ephemeral ports
    /// (the load tester) spreads them over 127.0.0.2, 127.0.0.3, ….
    ///
    /// `receiveBufferBytes` > 0 sets `SO_RCVBUF` before the connection is made, so the
    /// window the handshake announces is already the small one (set afterwards, Linux
    /// keeps the window scale of the large buffer and a client reads at a crawl): a
    /// constrained client, for the slow-consumer tests. The socket is bound to `source`
    /// (or the loopback address, port 0) first, since libuv creates it only then.
    public static func connect(
        loop: EventLoop, to address: SocketAddress, from source: SocketAddress? = nil, receiveBufferBytes: Int = 0,
        _ completion: @escaping (Result<TCPConnection, UVError>) -> Void
    ) {
        let connection = TCPConnection(loop: loop)
        if let bindTo = source ?? (receiveBufferBytes > 0 ? try? SocketAddress(host: "127.0.0.1", port: 0) : nil) {
            let bound = bindTo.withSockaddr { uv_tcp_bind(connection.tcp, $0, 0) }
            if bound < 0 {
                connection.close()
                completion(.failure(UVError(code: bound, operation: "uv_tcp_bind")))
                return
            }
        }
        if receiveBufferBytes > 0 { connection.setReceiveBufferSize(receiveBufferBytes) }
        final class Context {
            let connection: TCPConnection
            let completion: (Result<TCPConnection, UVError>) -> Void
            init(_ c: TCPConnection, _ k: @escaping (Result<TCPConnection, UVError>) -> Void) {
                connection = c
                completion = k
            }
        }
        let request = UnsafeMutablePointer<uv_connect_t>.allocate(capacity: 1)
        request.pointee.data = Unmanaged.passRetained(Context(connection, completion)).toOpaque()
        let result = address.withSockaddr {
            uv_tcp_connect(request, connection.tcp, $0) { request, status in
                guard let request else { return }
                let context = Unmanaged<Context>.fromOpaque(request.pointee.data).takeRetainedValue()
                request.deallocate()
                if status < 0 {
                    context.connection.close()
                    context.completion(.failure(UVError(code: status, operation: "uv_tcp_connect")))
                } else {
                    context.connection.setNoDelay()
                    context.completion(.success(context.connection))
                }
            }
        }
        if result < 0 {
            Unmanaged<Context>.fromOpaque(request.pointee.data).release()
            request.deallocate()
            connection.close()
            completion(.failure(UVError(code: result, operation: "uv_tcp_connect")))
        }
    }

    /// Disables Nagle: frames are already batched per loop turn, so delaying them only
    /// adds latency.
    func setNoDelay() { if !isUnixSocket { uv_tcp_nodelay(tcp, 1) } }

    /// Turns TCP keepalive on (first probe after `seconds` idle) or off (0). Does nothing
    /// on a Unix-domain socket.
    public func setKeepAlive(seconds: Int) {
        guard !isUnixSocket else { return }
        uv_tcp_keepalive(tcp, seconds > 0 ? 1 : 0, UInt32(max(seconds, 1)))
    }

    /// Sets the kernel's receive buffer (`SO_RCVBUF`, which also turns Linux's receive
    /// autotuning off for this socket). The load tester gives its slow consumers a small
    /// one, like a constrained client, so a pause reaches the server's back-pressure
    /// instead of vanishing into tens of megabytes of loopback buffers.
    public func setReceiveBufferSize(_ bytes: Int) {
        var value = Int32(clamping: bytes)
        _ = uv_recv_buffer_size(handle, &value)
    }

    /// The socket's file descriptor (`uv_fileno`), or -1 when it has none (closed). For
    /// code that writes to it outside libuv (the io_uring experiment of
    /// flowsync-server-bench); reading or writing it while libuv also does breaks both.
    public var fileDescriptor: Int32 {
        var fd = uv_os_fd_t(-1)
        return uv_fileno(handle, &fd) == 0 ? Int32(fd) : -1
    }

    /// The peer's address, if known.
    public var peer: String {
        if isUnixSocket { return "unix" }
        var storage = sockaddr_storage()
        var length = Int32(MemoryLayout<sockaddr_storage>.size)
        let ok = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { uv_tcp_getpeername(tcp, $0, &length) }
        }
        guard ok == 0, let (host, port) = SocketAddress.describe(storage) else { return "?" }
        return host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// Starts delivering reads to ``onRead``.
    public func startReading() throws(UVError) {
        let result = uv_read_start(
            stream,
            { handle, _, buf in
                guard let handle, let buf else { return }
                let me = Unmanaged<TCPConnection>.fromOpaque(handle.pointee.data).takeUnretainedValue()
                // The loop's buffer: free here, since reads on one loop never overlap
                // (EventLoop.readBuffer says why).
                let buffer = me.loop.readBuffer
                buf.pointee = uv_buf_init(buffer.baseAddress!.assumingMemoryBound(to: CChar.self), UInt32(buffer.count))
            },
            { stream, nread, _ in
                guard let stream else { return }
                let me = Unmanaged<TCPConnection>.fromOpaque(stream.pointee.data).takeUnretainedValue()
                if nread > 0 {
                    me.onRead?(UnsafeRawBufferPointer(rebasing: me.loop.readBuffer[0..<nread]))
                } else if nread < 0 {
                    me.end(nread == Int(UV_EOF.rawValue) ? nil : UVError(code: Int32(nread), operation: "read"))
                }
            })
        try UVError.check(result, "uv_read_start")
    }

    /// Stops reading (flow control for a peer that sends faster than it is served).
    public func stopReading() { uv_read_stop(stream) }

    private func end(_ error: UVError?) {
        guard !ended else { return }
        ended = true
        uv_read_stop(stream)
        let callback = onEnd
        onEnd = nil
        callback?(error)
    }

    /// Writes `chunks` in order, as one write call where possible.
    ///
    /// - Returns: The bytes left queued after this call (0 when the kernel took all).
    /// - Throws: A ``UVError`` when the stream is broken; the caller should close.
    @discardableResult
    public func write(_ chunks: [[UInt8]]) throws(UVError) -> Int {
        try write(chunks[...], skipping: 0)
    }

    /// Writes `chunks` in order without their first `skipping` bytes, as one write call
    /// where possible: the rest of a send that another path (the daemon's io_uring
    /// flush) began, handed over without copying the frames.
    ///
    /// - Returns: The bytes left queued after this call (0 when the kernel took all).
    /// - Throws: A ``UVError`` when the stream is broken; the caller should close.
    @discardableResult
    public func write(_ chunks: ArraySlice<[UInt8]>, skipping: Int) throws(UVError) -> Int {
        guard !isClosing else { throw UVError(code: Int32(UV_ECANCELED.rawValue), operation: "write after close") }
        let total = chunks.reduce(0) { $0 + $1.count } - skipping
        precondition(skipping >= 0 && total >= 0, "write: skipping \(skipping) bytes of fewer")
        guard total > 0 else { return queuedBytes }
        var written = 0
        if queuedBytes == 0 {
            written = Int(tryWrite(chunks, skipping: skipping))
            if written < 0 {
                if written != Int(UV_EAGAIN.rawValue) { throw UVError(code: Int32(written), operation: "uv_try_write") }
                written = 0
            }
        }
        let remainder = total - written
        guard remainder > 0 else { return queuedBytes }

        var skip = written + skipping
        try queueCopy(of: remainder) { payload in
            var offset = 0
            for chunk in chunks {
                if skip >= chunk.count {
                    skip -= chunk.count
                    continue
                }
                chunk.withUnsafeBytes { bytes in
                    let part = UnsafeRawBufferPointer(rebasing: bytes[skip...])
                    (payload + offset).copyMemory(from: part.baseAddress!, byteCount: part.count)
                    offset += part.count
                }
                skip = 0
            }
        }
        return queuedBytes
    }

    /// Writes `bytes` in order behind what is queued (`uv_try_write` first when nothing
    /// is); what the kernel does not take is copied and queued, so `bytes` need only
    /// live during the call. The TLS channel's ciphertext goes out this way: it lives in
    /// a scratch buffer reused for the next connection.
    ///
    /// - Returns: The bytes left queued after this call (0 when the kernel took all).
    /// - Throws: A ``UVError`` when the stream is broken; the caller should close.
    @discardableResult
    public func write(bytes: UnsafeRawBufferPointer) throws(UVError) -> Int {
        guard !isClosing else { throw UVError(code: Int32(UV_ECANCELED.rawValue), operation: "write after close") }
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return queuedBytes }
        var written = 0
        if queuedBytes == 0 {
            var buf = uv_buf_init(
                UnsafeMutableRawPointer(mutating: base).assumingMemoryBound(to: CChar.self), UInt32(bytes.count))
            written = Int(uv_try_write(stream, &buf, 1))
            if written < 0 {
                if written != Int(UV_EAGAIN.rawValue) { throw UVError(code: Int32(written), operation: "uv_try_write") }
                written = 0
            }
        }
        let remainder = bytes.count - written
        guard remainder > 0 else { return queuedBytes }
        try queueCopy(of: remainder) { payload in payload.copyMemory(from: base + written, byteCount: remainder) }
        return queuedBytes
    }

    /// Queues `count` bytes with `uv_write`, copied by `fill` into one allocation that
    /// also holds the request; it lives until the write callback.
    private func queueCopy(of count: Int, fill: (UnsafeMutableRawPointer) -> Void) throws(UVError) {
        // One allocation: the request header followed by the remaining bytes.
        let headerSize = (MemoryLayout<uv_write_t>.size + 15) & ~15
        let block = UnsafeMutableRawPointer.allocate(byteCount: headerSize + count, alignment: 16)
        let request = block.bindMemory(to: uv_write_t.self, capacity: 1)
        let payload = block + headerSize
        fill(payload)
        var buf = uv_buf_init(payload.assumingMemoryBound(to: CChar.self), UInt32(count))
        request.pointee.data = UnsafeMutableRawPointer(bitPattern: count)
        let result = uv_write(request, stream, &buf, 1) { request, status in
            guard let request else { return }
            let bytes = Int(bitPattern: request.pointee.data)
            let stream = request.pointee.handle!
            UnsafeMutableRawPointer(request).deallocate()
            let me = Unmanaged<TCPConnection>.fromOpaque(stream.pointee.data).takeUnretainedValue()
            me.queuedBytes -= bytes
            if status < 0 {
                if status != Int32(UV_ECANCELED.rawValue) { me.end(UVError(code: status, operation: "uv_write")) }
            } else if me.queuedBytes == 0 {
                me.onDrain?()
            }
        }
        if result < 0 {
            block.deallocate()
            throw UVError(code: result, operation: "uv_write")
        }
        queuedBytes += count
    }

    private func tryWrite(_ chunks: ArraySlice<[UInt8]>, skipping: Int) -> Int32 {
        // Build the iovec from the arrays' storage; the pointers are used only inside
        // this call, while the arrays are alive and unmutated.
        func gather(
            _ index: Int, _ skip: Int, _ bufs: UnsafeMutableBufferPointer<uv_buf_t>, _ count: inout Int
        ) -> Int32 {
            if index == chunks.endIndex {
                return uv_try_write(stream, bufs.baseAddress, UInt32(count))
            }
            return chunks[index].withUnsafeBytes { bytes in
                // The first `skip` bytes were sent already (by another path).
                if bytes.count > skip {
                    bufs[count] = uv_buf_init(
                        UnsafeMutableRawPointer(mutating: bytes.baseAddress! + skip).assumingMemoryBound(
                            to: CChar.self), UInt32(bytes.count - skip))
                    count += 1
                }
                return gather(index + 1, max(0, skip - bytes.count), bufs, &count)
            }
        }
        // Deep recursion for thousands of frames is pointless; gather at most 64 and
        // queue the rest (they go out in the same uv_write below).
        if chunks.count > 64 {
            var joined: [UInt8] = []
            joined.reserveCapacity(chunks.reduce(0) { $0 + $1.count })
            for chunk in chunks { joined.append(contentsOf: chunk) }
            return joined.withUnsafeBytes { bytes in
                var buf = uv_buf_init(
                    UnsafeMutableRawPointer(mutating: bytes.baseAddress! + skipping).assumingMemoryBound(
                        to: CChar.self), UInt32(bytes.count - skipping))
                return uv_try_write(stream, &buf, 1)
            }
        }
        // The iovec on the stack: a heap array here was an allocation per delivery.
        return withUnsafeTemporaryAllocation(of: uv_buf_t.self, capacity: chunks.count) { bufs in
            var count = 0
            return gather(chunks.startIndex, skipping, bufs, &count)
        }
    }

    /// Flushes what is queued, then closes ("send, then close"). `uv_close` alone would
    /// cancel pending writes; `uv_shutdown` completes after them.
    public func shutdownAndClose() {
        guard !isClosing else { return }
        onRead = nil
        let request = UnsafeMutablePointer<uv_shutdown_t>.allocate(capacity: 1)
        let result = uv_shutdown(request, stream) { request, _ in
            guard let request else { return }
            let stream = request.pointee.handle!
            request.deallocate()
            Unmanaged<TCPConnection>.fromOpaque(stream.pointee.data).takeUnretainedValue().close()
        }
        if result < 0 {
            request.deallocate()
            close()
        }
    }

    override func willClose() {
        uv_read_stop(stream)
        onRead = nil
        onDrain = nil
        let callback = onEnd
        onEnd = nil
        if !ended {
            ended = true
            callback?(nil)
        }
    }
}
