/// What a transport reports about its connection.
public enum TransportEvent: Sendable {
    /// The connection is open.
    case connected
    /// Bytes arrived (any split: the session's decoder reassembles frames).
    case received([UInt8])
    /// The connection closed, or could not be opened; the reason is for logs.
    case closed(reason: String)
}

/// A byte stream to the server, with timers — everything the client needs from the
/// platform. The session logic never sees it. The default is the platform's:
/// ``NetworkTransport`` (Network.framework, TLS per ``TLSPolicy``) on Apple platforms,
/// ``LibUVTransport`` (a libuv loop on its own thread) on Linux, ``POSIXSocketTransport``
/// elsewhere; an app can plug in its own, which then owns TLS (docs/SDK.md,
/// "Transports and TLS").
///
/// Contract:
/// - At most one connection at a time; events of a connection arrive in order, on the
///   transport's own thread, through the handler given to ``connect(host:port:handler:)``.
///   After ``disconnect()`` or a `.closed` event, no more events of that connection arrive.
/// - ``send(_:)`` writes in call order; it may be called from any thread.
public protocol ClientTransport: AnyObject, Sendable {
    /// Opens a connection; exactly one `.connected` or `.closed` follows, then data.
    func connect(host: String, port: Int, handler: @escaping @Sendable (TransportEvent) -> Void)
    /// Queues bytes for the current connection (dropped when there is none).
    func send(_ chunks: [[UInt8]])
    /// Closes the current connection; a `.closed` event follows.
    func disconnect()
    /// Runs `work` once, after `milliseconds`, on the transport's thread.
    func schedule(after milliseconds: UInt64, _ work: @escaping @Sendable () -> Void)
    /// Stops the transport's thread; nothing runs after it returns.
    func shutdown()
}
