import CLibUV
// `flowsync-server-bench --write-baseline [--quick]`: the cost of a frame delivery with
// nothing but the write call, by two paths, in one run (issue #20):
//
// - libuv: `TCPConnection.write([frame])` per socket per batch, the daemon's own path
//   (`uv_try_write` first, the rest queued with `uv_write`);
// - io_uring: one `IORING_OP_SEND` per socket, the whole batch submitted in one
//   `io_uring_submit_and_wait` (liburing 2.3, Debian's liburing-dev).
//
// A writer loop thread holds N accepted sockets; a reader loop thread holds the N
// client ends and counts what arrives. Each batch is one job on the writer loop (as a
// batch is one loop turn in the daemon); the writer thread's CPU time is measured
// around each job (CLOCK_THREAD_CPUTIME_ID), so the figure is deliveries per second of
// one core, independent of how the two threads share the machine. Every 10 batches the
// bench waits until the readers have everything, so socket buffers never fill and both
// paths write into the same state. The paths alternate, twice each.
import CURing
import FlowSyncLoop
import FlowSyncTestSupport
import Foundation

#if canImport(Glibc)
import Glibc
#endif

enum WriteBaseline {
    static func run(arguments: [String], quick: Bool, rounds: Int = 2) async throws -> Int32 {
        let sockets = quick ? 50 : 1_000
        let batches = quick ? 40 : 1_000
        let frameBytes = 512
        let frame = (0..<frameBytes).map { UInt8(truncatingIfNeeded: $0 &* 7) }

        let writer = try EventLoopThread()
        let reader = try EventLoopThread()
        let accepted = Accepted()
        let received = Shared(0)
        let port = Shared(0)
        writer.loop.execute {
            let listener = try! TCPListener(
                loop: writer.loop, address: SocketAddress(host: "127.0.0.1", port: 0), backlog: 1024)
            listener.onConnection = { connection in accepted.append(connection) }
            port.set(listener.port)
        }
        guard await eventually(timeout: 10, { port.get() != 0 }) else { throw BaselineError("no listener") }
        for wave in stride(from: 0, to: sockets, by: 100) {
            reader.loop.execute {
                for _ in wave..<min(wave + 100, sockets) {
                    TCPConnection.connect(
                        loop: reader.loop, to: try! SocketAddress(host: "127.0.0.1", port: port.get())
                    ) { result in
                        guard case .success(let tcp) = result else { return }
                        tcp.onRead = { bytes in received.update { $0 += bytes.count } }
                        try? tcp.startReading()
                    }
                }
            }
            guard await eventually(timeout: 30, { accepted.count >= min(wave + 100, sockets) }) else {
                throw BaselineError("only \(accepted.count) connections")
            }
        }
        let connections = accepted
        let fds = await onLoop(writer.loop) { connections.all.map(\.fileDescriptor) }

        say("## Write calls: libuv vs io_uring (`--write-baseline`)\n")
        say(
            "\(sockets) sockets on loopback, \(batches) batches, one \(frameBytes)-byte frame per socket per batch; deliveries per second of the writer thread's CPU time.\n"
        )
        say(
            "| path | deliveries | writer CPU | deliveries/s of one core | µs per delivery | process CPU (writer, readers, kernel workers) | short or failed |"
        )
        say("| --- | --- | --- | --- | --- | --- | --- |")
        var sent = 0
        // A kernel without io_uring (or one that forbids it, as some containers do) gets
        // the libuv rows and a note, not a failure.
        let ring = await onLoop(writer.loop) { Ring.make(entries: sockets) }
        if case .failure(let reason) = ring { say("(io_uring unavailable here: \(reason); libuv only)\n") }
        let paths = (try? ring.get()) == nil ? ["libuv"] : ["libuv", "io_uring"]
        for round in 0..<rounds {
            for path in paths {
                var cpu = 0.0
                var bad = 0
                let processBefore = processCPUSeconds()
                for b in 0..<batches {
                    let (seconds, failures) = await onLoop(writer.loop) { () -> (Double, Int) in
                        let start = threadCPUSeconds()
                        var failures = 0
                        if path == "libuv" {
                            for connection in connections.all {
                                do { _ = try connection.write([frame]) } catch { failures += 1 }
                            }
                        } else {
                            failures = Ring.instance!.sendAll(fds: fds, frame: frame)
                        }
                        return (threadCPUSeconds() - start, failures)
                    }
                    cpu += seconds
                    bad += failures
                    sent += sockets * frameBytes
                    if b % 10 == 9 {
                        let target = sent
                        guard await eventually(timeout: 30, { received.get() >= target }) else {
                            throw BaselineError("readers stalled at \(received.get()) of \(target) bytes")
                        }
                    }
                }
                let drained = sent
                guard await eventually(timeout: 30, { received.get() >= drained }) else {
                    throw BaselineError("readers stalled")
                }
                let processCPU = processCPUSeconds() - processBefore
                let deliveries = sockets * batches
                say(
                    "| \(path) (round \(round + 1)) | \(deliveries) | \(format(cpu)) s | \(format(Double(deliveries) / cpu)) | \(format(cpu / Double(deliveries) * 1e6)) | \(format(processCPU)) s | \(bad) |"
                )
            }
        }
        let target = sent
        guard await eventually(timeout: 30, { received.get() >= target }) else {
            throw BaselineError("readers stalled")
        }
        writer.loop.execute {
            for connection in connections.all { connection.close() }
            Ring.release()
        }
        _ = writer.shutdown()
        _ = reader.shutdown()
        return 0
    }

