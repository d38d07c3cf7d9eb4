import CLibUV

/// Base of every libuv handle wrapper; owns the handle's memory and its lifetime.
///
/// Lifetime rules (also numbered in docs/ARCHITECTURE.md, "Event loop"):
/// - The handle's `data` holds one retained reference to this object, taken when the
///   handle is initialised and released in the close callback — so the object lives
///   as long as libuv may call back into it, whoever else holds it.
/// - The handle's memory is freed only in the close callback, never before.
/// - ``close()`` is idempotent; after it, no user callback runs except ``onClose``.
///   User callbacks are cleared on close so a closure that captures its own handle
///   cannot keep it alive (a leak LeakSanitizer found in an earlier skeleton).
/// - Not `Sendable`: a handle belongs to its loop's thread.
public class LoopHandle {
    /// The loop this handle belongs to.
    public let loop: EventLoop
    let handle: UnsafeMutablePointer<uv_handle_t>
    private let deallocate: () -> Void
    /// True once ``close()`` was called.
    public private(set) var isClosing = false
    /// Runs once, after libuv closed the handle.
    public var onClose: (() -> Void)?

    init(loop: EventLoop, handle: UnsafeMutablePointer<uv_handle_t>, deallocate: @escaping () -> Void) {
        self.loop = loop
        self.handle = handle
        self.deallocate = deallocate
        handle.pointee.data = Unmanaged.passRetained(self).toOpaque()
    }

    /// Closes the handle. Pending writes of a stream are cancelled (use
    /// `TCPConnection.shutdownAndClose()` to flush first).
    public func close() {
        guard !isClosing else { return }
        isClosing = true
        willClose()
        uv_close(handle) { raw in
            guard let raw else { return }
            let object = Unmanaged<LoopHandle>.fromOpaque(raw.pointee.data).takeRetainedValue()
            object.didClose()
        }
    }

    /// Subclasses stop watchers and clear their callbacks here.
    func willClose() {}

    private func didClose() {
        let callback = onClose
        onClose = nil
        deallocate()
        callback?()
    }

    /// Keeps the loop running while this handle is active (the default).
    public func ref() { uv_ref(handle) }
    /// Lets the loop exit even while this handle is active.
    public func unref() { uv_unref(handle) }
}
