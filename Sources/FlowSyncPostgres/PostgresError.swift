/// Why a statement or a connection failed.
public enum PostgresError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The server answered the statement with an error (SQLSTATE and message).
    case server(sqlState: String, message: String)
    /// The connection could not be opened, or was lost. A statement that was in flight
    /// may or may not have committed: read the state back to find out.
    case connection(String)
    /// The connection was closed by this side before the statement completed.
    case closed
    /// libpq returned results in an order its documentation does not allow.
    case protocolViolation(String)

    public var description: String {
        switch self {
        case .server(let state, let message): return "PostgreSQL error \(state): \(message)"
        case .connection(let message): return "PostgreSQL connection: \(message)"
        case .closed: return "PostgreSQL connection closed"
        case .protocolViolation(let message): return "PostgreSQL pipeline: \(message)"
        }
    }

    /// True when the statement's outcome is unknown (it may have committed).
    public var outcomeUnknown: Bool {
        switch self {
        case .connection, .closed: return true
        case .server, .protocolViolation: return false
        }
    }
}
