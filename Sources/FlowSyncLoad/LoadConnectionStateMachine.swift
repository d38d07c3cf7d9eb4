/// The lifecycle of one load-client connection, as a state machine (house style: the
/// I/O shell in ``LoadConnection`` only carries out the returned actions).
///
/// ```
/// idle ─connect─▶ connecting ─connected─▶ awaitingWelcome ─welcome─▶ ready
///   ▲                 │ failed                 │ other message / end      │ end / error
///   └──── reconnect ── closed ◀─────────────────┴──────────────────────────┘
/// ```
public struct LoadConnectionStateMachine: Sendable {
    private enum State: Sendable {
        case idle
        case connecting
        case awaitingWelcome
        case ready
        case closed(reason: String, failed: Bool)
    }

    /// What the shell must do.
    public enum Action: Equatable, Sendable {
        /// Open the TCP connection.
        case connect
        /// Send the Hello.
        case sendHello
        /// The handshake is done: subscribe / start writing.
        case becomeReady
        /// Hand the message to the role (subscriber, writer, control).
        case deliver
        /// Record a protocol error with this text and close.
        case protocolError(String)
        /// Record a failed connection attempt with this text.
        case connectionFailed(String)
        /// Record the end of a connection (not an error by itself).
        case ended
        /// Nothing to do (a late event after close).
        case none
    }

    private var state: State = .idle

    /// A machine in the idle state.
    public init() {}

    /// True once the Welcome arrived and until the connection ends.
    public var isReady: Bool { if case .ready = state { return true } else { return false } }

    /// True when closed (after a failure or an end).
    public var isClosed: Bool { if case .closed = state { return true } else { return false } }

    /// The caller wants a connection (first time, or a reconnect after ``closed``).
    public mutating func connectRequested() -> Action {
        switch state {
        case .idle, .closed:
            state = .connecting
            return .connect
        case .connecting, .awaitingWelcome, .ready:
            preconditionFailure("Internal inconsistency in LoadConnectionStateMachine: connect while \(state)")
        }
    }

    /// TCP connected.
    public mutating func connected() -> Action {
        guard case .connecting = state else { return .none }
        state = .awaitingWelcome
        return .sendHello
    }

    /// TCP connect failed.
    public mutating func connectFailed(_ error: String) -> Action {
        guard case .connecting = state else { return .none }
        state = .closed(reason: error, failed: true)
        return .connectionFailed(error)
    }

    /// A message arrived; `isWelcome` tells whether it is the Welcome.
    public mutating func received(isWelcome: Bool, isError: Bool) -> Action {
        switch state {
        case .awaitingWelcome:
            if isWelcome {
                state = .ready
                return .becomeReady
            }
            // Before the Welcome only an Error is legal (the server refused us).
            return .protocolError(isError ? "server refused the handshake" : "message before the Welcome")
        case .ready:
            return isWelcome ? .protocolError("a second Welcome") : .deliver
        case .idle, .connecting, .closed:
            return .none
        }
    }

    /// The bytes could not be framed or decoded.
    public mutating func undecodable(_ error: String) -> Action {
        switch state {
        case .closed, .idle: return .none
        default:
            state = .closed(reason: error, failed: true)
            return .protocolError(error)
        }
    }

    /// The stream ended (peer closed, reset, or we closed it).
    public mutating func ended(_ reason: String) -> Action {
        switch state {
        case .closed, .idle: return .none
        case .connecting:
            state = .closed(reason: reason, failed: true)
            return .connectionFailed(reason)
        case .awaitingWelcome, .ready:
            state = .closed(reason: reason, failed: false)
            return .ended
        }
    }
}
