/// One connection's part of an io_uring flush (`[server] write_path = "io_uring"`): what
/// to submit, what the completion left, and what goes to libuv. Pure: no socket, no
/// ring; the I/O shell (``Server/flushAll()``) carries out its actions.
///
/// A flush is: ``flushStarted(frameSizes:libuvQueuedBytes:socketClosing:maxFrames:)``
/// decides the route, then, if the frames were submitted, ``sendCompleted(result:frameSizes:)``
/// says what to do with the rest. The machine is back to idle after either, ready for
/// the next turn.
///
/// The ordering rules it enforces (why each decision is what it is):
/// 1. **Never beside libuv's queue.** While libuv holds bytes for the socket
///    (`uv_write` in flight), new bytes must go behind them: the connection is written
///    through libuv, which queues them in order. A ring send would overtake.
/// 2. **One send per socket per submission**, of the queue's first frames: a second send
///    to the same socket in one batch could complete out of order or after a short
///    first one, and would duplicate or reorder bytes.
/// 3. **The remainder goes to libuv, from the exact byte** the kernel stopped at: a short
///    send (the socket buffer filled) or `EAGAIN` (nothing sent) leaves the rest of the
///    submitted frames, then the frames not submitted (past `maxFrames`), to libuv
///    (`uv_try_write`, then `uv_write`), which keeps them in order from then on.
/// 4. **Any other error ends the connection**, with nothing handed on.
///
/// Not guaranteed: the machine does not know whether the bytes are still alive; the
/// shell keeps the submitted frames in the connection's queue until the completion
/// was handled (``SendRing``, rule 3).
struct RingSendStateMachine {
    /// Where a connection's frames go this turn.
    enum FlushAction: Equatable {
        /// Nothing is queued.
        case nothing
        /// Write through libuv as before (rule 1, or a closing socket).
        case writeWithLibuv
        /// Submit one send of the first `frames` queued frames, `bytes` in all.
        case submit(frames: Int, bytes: Int)
    }

    /// A byte position in the connection's queued frames.
    struct Position: Equatable {
        /// Index of the frame.
        var frame: Int
        /// Bytes of that frame already sent.
        var offset: Int
    }

    /// What to do once the ring's send completed.
    enum CompletionAction: Equatable {
        /// Every queued frame was sent: the queue can be emptied.
        case done
        /// Hand the queued frames from `from` on to libuv (rule 3), then empty the queue.
        case writeRemainderWithLibuv(from: Position)
        /// The socket is broken (the negative errno): end the connection (rule 4).
        case fail(errno: Int32)
    }

    private enum State {
        case idle
        /// A send of the first `frames` queued frames (`bytes` bytes) is in the ring;
        /// `queuedFrames` were queued in all.
        case submitted(frames: Int, bytes: Int, queuedFrames: Int)
    }

    private var state = State.idle

    init() {}

    /// Whether a send is in the ring, waiting for its completion.
    var isSubmitted: Bool {
        if case .submitted = state { return true }
        return false
    }

    /// The flush of a turn begins: decide the route of the queued frames.
    ///
    /// - Parameters:
    ///   - frameSizes: the sizes of the frames queued this turn, in order.
    ///   - libuvQueuedBytes: what libuv still holds for the socket (rule 1).
    ///   - socketClosing: the socket is closing (libuv reports the error).
    ///   - maxFrames: most frames (iovecs) in one send; the rest go to libuv after it.
    mutating func flushStarted(
        frameSizes: some Collection<Int>, libuvQueuedBytes: Int, socketClosing: Bool, maxFrames: Int
    ) -> FlushAction {
        guard case .idle = state else {
            preconditionFailure(
                "Internal inconsistency in RingSendStateMachine: a flush began while a send was submitted")
        }
        precondition(maxFrames > 0, "Internal inconsistency in RingSendStateMachine: maxFrames must be positive")
        guard !frameSizes.isEmpty else { return .nothing }
        guard libuvQueuedBytes == 0, !socketClosing else { return .writeWithLibuv }
        var frames = 0
        var bytes = 0
        for size in frameSizes.prefix(maxFrames) {
            frames += 1
            bytes += size
        }
        // Empty frames only: nothing to send, but libuv's write returns cleanly.
        guard bytes > 0 else { return .writeWithLibuv }
        state = .submitted(frames: frames, bytes: bytes, queuedFrames: frameSizes.count)
        return .submit(frames: frames, bytes: bytes)
    }

    /// The ring's send completed with `result` (bytes sent, or a negative errno).
    ///
    /// - Parameter frameSizes: the same frames as at ``flushStarted(frameSizes:libuvQueuedBytes:socketClosing:maxFrames:)``
    ///   (the queue is untouched in between), to find where a short send stopped.
    mutating func sendCompleted(result: Int32, frameSizes: some Collection<Int>) -> CompletionAction {
        guard case .submitted(let frames, let bytes, let queuedFrames) = state else {
            preconditionFailure("Internal inconsistency in RingSendStateMachine: a completion without a submitted send")
        }
        precondition(
            frameSizes.count == queuedFrames,
            "Internal inconsistency in RingSendStateMachine: the queue changed while its send was in the ring")
        state = .idle
        if result < 0 {
            // Would block (the socket buffer is full) or interrupted: nothing was sent,
            // libuv writes everything in order (rule 3).
            if Self.retryableErrors.contains(result) {
                return .writeRemainderWithLibuv(from: Position(frame: 0, offset: 0))
            }
            return .fail(errno: result)
        }
        let sent = Int(result)
        precondition(
            sent <= bytes, "Internal inconsistency in RingSendStateMachine: \(sent) bytes sent of \(bytes) submitted")
        if sent == bytes {
            return frames == queuedFrames ? .done : .writeRemainderWithLibuv(from: Position(frame: frames, offset: 0))
        }
        // Short: find the frame and offset the kernel stopped at.
        var left = sent
        var index = 0
        for size in frameSizes {
            if left < size { break }
            left -= size
            index += 1
        }
        return .writeRemainderWithLibuv(from: Position(frame: index, offset: left))
    }

    /// Negative results that mean "nothing sent, try again later": `EAGAIN`
    /// (= `EWOULDBLOCK` on Linux), `EINTR`, `ENOBUFS`, `ENOMEM` (the kernel could not
    /// allocate now). Linux errno values, negated as io_uring reports them.
    static let retryableErrors: Set<Int32> = [-11, -4, -105, -12]
}
