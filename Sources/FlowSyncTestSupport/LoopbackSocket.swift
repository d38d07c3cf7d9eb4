import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Blocking POSIX TCP sockets on 127.0.0.1, for tests and benchmarks that want a plain
/// file descriptor and no event loop: idle or hostile peers by the thousand, a raw HTTP
/// client, a scripted server on a thread of its own. One copy of the `sockaddr_in`
/// dance, which AuthTests and the gateway bench each kept before.
///
/// Blocking calls block their thread: call them from a thread of your own (or a test's
/// synchronous body), never from a task on the cooperative pool (PLATFORM-NOTES.md).
public enum LoopbackSocket {
    /// A TCP socket connected to 127.0.0.1:`port`; the caller closes it.
    /// - Parameter noDelay: sets `TCP_NODELAY` (a request/response client wants it).
    /// - Throws: the `POSIXError` of `socket` or `connect` (the socket is closed then).
    public static func connect(port: Int, noDelay: Bool = false) throws(POSIXError) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw lastError() }
        if noDelay {
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = loopbackAddress(port: port)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            let error = lastError()
            Glibc.close(fd)
            throw error
        }
        return fd
    }

    /// A listening TCP socket on 127.0.0.1 and a port the kernel chose; the caller accepts
    /// on it and closes it.
    /// - Throws: the `POSIXError` of `socket`, `bind`, `listen` or `getsockname`.
    public static func listen(backlog: Int32 = 64) throws(POSIXError) -> (fd: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw lastError() }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = loopbackAddress(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listening = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                bind(fd, raw, length) == 0 && Glibc.listen(fd, backlog) == 0 && getsockname(fd, raw, &length) == 0
            }
        }
        guard listening else {
            let error = lastError()
            Glibc.close(fd)
            throw error
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// Accepts on `listener` on a thread of its own, each connection served on a thread
    /// of its own, until the listener is closed (`accept` then fails and the thread ends).
    /// For scripted servers with a handful of peers; a thread per peer is the point.
    public static func acceptOnThreads(_ listener: Int32, serve: @escaping @Sendable (Int32) -> Void) {
        Thread {
            while true {
                let fd = accept(listener, nil, nil)
                guard fd >= 0 else { return }
                Thread { serve(fd) }.start()
            }
        }.start()
    }

    private static func loopbackAddress(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    private static func lastError() -> POSIXError { POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
}
