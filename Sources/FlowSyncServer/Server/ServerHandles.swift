import FlowSyncLoop

/// The server's own libuv handles: the listeners, the end-of-turn hook, the 100 ms sweep
/// and the `fsync = "interval"` timer. All are created by `start` and closed at the end
/// of a shutdown (the listeners at its beginning), so the loop stops with none open.
struct ServerHandles {
    var listener: TCPListener?
    /// The Unix-domain listener (`server.unix_socket`), when configured.
    var unixListener: UnixListener?
    /// The check hook: the end of every loop turn (`Server.endOfTurn()`).
    var hook: LoopHook?
    /// Every 100 ms: deadlines and the shutdown's grace period.
    var sweep: LoopTimer?
    /// The `fsync = "interval"` timer.
    var syncTimer: LoopTimer?

    /// Stops accepting: both listeners close.
    mutating func closeListeners() {
        listener?.close()
        listener = nil
        unixListener?.close()
        unixListener = nil
    }

    /// The end of a shutdown: the hook and the timers close.
    mutating func closeTimers() {
        hook?.close()
        sweep?.close()
        syncTimer?.close()
        hook = nil
        sweep = nil
        syncTimer = nil
    }
}
