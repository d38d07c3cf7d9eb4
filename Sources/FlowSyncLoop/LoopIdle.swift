import CLibUV

/// An idle handle (`uv_idle_t`) used for one thing: while it is active, the loop polls
/// for I/O without blocking (libuv's poll timeout is 0 whenever an idle handle is
/// active), so the next turn comes at once. The daemon keeps it active while a sliced
/// flush has connections left to write (`Server+FanOut.swift`): it reads what arrived,
/// then writes on, instead of sleeping with frames queued.
///
/// Unreferenced: it never keeps the loop alive by itself.
public final class LoopIdle: LoopHandle {
    private let idle: UnsafeMutablePointer<uv_idle_t>

    /// Whether the handle is started.
    public private(set) var isActive = false

    /// Creates a stopped idle handle. Call on the loop thread.
    public init(loop: EventLoop) {
        let idle = UnsafeMutablePointer<uv_idle_t>.allocate(capacity: 1)
        uv_idle_init(loop.raw, idle)
        self.idle = idle
        super.init(loop: loop, handle: CLibUV_idle_as_handle(idle), deallocate: { idle.deallocate() })
        unref()
    }

    /// Starts (`true`) or stops (`false`) the handle; setting the state it has is free.
    public func setActive(_ active: Bool) {
        guard active != isActive, !isClosing else { return }
        isActive = active
        if active {
            // The callback has nothing to do: the handle's only effect is the loop's
            // zero poll timeout; the work is the check hook's, after the poll.
            uv_idle_start(idle) { _ in }
        } else {
            uv_idle_stop(idle)
        }
    }

    override func willClose() {
        uv_idle_stop(idle)
        isActive = false
    }
}
