import FlowSyncCore
import FlowSyncProtocol

/// Why a write, a subscription or the client failed.
///
/// Server verdicts keep the server's ``ErrorCode`` (the same numbers as
/// `docs/PROTOCOL.md`, "Error codes"), so an app can branch on `code` whatever the
/// message says.
public enum FlowSyncError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The edit does not apply to the local replica (an index out of range, an unknown
    /// section, a duplicate ID): nothing was shown and nothing was sent.
    case invalidEdit(MutationError)
    /// The server refused the write (a Reject): nothing of it was applied, and its
    /// optimistic change was rolled back.
    case rejected(code: ErrorCode, message: String)
    /// The server reported an error about a list (unknown list, forbidden, too many
    /// lists…): the subscription is stopped and the list's pending writes failed.
    case listFailed(code: ErrorCode, message: String)
    /// The server refused the connection for good (a wrong protocol version, a bad
    /// token…), so the client stopped reconnecting.
    case connectionRefused(code: ErrorCode, message: String)
    /// A model could not be encoded or decoded (its JSON payload).
    case modelCoding(String)
    /// The client (or the list's handle) was closed before the answer arrived.
    case closed
    /// ``PersistenceOptions/directory`` cannot be used: it cannot be created, or another
    /// client (in this process or another, such as an app extension) has it open. The
    /// client is not created: lists asked to survive a relaunch are never silently kept
    /// in memory only.
    case persistenceUnavailable(String)

    /// The server's code, when the error came from the server.
    public var code: ErrorCode? {
        switch self {
        case .rejected(let code, _), .listFailed(let code, _), .connectionRefused(let code, _): return code
        case .invalidEdit(let error): return ErrorCode(for: error.reason)
        case .modelCoding, .closed, .persistenceUnavailable: return nil
        }
    }

    public var description: String {
        switch self {
        case .invalidEdit(let error): return "invalid edit: \(error)"
        case .rejected(let code, let message): return "rejected (\(code)): \(message)"
        case .listFailed(let code, let message): return "list failed (\(code)): \(message)"
        case .connectionRefused(let code, let message): return "connection refused (\(code)): \(message)"
        case .modelCoding(let detail): return "model coding: \(detail)"
        case .closed: return "closed"
        case .persistenceUnavailable(let detail): return "persistence directory unavailable: \(detail)"
        }
    }
}
