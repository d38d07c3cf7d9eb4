import CURing
import FlowSyncLoop

/// One io_uring for a loop's end-of-turn flush: many sockets' sends submitted with one
/// system call and collected before the call returns (issue #20; docs/BENCHMARKS.md,
/// "Write calls: libuv vs io_uring").
///
/// Contract (numbered, like the loop's own rules in docs/ARCHITECTURE.md):
/// 1. Loop-confined: create it, queue on it and collect from it on one loop thread.
/// 2. Synchronous: ``submitAndCollect(_:)`` returns only once every queued send has
///    completed. Nothing else runs on the loop in between, so no socket can be closed
///    and no queue changed while the kernel reads a buffer.
/// 3. The buffers are borrowed, not copied: the chunks passed to ``queueSend(fd:chunks:skipping:tag:)``
///    must stay alive and unmutated until ``submitAndCollect(_:)`` returns. (A native
///    Swift array keeps its storage at one address while it is neither mutated nor
///    released; the daemon keeps them in the connection's outbound queue.)
/// 4. Never blocks on a socket: every send carries `MSG_DONTWAIT`, so a full socket
///    completes at once with `-EAGAIN` (and a partly full one with a short count); the
///    caller hands the rest to libuv, in order. `MSG_NOSIGNAL`: a closed peer is `-EPIPE`.
/// 5. Never use it on a socket while libuv holds queued writes for it: the ring's bytes
///    would overtake libuv's (the caller checks `TCPConnection.queuedBytes == 0`).
///
/// Its own module (issue #30): it knows sockets and buffers, nothing of lists or
/// connections, and only the daemon and the benchmarks link liburing through it.
public final class SendRing {
    private let ring: UnsafeMutableRawPointer
    /// Sends per submission.
    public let sendCapacity: Int
    /// Buffers (iovecs) per submission, over all its sends.
    public let bufferCapacity: Int
    private var tags: [UInt64]
    private var results: [Int32]

    /// A ring for `sends` sends and `buffers` buffers per submission.
    ///
    /// - Throws: The kernel's refusal (`io_uring_queue_init`) as a ``UVError``: `ENOSYS`
    ///   on a kernel without io_uring, `EPERM` where a sandbox forbids it, `ENOMEM`
    ///   past the locked-memory limit. The caller falls back to libuv.
    public init(sends: Int, buffers: Int) throws(UVError) {
        precondition(
            sends > 0 && buffers >= sends, "Internal inconsistency in SendRing: \(sends) sends, \(buffers) buffers")
        var error: Int32 = 0
        guard let ring = flowsync_send_ring_create(UInt32(sends), UInt32(buffers), &error) else {
            // libuv's UV_E* codes are the negative errno on Linux: one error type.
            throw UVError(code: error, operation: "io_uring_queue_init")
        }
        self.ring = ring
        self.sendCapacity = sends
        self.bufferCapacity = buffers
        self.tags = Array(repeating: 0, count: sends)
        self.results = Array(repeating: 0, count: sends)
    }

    deinit {
        // Rule 2: nothing can be queued here (collect always empties the ring).
        flowsync_send_ring_destroy(ring)
    }

    /// Sends that still fit in this submission.
    public var freeSends: Int { Int(flowsync_send_ring_free_sends(ring)) }
    /// Buffers that still fit in this submission.
    public var freeBuffers: Int { Int(flowsync_send_ring_free_buffers(ring)) }

    /// Queues one send of `chunks` on `fd`, the first `skipping` bytes left out, as one
    /// gathered write; its completion will carry `tag`. Empty chunks are left out.
    ///
    /// - Precondition: the chunks fit (``freeSends`` ≥ 1, ``freeBuffers`` ≥
    ///   `chunks.count`) and hold more than `skipping` bytes. Rule 3 holds for them.
    public func queueSend(fd: Int32, chunks: ArraySlice<[UInt8]>, skipping: Int = 0, tag: UInt64) {
        precondition(
            freeSends >= 1 && freeBuffers >= chunks.count,
            "Internal inconsistency in SendRing: a send that does not fit")
        var skip = skipping
        for chunk in chunks {
            if skip >= chunk.count {
                skip -= chunk.count
                continue
            }
            // The pointer outlives the closure on purpose (rule 3): the array is kept
            // alive and unmutated by the caller until the send is collected.
            chunk.withUnsafeBytes { bytes in
                _ = flowsync_send_ring_add_buffer(ring, bytes.baseAddress! + skip, UInt(bytes.count - skip))
            }
            skip = 0
        }
        let rc = flowsync_send_ring_queue(ring, fd, tag)
        precondition(rc == 0, "Internal inconsistency in SendRing: queueing a send failed (\(rc))")
    }

    /// Submits every queued send in one system call, waits until all completed, and
    /// calls `body` with each completion's tag and result (bytes sent, or a negative
    /// errno such as `-EAGAIN` or `-EPIPE`), in completion order. The ring is empty
    /// afterwards and the borrowed buffers are free again.
    public func submitAndCollect(_ body: (_ tag: UInt64, _ result: Int32) -> Void) {
        let count = tags.withUnsafeMutableBufferPointer { tags in
            results.withUnsafeMutableBufferPointer { results in
                flowsync_send_ring_submit_and_collect(ring, tags.baseAddress!, results.baseAddress!)
            }
        }
        // A ring that fails as a whole may leave sends in flight on borrowed buffers:
        // there is no safe way on (rule 3), so this is an invariant violation.
        guard count >= 0 else {
            preconditionFailure(
                "Internal inconsistency in SendRing: io_uring_submit_and_wait failed: \(UVError(code: count, operation: "io_uring_submit_and_wait"))"
            )
        }
        for k in 0..<Int(count) { body(tags[k], results[k]) }
    }
}
