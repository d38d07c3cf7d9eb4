import Dispatch
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// One non-blocking TCP socket and its two Dispatch sources, on the connection's queue.
/// Not Apple API: the stand-in's I/O, kept apart from the state machine.
///
/// Rules (the same as Sources/FlowSyncClient/Transport/POSIXSocketTransport.swift):
/// 1. The read source is armed from `ready` until end of stream, and reads ahead at most
///    `readAheadLimit` bytes no receive has asked for; past that it is disarmed until the
///    receives drain the buffer (back-pressure: the rest stays in the kernel). It is not
///    armed per receive: a reset arriving while a just-resumed read source was being
///    registered was seen to go unreported (libdispatch on Linux), so the source is armed
///    once, early, and arming is "try, then wait" (a read is attempted as it is armed).
///    The write source is armed only while bytes wait or a connect is under way.
/// 2. The descriptor is closed only after both sources are cancelled (Dispatch's rule: a
///    source must not outlive its descriptor); a suspended source is resumed before it is
///    cancelled, or its cancel handler never runs.
/// 3. SIGPIPE is never raised: every send passes MSG_NOSIGNAL (Linux). A peer that has gone
///    is an EPIPE, which fails the connection.
/// 4. The handlers hold the connection strongly until `close()` clears them: a started
///    connection keeps itself alive until it is cancelled, as Apple's does.
final class TCPSocket: @unchecked Sendable {  // queue-confined
    enum ReadResult { case ok, failed(Int32) }
    enum WriteResult { case wrote(Int), wouldBlock, failed(Int32) }

    let fd: Int32
    private let read: DispatchSourceRead
    private let write: DispatchSourceWrite
    private var readArmed = false
    private var writeArmed = false
    private var closed = false
    var onReadable: (() -> Void)?
    var onWritable: (() -> Void)?

    init(fd: Int32, queue: DispatchQueue) {
        self.fd = fd
        read = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        write = DispatchSource.makeWriteSource(fileDescriptor: fd, queue: queue)
        let sourcesLeft = UncheckedBox(SourcesLeft())
        let release: @Sendable () -> Void = {
            sourcesLeft.value.count -= 1
            if sourcesLeft.value.count == 0 { _ = Glibc.close(fd) }
        }
        read.setCancelHandler(handler: release)
        write.setCancelHandler(handler: release)
        let this = UncheckedBox(Unowned(self))
        read.setEventHandler { this.value.object?.onReadable?() }
        write.setEventHandler { this.value.object?.onWritable?() }
    }

    /// Bytes read ahead of the receives, at most (rule 1).
    static let readAheadLimit = 4 << 20

    /// Arms or disarms the read source; true when it was just armed (the caller then reads
    /// at once: "try, then wait", rule 1).
    @discardableResult
    func wantsRead(_ wanted: Bool) -> Bool {
        guard !closed, wanted != readArmed else { return false }
        readArmed = wanted
        if wanted { read.resume() } else { read.suspend() }
        return wanted
    }

    func wantsWrite(_ wanted: Bool) {
        guard !closed, wanted != writeArmed else { return }
        writeArmed = wanted
        if wanted { write.resume() } else { write.suspend() }
    }

