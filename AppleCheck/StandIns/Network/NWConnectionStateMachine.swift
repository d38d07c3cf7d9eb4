import Security

/// The lifecycle of one stand-in NWConnection, without a socket: events in, actions out.
///
/// ```
///   setup ──start──▶ preparing ──connected──▶ ready ──ioFailed──▶ failed
///     │                 │  └──tls parameters──────────────────────▶ failed
///     │                 └──connectFailed──▶ waiting
///     └──────────── cancel (from any state but cancelled) ──────────▶ cancelled
/// ```
///
/// The rules it models, from Apple's documentation of NWConnection.State:
/// 1. `setup` until `start(queue:)`; then `preparing` while establishing.
/// 2. `ready` when the TCP connection is up.
/// 3. `waiting(error)` when it "couldn't be established" — "these errors are not fatal"
///    (Apple retries on a network path change; the stand-in has no path monitor, so it stays
///    there until cancelled). Refused, unreachable, timed out and unresolvable all land here.
/// 4. `failed(error)` when an established connection breaks (reset, EPIPE), and — the
///    stand-in's own rule — at start when the parameters ask for TLS, which it cannot do:
///    `.tls(errSecUnimplemented)`.
/// 5. `cancelled` after `cancel()`, from any other state (after `failed` too, as Apple's
///    nw_connection_cancel releases a failed connection). Nothing follows `cancelled`.
///
/// What it does not model: `restart()`, path changes, viability, better-path events.
struct NWConnectionStateMachine {
    /// The stand-in's view of the connection. Each case is an NWConnection.State too.
    enum State {
        case setup
        case preparing
        case ready
        case waiting(NWError)
        case failed(NWError)
        case cancelled
    }

    /// What the shell must do, in order.
    enum Action {
        /// Tell the state update handler (on the connection's queue).
        case report(NWConnection.State)
        /// Resolve the host and start a non-blocking connect.
        case connect
        /// The connection is up: start serving queued receives and sends.
        case startIO
        /// Cancel the socket's Dispatch sources and close it (if there is one).
        case closeSocket
        /// Complete every queued receive and send with this error.
        case failPendingOperations(NWError)
    }

    private(set) var state: State = .setup

    /// `start(queue:)`. A second start is ignored.
    mutating func start(usesTLS: Bool) -> [Action] {
        guard case .setup = state else { return [] }
        if usesTLS {
            let error = NWError.tls(errSecUnimplemented)
            state = .failed(error)
            return [.report(.preparing), .report(.failed(error)), .failPendingOperations(error)]
        }
        state = .preparing
        return [.report(.preparing), .connect]
    }

    /// The non-blocking connect completed.
    mutating func connected() -> [Action] {
        switch state {
        case .preparing:
            state = .ready
            return [.report(.ready), .startIO]
        case .cancelled:
            return []  // a cancel won the race; its closeSocket already ran
        case .setup, .ready, .waiting, .failed:
            preconditionFailure("Internal inconsistency in NWConnectionStateMachine: connected in \(state)")
        }
    }

    /// Resolving or connecting failed (every address tried).
    mutating func connectFailed(_ error: NWError) -> [Action] {
        switch state {
        case .preparing:
            state = .waiting(error)
            return [.closeSocket, .report(.waiting(error))]
        case .cancelled:
            return []
        case .setup, .ready, .waiting, .failed:
            preconditionFailure("Internal inconsistency in NWConnectionStateMachine: connectFailed in \(state)")
        }
    }

    /// A read or write on the established connection failed.
    mutating func ioFailed(_ error: NWError) -> [Action] {
        guard case .ready = state else { return [] }  // already failed or cancelled
        state = .failed(error)
        return [.closeSocket, .report(.failed(error)), .failPendingOperations(error)]
    }

    /// `cancel()` after `start(queue:)`.
    mutating func cancel() -> [Action] {
        switch state {
        case .cancelled:
            return []
        case .setup:
            // Never started: there is no queue to report on (the shell handles a cancel
            // before start without the machine); reaching here is a shell bug.
            preconditionFailure(
                "Internal inconsistency in NWConnectionStateMachine: cancel before start reached the machine")
        case .preparing, .ready, .waiting, .failed:
            state = .cancelled
            return [.closeSocket, .failPendingOperations(.posix(.ECANCELED)), .report(.cancelled)]
        }
    }

    /// Whether receives and sends may touch the socket now.
    var isReady: Bool {
        if case .ready = state { return true }
        return false
    }

    /// Whether queued operations should be completed at once with an error (after the
    /// connection failed or was cancelled).
    var terminalError: NWError? {
        switch state {
        case .failed(let error): return error
        case .cancelled: return .posix(.ECANCELED)
        case .setup, .preparing, .ready, .waiting: return nil
        }
    }
}
