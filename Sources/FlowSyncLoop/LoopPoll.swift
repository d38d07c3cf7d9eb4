import CLibUV

/// Readiness of a file descriptor the loop does not own (`uv_poll_t`): how a C library
/// with its own socket (libpq) joins the loop without a thread. The library does the
/// I/O; the loop only says when the socket is readable or writable.
///
/// The descriptor must stay open until the poll is closed, and a library that replaces
/// its socket (libpq may, while connecting) needs a new poll for the new one.
public final class LoopPoll: LoopHandle {
    /// What to wait for.
    public struct Events: OptionSet, Sendable {
        public let rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }
        public static let readable = Events(rawValue: Int32(UV_READABLE.rawValue))
        public static let writable = Events(rawValue: Int32(UV_WRITABLE.rawValue))
    }

    private let poll: UnsafeMutablePointer<uv_poll_t>
    private var callback: ((Result<Events, UVError>) -> Void)?
    /// The descriptor watched.
    public let fileDescriptor: Int32

    /// Watches `fd` (a socket). Call on the loop thread.
    public init(loop: EventLoop, socket fd: Int32) throws(UVError) {
        let poll = UnsafeMutablePointer<uv_poll_t>.allocate(capacity: 1)
        let result = uv_poll_init_socket(loop.raw, poll, fd)
        guard result == 0 else {
            poll.deallocate()
            throw UVError(code: result, operation: "uv_poll_init_socket")
        }
        self.poll = poll
        self.fileDescriptor = fd
        super.init(loop: loop, handle: CLibUV_poll_as_handle(poll), deallocate: { poll.deallocate() })
    }

    /// Calls `callback` whenever one of `events` is ready (level-triggered: again on
    /// the next turn while it stays ready), or once with the error. Replaces the
    /// events and the callback of an earlier `start`.
    public func start(_ events: Events, _ callback: @escaping (Result<Events, UVError>) -> Void) {
        guard !isClosing else { return }
        self.callback = callback
        uv_poll_start(poll, events.rawValue) { raw, status, events in
            guard let raw else { return }
            let me = Unmanaged<LoopPoll>.fromOpaque(raw.pointee.data).takeUnretainedValue()
            if status < 0 {
                me.callback?(.failure(UVError(code: status, operation: "uv_poll")))
            } else {
                me.callback?(.success(Events(rawValue: events)))
            }
        }
    }

    /// Stops watching (``start(_:_:)`` resumes).
    public func stop() { uv_poll_stop(poll) }

    override func willClose() {
        uv_poll_stop(poll)
        callback = nil
    }
}
