import CLibUV

extension EventLoop {
    /// Runs `work` on libuv's thread pool (`uv_queue_work`), then `then` with its result
    /// on this loop's thread. For work too large for a loop turn: encoding and deflating
    /// a snapshot of a large list, writing a compaction snapshot (docs/ARCHITECTURE.md,
    /// "Event loop", rules 12–14).
    ///
    /// Threading and lifetime:
    /// - Call on the loop thread (`uv_queue_work` is not thread-safe).
    /// - `work` runs on a pool thread and may touch only what it captured: values that
    ///   are `Sendable` (a `Director` is a value; capture a copy of the state). It must not
    ///   touch the loop, its handles or any loop-confined object.
    /// - `then` runs on the loop thread, in the poll phase of some later turn (never
    ///   inside this call), so it may touch loop-confined state — which may have changed
    ///   meanwhile: it must re-check what it relies on (the connection may be gone, the
    ///   list may have moved on, the owner may be shutting down).
    /// - The request is *active* until `then` has run: ``run()`` does not return before
    ///   it (even after ``stop()``), so nothing `then` captures is freed under it, and the
    ///   request's memory is freed only after `then` returned.
    /// - There is no cancellation: `uv_cancel` only helps before a pool thread picks the
    ///   work up, and an owner must handle the completion anyway. Owners that stop wait
    ///   for their outstanding work (``offloadsInFlight``) instead.
    /// - The pool has `UV_THREADPOOL_SIZE` threads (libuv's default: 4), shared with
    ///   libuv's own file and DNS work; queued work waits for a free thread.
    ///
    /// - Complexity: O(1) on the loop thread; the work's own cost on a pool thread.
    public func offload<Output: Sendable>(work: @escaping @Sendable () -> Output, then: @escaping (Output) -> Void) {
        let job = OffloadJob(loop: self, work: work, then: then)
        let request = UnsafeMutablePointer<uv_work_t>.allocate(capacity: 1)
        // One retained reference for libuv, released in the after-callback (rule 13).
        request.pointee.data = Unmanaged.passRetained(job as OffloadJobBase).toOpaque()
        offloadCount += 1
        let result = uv_queue_work(
            raw, request,
            { request in
                guard let request else { return }
                // Pool thread: only the job's Sendable work and its output slot.
                Unmanaged<OffloadJobBase>.fromOpaque(request.pointee.data).takeUnretainedValue().runWork()
            },
            { request, _ in
                // Loop thread. libuv orders the pool thread's writes before this callback
                // (it hands the request back under its own mutex and an async wake-up).
                guard let request else { return }
                let job = Unmanaged<OffloadJobBase>.fromOpaque(request.pointee.data).takeRetainedValue()
                request.deallocate()
                job.loop.offloadCount -= 1
                job.complete()
            })
        // uv_queue_work fails only for a NULL work callback.
        precondition(result == 0, "uv_queue_work failed: \(result)")
    }

    /// Offloaded work whose `then` has not run yet (loop thread only). A clean stop
    /// waits for 0: the completions touch their owners' state.
    public var offloadsInFlight: Int { offloadCount }
}

/// Type-erased base, so the C callbacks need not know `Output`.
class OffloadJobBase: @unchecked Sendable {
    let loop: EventLoop
    init(loop: EventLoop) { self.loop = loop }
    func runWork() { preconditionFailure("Internal inconsistency in OffloadJob: abstract") }
    func complete() { preconditionFailure("Internal inconsistency in OffloadJob: abstract") }
}

/// One offloaded job. `@unchecked Sendable` because its fields are split by thread and
/// by time, which the type system cannot express: `work` and `output` are written on the
/// pool thread *before* libuv hands the request back; `then` and the read of `output`
/// happen on the loop thread *after* that, in the after-callback.
private final class OffloadJob<Output: Sendable>: OffloadJobBase, @unchecked Sendable {
    private let work: @Sendable () -> Output
    private var then: ((Output) -> Void)?
    private var output: Output?

    init(loop: EventLoop, work: @escaping @Sendable () -> Output, then: @escaping (Output) -> Void) {
        self.work = work
        self.then = then
        super.init(loop: loop)
    }

    override func runWork() { output = work() }

    override func complete() {
        let callback = then
        // Cleared before it runs: a closure that captures its own owner must not keep it
        // alive through the job (same rule as handle callbacks, rule 4).
        then = nil
        guard let output else { preconditionFailure("Internal inconsistency in OffloadJob: completed without output") }
        callback?(output)
    }
}
