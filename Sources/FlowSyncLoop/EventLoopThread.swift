import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Runs an ``EventLoop`` on a dedicated thread — for the client SDK, the load tester
/// and tests (the daemon runs its loop on the main thread instead).
public final class EventLoopThread: Sendable {
    /// The loop; use ``EventLoop/execute(_:)`` to reach it.
    public let loop: EventLoop
    private final class State: Sendable {
        let finished = Mutex<Bool>(false)
        let thread = Mutex<pthread_t?>(nil)
    }
    private let state = State()

    /// Creates the loop and starts its thread.
    public init() throws(UVError) {
        loop = try EventLoop()
        final class Box {
            let body: () -> Void
            init(_ b: @escaping () -> Void) { body = b }
        }
        let box = Box { [loop, state] in
            Self.blockSIGPIPEOnThisThread()
            loop.run()
            state.finished.withLock { $0 = true }
        }
        var tid = pthread_t()
        let arg = Unmanaged.passRetained(box).toOpaque()
        let rc = pthread_create(
            &tid, nil,
            { arg in
                let box = Unmanaged<Box>.fromOpaque(arg!).takeRetainedValue()
                box.body()
                return nil
            }, arg)
        precondition(rc == 0, "pthread_create failed: \(rc)")
        state.thread.withLock { $0 = tid }
    }

    /// Blocks `SIGPIPE` for the calling thread only (see ``EventLoop/init()``): a write
    /// on this thread to a closed socket then fails with `EPIPE` and the signal stays
    /// pending on this thread, discarded when it exits. The process's disposition and
    /// every other thread's mask are untouched.
    static func blockSIGPIPEOnThisThread() {
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    /// Stops the loop (closing leftover handles) and waits for the thread to finish.
    ///
    /// - Returns: `false` if it did not finish within `timeout` seconds (the thread is
    ///   then left running; a test should report it).
    @discardableResult
    public func shutdown(timeout: Double = 10) -> Bool {
        loop.stop()
        let deadline = timeout * 1000
        var waited = 0.0
        while !state.finished.withLock({ $0 }) {
            if waited >= deadline { return false }
            usleep(1_000)
            waited += 1
        }
        if let tid = state.thread.withLock({ $0 }) { pthread_join(tid, nil) }
        return true
    }

    /// True once the loop has returned.
    public var isFinished: Bool { state.finished.withLock { $0 } }
}
