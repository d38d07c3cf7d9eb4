import CLibUV

/// A libuv timer (`uv_timer_t`). Times are milliseconds of loop time.
public final class LoopTimer: LoopHandle {
    private let timer: UnsafeMutablePointer<uv_timer_t>
    private var callback: (() -> Void)?

    /// Creates a stopped timer. Call on the loop thread.
    public init(loop: EventLoop) {
        let timer = UnsafeMutablePointer<uv_timer_t>.allocate(capacity: 1)
        uv_timer_init(loop.raw, timer)
        self.timer = timer
        super.init(loop: loop, handle: CLibUV_timer_as_handle(timer), deallocate: { timer.deallocate() })
    }

    /// Fires `callback` after `timeout` ms, then every `repeat` ms if non-zero.
    public func start(after timeout: UInt64, repeat interval: UInt64 = 0, _ callback: @escaping () -> Void) {
        guard !isClosing else { return }
        self.callback = callback
        uv_timer_start(
            timer,
            { raw in
                guard let raw else { return }
                let me = Unmanaged<LoopTimer>.fromOpaque(raw.pointee.data).takeUnretainedValue()
                me.callback?()
            }, timeout, interval)
    }

    /// Stops the timer (it can be started again).
    public func stop() { uv_timer_stop(timer) }

    override func willClose() {
        uv_timer_stop(timer)
        callback = nil
    }
}

/// A prepare or check hook: runs once per loop iteration, just before (prepare) or just
/// after (check) the loop polls for I/O. FlowSync seals a list's batch in a hook, so
/// every mutation that arrived during one loop turn lands in the same batch.
public final class LoopHook: LoopHandle {
    /// When in the iteration the hook runs.
    public enum Kind: Sendable { case prepare, check }

    private let kind: Kind
    private let raw: UnsafeMutableRawPointer
    private var callback: (() -> Void)?

    /// Creates and starts a hook. Call on the loop thread. A hook does not keep the
    /// loop alive (it is unreferenced).
    public init(loop: EventLoop, kind: Kind, _ callback: @escaping () -> Void) {
        self.kind = kind
        self.callback = callback
        let handle: UnsafeMutablePointer<uv_handle_t>
        switch kind {
        case .prepare:
            let p = UnsafeMutablePointer<uv_prepare_t>.allocate(capacity: 1)
            uv_prepare_init(loop.raw, p)
            raw = UnsafeMutableRawPointer(p)
            handle = CLibUV_prepare_as_handle(p)
            super.init(loop: loop, handle: handle, deallocate: { p.deallocate() })
            uv_prepare_start(p) { h in
                guard let h else { return }
                Unmanaged<LoopHook>.fromOpaque(h.pointee.data).takeUnretainedValue().callback?()
            }
        case .check:
            let c = UnsafeMutablePointer<uv_check_t>.allocate(capacity: 1)
            uv_check_init(loop.raw, c)
            raw = UnsafeMutableRawPointer(c)
            handle = CLibUV_check_as_handle(c)
            super.init(loop: loop, handle: handle, deallocate: { c.deallocate() })
            uv_check_start(c) { h in
                guard let h else { return }
                Unmanaged<LoopHook>.fromOpaque(h.pointee.data).takeUnretainedValue().callback?()
            }
        }
        unref()
    }

    override func willClose() {
        switch kind {
        case .prepare: uv_prepare_stop(raw.assumingMemoryBound(to: uv_prepare_t.self))
        case .check: uv_check_stop(raw.assumingMemoryBound(to: uv_check_t.self))
        }
        callback = nil
    }
}

/// Watches a POSIX signal on the loop (`uv_signal_t`): the callback runs on the loop
/// thread, not in signal context, so it may do anything.
public final class SignalWatcher: LoopHandle {
    private let signal: UnsafeMutablePointer<uv_signal_t>
    private var callback: ((Int32) -> Void)?

    /// Starts watching `signum`. Call on the loop thread. Unreferenced: a signal
    /// watcher alone does not keep the loop running.
    public init(loop: EventLoop, signal signum: Int32, _ callback: @escaping (Int32) -> Void) throws(UVError) {
        let signal = UnsafeMutablePointer<uv_signal_t>.allocate(capacity: 1)
        uv_signal_init(loop.raw, signal)
        self.signal = signal
        self.callback = callback
        super.init(loop: loop, handle: CLibUV_signal_as_handle(signal), deallocate: { signal.deallocate() })
        let result = uv_signal_start(
            signal,
            { raw, signum in
                guard let raw else { return }
                Unmanaged<SignalWatcher>.fromOpaque(raw.pointee.data).takeUnretainedValue().callback?(signum)
            }, signum)
        if result < 0 {
            close()
            throw UVError(code: result, operation: "uv_signal_start")
        }
        unref()
    }

    override func willClose() {
        uv_signal_stop(signal)
        callback = nil
    }
}
