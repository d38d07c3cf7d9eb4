import Dispatch
import Foundation
@preconcurrency import Network

#if canImport(Glibc)
import Glibc
#endif

/// Events in arrival order, with a wait that resumes on the event itself (never a poll).
final class EventLog: @unchecked Sendable {
    private let lock = NSLock()
    private var events: [String] = []
    private var waiters: [UInt64: (count: Int, continuation: CheckedContinuation<Void, Never>)] = [:]
    private var nextID: UInt64 = 0

    func append(_ event: String) {
        let ready: [CheckedContinuation<Void, Never>] = lock.withLock {
            events.append(event)
            let due = waiters.filter { $0.value.count <= events.count }
            for id in due.keys { waiters[id] = nil }
            return due.map(\.value.continuation)
        }
        for continuation in ready { continuation.resume() }
    }

    var all: [String] { lock.withLock { events } }

    /// Waits until at least `count` events arrived, at most `timeout`; returns them all.
    @discardableResult
    func wait(count: Int, timeout: Duration = .seconds(10)) async -> [String] {
        let id: UInt64 = lock.withLock {
            nextID += 1
            return nextID
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let now = self.lock.withLock { () -> Bool in
                        if self.events.count >= count { return true }
                        self.waiters[id] = (count, continuation)
                        return false
                    }
                    if now { continuation.resume() }
                }
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                let waiter = self.lock.withLock { self.waiters.removeValue(forKey: id) }
                waiter?.continuation.resume()
            }
            await group.next()
            group.cancelAll()
        }
        return all
    }
}

/// A serial queue that knows whether code runs on it.
final class TaggedQueue: @unchecked Sendable {
    let queue: DispatchQueue
    private let key = DispatchSpecificKey<Bool>()
    init(_ label: String) {
        queue = DispatchQueue(label: label)
        queue.setSpecific(key: key, value: true)
    }
    var isCurrent: Bool { DispatchQueue.getSpecific(key: key) == true }
}

/// A short text for a state, comparable in tests (NWConnection.State declares no Equatable here).
func describe(_ state: NWConnection.State) -> String {
    switch state {
    case .setup: return "setup"
    case .preparing: return "preparing"
    case .ready: return "ready"
    case .waiting(let error): return "waiting(\(describe(error)))"
    case .failed(let error): return "failed(\(describe(error)))"
    case .cancelled: return "cancelled"
    }
}

func describe(_ error: NWError) -> String {
    switch error {
    case .posix(let code): return "posix.\(code.rawValue)"
    case .dns: return "dns"
    case .tls(let status): return "tls.\(status)"
    }
}

func posix(_ code: POSIXErrorCode) -> String { "posix.\(code.rawValue)" }

struct SocketError: Error, CustomStringConvertible {
    let description: String
    init(_ what: String) { description = "\(what): \(String(cString: strerror(errno)))" }
}

/// A plain TCP server on 127.0.0.1, port 0, for the NWConnection tests. Its blocking calls
/// run on a Dispatch queue of its own (never on Swift's cooperative pool) and are bounded
/// by SO_RCVTIMEO, so a broken stand-in fails a test instead of hanging it.
final class LoopbackServer: @unchecked Sendable {
    let port: UInt16
    private let fd: Int32
    private let queue = DispatchQueue(label: "LoopbackServer", attributes: .concurrent)

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SocketError("socket") }
        self.fd = fd
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                bind(fd, raw, length) == 0 && listen(fd, 16) == 0 && getsockname(fd, raw, &length) == 0
            }
        }
        guard ok else {
            _ = Glibc.close(fd)
            throw SocketError("bind/listen")
        }
        port = UInt16(bigEndian: address.sin_port)
    }

    /// The next connection (within 10 s).
    func accept() async throws -> Peer {
        let fd = self.fd
        return try await withCheckedThrowingContinuation { continuation in
            queue.async {
                var poll = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard Glibc.poll(&poll, 1, 10_000) == 1 else {
                    continuation.resume(throwing: SocketError("accept timed out"))
                    return
                }
                let peer = Glibc.accept(fd, nil, nil)
                if peer < 0 {
                    continuation.resume(throwing: SocketError("accept"))
                } else {
                    continuation.resume(returning: Peer(fd: peer))
                }
            }
        }
    }

    func close() { _ = Glibc.close(fd) }

    /// The accepted end of one connection.
    final class Peer: @unchecked Sendable {
        let fd: Int32
        private let queue = DispatchQueue(label: "LoopbackServer.Peer")
        init(fd: Int32) {
            self.fd = fd
            var timeout = timeval(tv_sec: 10, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }

        func write(_ text: String) async { await write(Array(text.utf8)) }

        func write(_ bytes: [UInt8]) async {
            let fd = self.fd
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                queue.async {
                    var offset = 0
                    while offset < bytes.count {
                        let n = bytes[offset...].withUnsafeBytes {
                            send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
                        }
                        if n <= 0 { break }
                        offset += n
                    }
                    continuation.resume()
                }
            }
        }

        /// Reads until `count` bytes, EOF, an error or 10 s; `eof` tells whether EOF was seen.
        func read(count: Int) async -> (bytes: [UInt8], eof: Bool) {
            let fd = self.fd
            return await withCheckedContinuation { continuation in
                queue.async {
                    var result: [UInt8] = []
                    var buffer = [UInt8](repeating: 0, count: 65_536)
                    while result.count < count {
                        let n = buffer.withUnsafeMutableBytes {
                            recv(fd, $0.baseAddress, min($0.count, count - result.count), 0)
                        }
                        if n == 0 {
                            continuation.resume(returning: (result, true))
                            return
                        }
                        if n < 0 { break }
                        result += buffer[0..<n]
                    }
                    continuation.resume(returning: (result, false))
                }
            }
        }

        /// Reads until EOF (or 10 s without data).
        func readToEnd() async -> (bytes: [UInt8], eof: Bool) { await read(count: Int.max) }

        /// Closes gracefully (FIN).
        func close() { queue.async { _ = Glibc.close(self.fd) } }

        /// Closes with a reset (RST): SO_LINGER on, zero seconds.
        func reset() {
            queue.async {
                var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
                setsockopt(self.fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
                _ = Glibc.close(self.fd)
            }
        }
    }
}

/// A loopback port with nothing listening a moment ago (bound, then released).
func unusedLoopbackPort() throws -> UInt16 {
    let server = try LoopbackServer()
    server.close()
    return server.port
}

/// An NWConnection whose state updates are logged as text, each checked to run on `queue`.
func logStates(of connection: NWConnection, on queue: TaggedQueue, into log: EventLog) {
    connection.stateUpdateHandler = { state in
        log.append(queue.isCurrent ? describe(state) : "OFF-QUEUE \(describe(state))")
    }
}

/// A value handed to @Sendable closures that only use it on its own queue (an NWConnection,
/// not declared Sendable by the stand-in).
struct Unchecked<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// Bytes collected from completions.
final class Collector: @unchecked Sendable {
    private let lock = NSLock()
    private var data: [UInt8] = []
    func append(_ chunk: Data) { lock.withLock { data.append(contentsOf: chunk) } }
    var bytes: [UInt8] { lock.withLock { data } }
}
