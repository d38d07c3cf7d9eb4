import FlowSyncCore

/// The lifecycle of a ``Server``, as a pure state machine: created → recovered →
/// running → shutting down → stopped, with *failed* reachable from every state once the
/// store fails a write or an fsync. Each case carries what only means something in it
/// (when the server started, the shutdown's deadline and completion, the storage
/// error), so there are no loose flags to keep consistent. The server logs every
/// transition and carries out what the events return; the machine reads no clock.
///
/// ```
/// created ──recovered──▶ recovered ──started──▶ running ──shutdownRequested──▶ shuttingDown
///    └──────────────started (recovers first)──────┘                                  │ drained
///  any ──storageFailed──▶ failed (a shutdown requested before or after is kept)      ▼
///                                      failed ──drained (with a shutdown)──▶ stopped
/// ```
struct ServerLifecycle {
    /// A shutdown in progress.
    struct ShuttingDown {
        /// Loop time (ms) after which every remaining connection is cut.
        var deadline: UInt64
        /// Runs once, when every connection is closed and no offloaded work is left.
        var completion: () -> Void
    }

    /// The store failed: nothing is sent any more, and the only way on is a restart.
    struct Failed {
        var error: StoreError
        /// Loop time (ms) the server started, if it did (for `uptime.ms`).
        var startedAt: UInt64?
        /// Whether the end of a turn has closed every connection since the failure.
        var connectionsClosed = false
        /// A shutdown requested before or after the failure still completes.
        var shutdown: ShuttingDown?
    }

    private enum State {
        /// Not recovered from the store yet.
        case created
        /// Lists recovered; not listening yet.
        case recovered
        /// Listening since `startedAt` (loop time, ms).
        case running(startedAt: UInt64)
        case shuttingDown(ShuttingDown, startedAt: UInt64?)
        case failed(Failed)
        /// The shutdown completed; `failure` if the store failed (possibly on close).
        case stopped(failure: StoreError?)
    }

    /// What ``drained(connections:offloads:)`` asks the server to do.
    struct Finish {
        /// Close the store cleanly (false after a storage failure: abandon it instead).
        var closeStore: Bool
        var completion: () -> Void
    }

    private var state: State = .created

    // MARK: Reading the state

    /// A one-word name of the state, for the log.
    var name: String {
        switch state {
        case .created: return "created"
        case .recovered: return "recovered"
        case .running: return "running"
        case .shuttingDown: return "shutting down"
        case .failed: return "failed"
        case .stopped: return "stopped"
        }
    }

    /// Whether ``recovered()`` has happened.
    var hasRecovered: Bool {
        if case .created = state { return false }
        return true
    }

    /// The storage error that failed the server, if any.
    var storageFailure: StoreError? {
        switch state {
        case .failed(let failed): return failed.error
        case .stopped(let failure): return failure
        default: return nil
        }
    }

    /// The shutdown's deadline (loop time, ms), while one is in progress.
    var shutdownDeadline: UInt64? {
        switch state {
        case .shuttingDown(let shutdown, _): return shutdown.deadline
        case .failed(let failed): return failed.shutdown?.deadline
        default: return nil
        }
    }

    /// Whether a shutdown was requested and has not completed: new connections are refused.
    var isShuttingDown: Bool { shutdownDeadline != nil }

    /// Loop time (ms) the server started listening; 0 before.
    var startedAt: UInt64 {
        switch state {
        case .running(let startedAt): return startedAt
        case .shuttingDown(_, let startedAt): return startedAt ?? 0
        case .failed(let failed): return failed.startedAt ?? 0
        case .created, .recovered, .stopped: return 0
        }
    }

    // MARK: Events

    /// The store's lists were recovered.
    mutating func recovered() {
        guard case .created = state else {
            preconditionFailure(
                "Internal inconsistency in ServerLifecycle: recovered in state \(name) (recover() called twice)")
        }
        state = .recovered
    }

    /// The listener is up at loop time `now`.
    mutating func started(now: UInt64) {
        switch state {
        case .recovered:
            state = .running(startedAt: now)
        case .failed(var failed) where failed.startedAt == nil:
            // The store failed between recovery and start (a new epoch's snapshot).
            failed.startedAt = now
            state = .failed(failed)
        default:
            preconditionFailure("Internal inconsistency in ServerLifecycle: started in state \(name)")
        }
    }

    /// What ``shutdownRequested(now:grace:completion:)`` asks the server to do.
    enum ShutdownAction: Equatable {
        /// Stop accepting, seal, say goodbye to every client, flush.
        case begin
        /// A shutdown is already in progress: its completion runs; this one is dropped.
        case none
        /// Already stopped: run this completion now.
        case completeNow
    }

    /// A graceful shutdown was asked for at loop time `now`, to finish by
    /// `now + grace` ms.
    mutating func shutdownRequested(now: UInt64, grace: UInt64, completion: @escaping () -> Void) -> ShutdownAction {
        let shutdown = ShuttingDown(deadline: now + grace, completion: completion)
        switch state {
        case .created, .recovered:
            state = .shuttingDown(shutdown, startedAt: nil)
        case .running(let startedAt):
            state = .shuttingDown(shutdown, startedAt: startedAt)
        case .failed(var failed):
            guard failed.shutdown == nil else { return .none }
            failed.shutdown = shutdown
            state = .failed(failed)
        case .shuttingDown:
            return .none
        case .stopped:
            return .completeNow
        }
        return .begin
    }

    /// The store failed a write or a sync. Returns whether this is the first failure
    /// (the server then discards what is queued and reports it once).
    mutating func storageFailed(_ error: StoreError) -> Bool {
        switch state {
        case .created, .recovered:
            state = .failed(Failed(error: error, startedAt: nil))
        case .running(let startedAt):
            state = .failed(Failed(error: error, startedAt: startedAt))
        case .shuttingDown(let shutdown, let startedAt):
            state = .failed(Failed(error: error, startedAt: startedAt, shutdown: shutdown))
        case .stopped(failure: nil):
            // Closing the store at the end of a shutdown failed.
            state = .stopped(failure: error)
        case .failed, .stopped:
            return false
        }
        return true
    }

    /// The end of a loop turn after a failure: returns `true` once, when the server must
    /// close its listener and every connection (never inside a callback).
    mutating func closeAfterFailure() -> Bool {
        guard case .failed(var failed) = state, !failed.connectionsClosed else { return false }
        failed.connectionsClosed = true
        state = .failed(failed)
        return true
    }

    /// The server has `connections` open and `offloads` works on the thread pool.
    /// Returns what to do when a shutdown is in progress and both are 0 (then the
    /// machine is stopped); `nil` otherwise. Offloaded work counts because its completion
    /// may install a compaction: the store must not be closed under it.
    mutating func drained(connections: Int, offloads: Int) -> Finish? {
        guard connections == 0, offloads == 0 else { return nil }
        switch state {
        case .shuttingDown(let shutdown, _):
            state = .stopped(failure: nil)
            return Finish(closeStore: true, completion: shutdown.completion)
        case .failed(let failed):
            guard let shutdown = failed.shutdown else { return nil }
            state = .stopped(failure: failed.error)
            return Finish(closeStore: false, completion: shutdown.completion)
        default:
            return nil
        }
    }
}
