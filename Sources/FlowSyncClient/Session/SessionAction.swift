import FlowSyncCore
import FlowSyncProtocol

/// What the session asks its I/O shell to do. The shell carries the actions out in
/// order and feeds the outcomes back as session inputs.
enum SessionAction: Sendable {
    /// Open a connection to this endpoint.
    case connect(Endpoint)
    /// Encode and write a message.
    case send(Message)
    /// Close the connection (a ``ClientSession/transportClosed(reason:)`` follows).
    case disconnect(reason: String)
    /// Call ``ClientSession/reconnectDue()`` after this many milliseconds.
    case scheduleReconnect(milliseconds: UInt64)
    /// Use this preset dictionary for compression, both ways (from the Welcome).
    case useDictionary(CompressionDictionary?)
    /// A visible change of a list, with the view right after it.
    case deliver(
        list: String, cause: ListChange.Cause, changeset: Changeset, view: Director, version: ListVersion?, pending: Int
    )
    /// The outcome of write `seq` of a list.
    case complete(list: String, seq: UInt64, Result<ListVersion, FlowSyncError>)
    /// The list failed for good (its observers end with this error).
    case listFailed(list: String, FlowSyncError)
    /// The answer to a stats request.
    case stats(requestID: UInt64, Result<StatsReply, FlowSyncError>)
    /// The answer to a backup request.
    case backup(requestID: UInt64, Result<BackupReply, FlowSyncError>)
    /// The connection status changed.
    case status(ConnectionStatus)
}

/// The client's connection, as the app sees it.
public enum ConnectionStatus: Sendable, Hashable, CustomStringConvertible {
    /// Connecting or in the handshake.
    case connecting
    /// Ready: subscriptions and writes flow.
    case connected(server: String)
    /// Offline: the connection was lost (or never made); the client tries again after
    /// the delay, counted from when this status was delivered.
    /// ``FlowSyncClient/reconnectNow()`` tries at once.
    case disconnected(reason: String, retryInMilliseconds: UInt64)
    /// Offline on purpose: the app called ``FlowSyncClient/pause()``; nothing is tried
    /// until ``FlowSyncClient/resume()``.
    case paused
    /// The client stopped for good: closed by the app (`nil`) or refused by the server.
    case closed(FlowSyncError?)

    public var description: String {
        switch self {
        case .connecting: return "connecting"
        case .connected(let server): return "connected to \(server)"
        case .disconnected(let reason, let ms): return "disconnected (\(reason)); retry in \(ms) ms"
        case .paused: return "paused"
        case .closed(let error): return error.map { "closed: \($0)" } ?? "closed"
        }
    }
}