    /// Reads what is available into `buffer` (marking its end of stream at EOF), until the
    /// buffer holds `readAheadLimit` bytes.
    func readAvailable(into buffer: inout ReceiveBuffer) -> ReadResult {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while buffer.buffered < Self.readAheadLimit {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                chunk.withUnsafeBytes { buffer.append(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
                continue
            }
            if n == 0 {
                buffer.markEndOfStream()
                return .ok
            }
            let code = errno
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK { return .ok }
            return .failed(code)
        }
        return .ok
    }

    func write(_ bytes: ArraySlice<UInt8>) -> WriteResult {
        while true {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n >= 0 { return .wrote(n) }
            let code = errno
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK { return .wouldBlock }
            return .failed(code)
        }
    }

    func shutdownWriteSide() { _ = shutdown(fd, Int32(SHUT_WR)) }

    /// Pending socket error (SO_ERROR), cleared by reading it.
    func pendingError() -> Int32 {
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
        return error
    }

    /// Cancels both sources; the descriptor closes after both cancel handlers ran.
    func close() {
        guard !closed else { return }
        closed = true
        onReadable = nil
        onWritable = nil
        if !readArmed { read.resume() }
        if !writeArmed { write.resume() }
        read.cancel()
        write.cancel()
    }

    private final class SourcesLeft { var count = 2 }
    private struct Unowned {
        weak var object: TCPSocket?
        init(_ object: TCPSocket) { self.object = object }
    }
}

/// Resolves a host and connects to its addresses in turn (the first that accepts wins).
/// Not Apple API. Apple races IPv6 and IPv4 ("Happy Eyeballs"); the stand-in tries them in
/// getaddrinfo's order, one at a time. Resolution is getaddrinfo on the connection's queue,
/// which blocks that queue briefly (a name, not an address literal, is resolved).
final class Connector: @unchecked Sendable {  // queue-confined
    private let host: String
    private let port: UInt16
    private let queue: DispatchQueue
    private var completion: ((Result<TCPSocket, NWError>) -> Void)?
    private var addresses: [(family: Int32, address: [UInt8])] = []
    private var lastError: Int32 = ECONNREFUSED
    private var attempt: TCPSocket?

    init(host: String, port: UInt16, queue: DispatchQueue, completion: @escaping (Result<TCPSocket, NWError>) -> Void) {
        self.host = host
        self.port = port
        self.queue = queue
        self.completion = completion
    }

    func begin() {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &result)
        guard rc == 0, let first = result else {
            let code =
                (rc == EAI_NONAME || rc == -5 /* EAI_NODATA (glibc, not imported) */)
                ? standInNoSuchRecord : standInDNSUnknown
            finishLater(.failure(.dns(code)))
            return
        }
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let current = entry {
            let bytes = [UInt8](
                UnsafeRawBufferPointer(start: current.pointee.ai_addr, count: Int(current.pointee.ai_addrlen)))
            addresses.append((current.pointee.ai_family, bytes))
            entry = current.pointee.ai_next
        }
        freeaddrinfo(result)
        tryNext()
    }

    /// Stops: closes the socket being connected, and never completes.
    func abandon() {
        completion = nil
        attempt?.close()
        attempt = nil
    }

    private func tryNext() {
        guard completion != nil else { return }
        guard !addresses.isEmpty else {
            finishLater(.failure(.posix(POSIXErrorCode(rawValue: lastError) ?? .ECONNREFUSED)))
            return
        }
        let (family, address) = addresses.removeFirst()
        let fd = socket(family, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else {
            lastError = errno
            tryNext()
            return
        }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) | O_NONBLOCK)
        let socket = TCPSocket(fd: fd, queue: queue)
        let rc = address.withUnsafeBytes { raw in
            Glibc.connect(fd, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(address.count))
        }
        if rc == 0 {
            finishLater(.success(socket))
            return
        }
        let code = errno
        guard code == EINPROGRESS else {
            lastError = code
            socket.close()
            tryNext()
            return
        }
        attempt = socket
        socket.onWritable = { [self] in
            guard self.attempt === socket else { return }
            self.attempt = nil
            socket.onWritable = nil
            socket.wantsWrite(false)
            let error = socket.pendingError()
            if error == 0 {
                self.finishLater(.success(socket))
            } else {
                self.lastError = error
                socket.close()
                self.tryNext()
            }
        }
        socket.wantsWrite(true)
    }

    /// Completes on a later turn of the queue, never inside the caller's own action list.
    private func finishLater(_ result: Result<TCPSocket, NWError>) {
        let box = UncheckedBox(result)
        queue.async { [self] in
            guard let completion = self.completion else {
                if case .success(let socket) = box.value { socket.close() }
                return
            }
            self.completion = nil
            completion(box.value)
        }
    }
}
