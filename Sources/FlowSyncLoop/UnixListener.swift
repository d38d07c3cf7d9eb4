import CLibUV

#if canImport(Glibc)
import Glibc
#endif

/// A listening Unix-domain socket (`uv_pipe_t`); accepted connections are handed to
/// ``onConnection`` as ``TCPConnection``s with ``TCPConnection/isUnixSocket`` set.
///
/// The socket file's mode is set between `bind` and `listen`, so no client can connect
/// while it still has the process umask's permissions. A stale socket file (left by a
/// crash) is removed before binding; any other kind of file at the path is an error.
/// The file is removed again when the listener closes.
public final class UnixListener: LoopHandle {
    private let pipe: UnsafeMutablePointer<uv_pipe_t>
    /// The socket's path.
    public let path: String
    /// Called on the loop thread for each accepted connection (not yet reading).
    public var onConnection: ((TCPConnection) -> Void)?
    /// Called when accepting fails.
    public var onAcceptError: ((UVError) -> Void)?
    private var bound = false

    /// Binds `path`, sets its `mode` (e.g. `0o660`), and listens.
    public init(loop: EventLoop, path: String, mode: Int, backlog: Int32 = 511) throws(UVError) {
        let pipe = UnsafeMutablePointer<uv_pipe_t>.allocate(capacity: 1)
        uv_pipe_init(loop.raw, pipe, 0)
        self.pipe = pipe
        self.path = path
        super.init(loop: loop, handle: CLibUV_pipe_as_handle(pipe), deallocate: { pipe.deallocate() })
        do throws(UVError) {
            var info = stat()
            if lstat(path, &info) == 0 {
                guard (info.st_mode & S_IFMT) == S_IFSOCK else {
                    throw UVError(
                        code: -EEXIST, operation: "unix socket \(path): a file that is not a socket is in the way")
                }
                unlink(path)
            }
            try UVError.check(uv_pipe_bind(pipe, path), "uv_pipe_bind \(path)")
            bound = true
            guard chmod(path, mode_t(mode)) == 0 else { throw UVError(code: -errno, operation: "chmod \(path)") }
            let result = uv_listen(CLibUV_pipe_as_stream(pipe), backlog) { server, status in
                guard let server else { return }
                let me = Unmanaged<UnixListener>.fromOpaque(server.pointee.data).takeUnretainedValue()
                guard status >= 0 else {
                    me.onAcceptError?(UVError(code: status, operation: "listen"))
                    return
                }
                let connection = TCPConnection(loop: me.loop, unixSocket: true)
                let accepted = uv_accept(server, connection.stream)
                guard accepted == 0 else {
                    connection.close()
                    me.onAcceptError?(UVError(code: accepted, operation: "uv_accept"))
                    return
                }
                if let onConnection = me.onConnection { onConnection(connection) } else { connection.close() }
            }
            try UVError.check(result, "uv_listen \(path)")
        } catch {
            close()
            throw error
        }
    }

    override func willClose() {
        onConnection = nil
        onAcceptError = nil
        if bound { unlink(path) }
    }
}
