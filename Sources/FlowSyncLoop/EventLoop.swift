import CLibUV
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// One libuv loop, run by one thread.
///
/// Threading contract (docs/ARCHITECTURE.md, "Event loop"):
/// 1. Everything about a loop — its handles, their callbacks, the state they drive —
///    is touched only on the thread inside ``run()``.
/// 2. The one cross-thread entry is ``execute(_:)``: it appends to a queue behind a
///    `Mutex` and calls `uv_async_send` *while holding the lock*, so it cannot race
///    the async handle's `uv_close` in ``stop()``. `uv_async_send` coalesces (several
///    sends, one callback), which is why the jobs live in a queue and the callback
///    drains all of them.
/// 3. ``stop()`` (any thread) closes the handles still open — counting them in
///    ``handlesOpenAtStop`` so tests can insist on zero — and lets ``run()`` return.
public final class EventLoop: @unchecked Sendable {
    /// The libuv loop (`@unchecked Sendable`: only the queue below is shared).
    public let raw: UnsafeMutablePointer<uv_loop_t>
    private let async: UnsafeMutablePointer<uv_async_t>
    /// Pending jobs; `nil` once the loop stopped accepting them.
    private let jobs = Mutex<[@Sendable () -> Void]?>([])
    private let stats = Mutex<(openAtStop: Int, closeResult: Int32?)>((0, nil))
    private var loopThread: pthread_t?
    /// Offloaded jobs whose completion has not run (loop thread only; see
    /// ``offload(work:then:)``).
    var offloadCount = 0
    /// The one read buffer of every stream on this loop (``TCPConnection``), handed out
    /// by their `alloc_cb`s.
    ///
    /// One per loop, not one per connection: libuv runs a stream's `alloc_cb`, the
    /// `read` and its `read_cb` back to back on the loop thread, and a read callback
    /// never runs inside another, so the buffer is always free when a read starts, and
    /// every reader already copies what it keeps (the frame decoder buffers only an
    /// unfinished frame). A buffer per connection cost its first 4 KiB page of RSS as
    /// soon as the peer sent anything: about two thirds of an idle connection's memory.
    let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: EventLoop.readBufferSize, alignment: 16)
    /// Size of ``readBuffer``: the most one `read` takes from a socket.
    public static let readBufferSize = 64 * 1024

    /// Creates a loop. Nothing runs until ``run()``.
    ///
    /// `SIGPIPE`: libuv writes to sockets with `write`/`writev`, so a write to a peer that
    /// has gone raises `SIGPIPE` in the writing thread, and its default action kills the
    /// process. A library must not change the process's signal dispositions (an app may
    /// rely on its own), so the loop does not: ``EventLoopThread`` blocks `SIGPIPE` in its
    /// own thread's mask (the write then fails with `EPIPE`), and a program that runs a
    /// loop on a thread of its own (flowsyncd, on its main thread) ignores `SIGPIPE` itself.
    public init() throws(UVError) {
        raw = .allocate(capacity: 1)
        async = .allocate(capacity: 1)
        do {
            try UVError.check(uv_loop_init(raw), "uv_loop_init")
        } catch {
            raw.deallocate()
            async.deallocate()
            throw error
        }
        _ = uv_async_init(raw, async) { handle in
            guard let handle else { return }
            let loop = Unmanaged<EventLoop>.fromOpaque(handle.pointee.data).takeUnretainedValue()
            loop.drainJobs()
        }
        // Unretained: the loop owns the async handle, and `run()` outlives it.
        async.pointee.data = Unmanaged.passUnretained(self).toOpaque()
    }

    deinit {
        raw.deallocate()
        async.deallocate()
        readBuffer.deallocate()
    }

    /// Runs the loop on the calling thread until ``stop()``; then closes it.
    ///
    /// - Returns: `uv_loop_close`'s result: 0 when every handle was closed.
    @discardableResult
    public func run() -> Int32 {
        loopThread = pthread_self()
        uv_run(raw, UV_RUN_DEFAULT)
        // Everything is closed (stop() closed stragglers); let close callbacks run.
        uv_run(raw, UV_RUN_NOWAIT)
        let result = uv_loop_close(raw)
        stats.withLock { $0.closeResult = result }
        loopThread = nil
        return result
    }

    /// Schedules `job` on the loop thread. Returns `false` (and drops the job) when the
    /// loop has stopped.
    @discardableResult
    public func execute(_ job: @escaping @Sendable () -> Void) -> Bool {
        jobs.withLock { queue in
            guard queue != nil else { return false }
            queue!.append(job)
            uv_async_send(async)  // under the lock: see rule 2
            return true
        }
    }

    private func drainJobs() {
        // Take the whole batch, then run it unlocked so a job may call execute().
        let batch = jobs.withLock { queue -> [@Sendable () -> Void] in
            let taken = queue ?? []
            if queue != nil { queue = [] }
            return taken
        }
        for job in batch { job() }
    }

    /// Stops the loop from any thread: handles still open are closed (and counted),
    /// then ``run()`` returns. Jobs already queued run first.
    public func stop() {
        execute { [self] in
            drainJobs()
            let open = closeAllHandles()
            stats.withLock { $0.openAtStop = max($0.openAtStop, open) }
            jobs.withLock { queue in
                // A second stop() queued before this one ran has already closed it (its
                // job runs inside drainJobs() above): closing twice is a libuv assertion.
                guard queue != nil else { return }
                queue = nil
                uv_close(UnsafeMutableRawPointer(async).assumingMemoryBound(to: uv_handle_t.self), nil)
            }
        }
    }

    /// Closes every handle that is not already closing; returns how many there were.
    private func closeAllHandles() -> Int {
        final class Collector { var handles: [UnsafeMutablePointer<uv_handle_t>] = [] }
        let collector = Collector()
        let asyncHandle = UnsafeMutableRawPointer(async)
        withExtendedLifetime(collector) {
            uv_walk(
                raw,
                { handle, arg in
                    guard let handle, let arg else { return }
                    Unmanaged<Collector>.fromOpaque(arg).takeUnretainedValue().handles.append(handle)
                }, Unmanaged.passUnretained(collector).toOpaque())
        }
        var count = 0
        for handle in collector.handles
        where UnsafeMutableRawPointer(handle) != asyncHandle && uv_is_closing(handle) == 0 {
            count += 1
            Unmanaged<LoopHandle>.fromOpaque(handle.pointee.data).takeUnretainedValue().close()
        }
        return count
    }

    /// How many handles ``stop()`` found open and had to close (0 in a clean shutdown).
    public var handlesOpenAtStop: Int { stats.withLock { $0.openAtStop } }
    /// `uv_loop_close`'s result after ``run()`` returned (0 = clean), or `nil` before.
    public var closeResult: Int32? { stats.withLock { $0.closeResult } }

    /// The loop's cached time in milliseconds (updated once per loop iteration).
    public var now: UInt64 { uv_now(raw) }

    /// True on the thread that runs the loop.
    public var inLoopThread: Bool {
        guard let loopThread else { return false }
        return pthread_equal(loopThread, pthread_self()) != 0
    }
}