    /// Runs `body` as one job on `loop` and returns its result.
    static func onLoop<T: Sendable>(_ loop: EventLoop, _ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            loop.execute { continuation.resume(returning: body()) }
        }
    }

    static func threadCPUSeconds() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }

    /// CPU time of the whole process (every thread, including io_uring's kernel
    /// workers, which belong to the process): where a send runs outside the
    /// submitting thread, the writer's own CPU time would flatter io_uring.
    static func processCPUSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(
            usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    struct BaselineError: Error, CustomStringConvertible {
        let description: String
        init(_ d: String) { description = d }
    }

    /// The accepted sockets: appended and used on the writer loop only; the count is
    /// read from elsewhere under the lock.
    final class Accepted: @unchecked Sendable {
        private(set) var all: [TCPConnection] = []
        private let lock = NSLock()
        private var appended = 0
        var count: Int { lock.withLock { appended } }
        func append(_ connection: TCPConnection) {
            all.append(connection)
            lock.withLock { appended += 1 }
        }
    }

    /// One io_uring for the writer thread (used only there).
    final class Ring: @unchecked Sendable {
        /// The writer thread's ring, once ``make(entries:)`` succeeded.
        nonisolated(unsafe) static var instance: Ring?
        let ring: UnsafeMutableRawPointer
        let entries: UInt32

        /// Creates the writer thread's ring (call on that thread), or says why not.
        static func make(entries: Int) -> Result<Void, BaselineError> {
            var size: UInt32 = 1
            while size < UInt32(entries) { size <<= 1 }
            var error: Int32 = 0
            guard let ring = flowsync_uring_create(size, &error) else {
                return .failure(BaselineError("io_uring_queue_init: \(String(cString: strerror(-error)))"))
            }
            instance = Ring(ring: ring, entries: size)
            return .success(())
        }

        static func release() { instance = nil }

        private init(ring: UnsafeMutableRawPointer, entries: UInt32) {
            self.ring = ring
            self.entries = entries
        }

        deinit { flowsync_uring_destroy(ring) }

        /// Sends `frame` on every fd: queued, submitted in one call, every completion
        /// reaped. Returns the number of short or failed sends.
        func sendAll(fds: [Int32], frame: [UInt8]) -> Int {
            frame.withUnsafeBytes { bytes in
                var bad = 0
                var queued: UInt32 = 0
                for fd in fds {
                    if queued == entries {
                        let rc = flowsync_uring_submit_and_reap(ring, queued, Int32(bytes.count))
                        bad += rc < 0 ? Int(queued) : Int(rc)
                        queued = 0
                    }
                    _ = flowsync_uring_queue_send(ring, fd, bytes.baseAddress, UInt32(bytes.count))
                    queued += 1
                }
                if queued > 0 {
                    let rc = flowsync_uring_submit_and_reap(ring, queued, Int32(bytes.count))
                    bad += rc < 0 ? Int(queued) : Int(rc)
                }
                return bad
            }
        }
    }
}
