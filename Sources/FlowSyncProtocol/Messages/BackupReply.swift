/// The answer to a ``BackupRequest``: the backup is complete and durable (``failure`` is
/// `nil`), or it was refused or failed, with a code from the catalog and the reason.
public struct BackupReply: Hashable, Sendable {
    /// The request's ID.
    public var requestID: UInt64
    /// `nil` when the backup was written; otherwise why not: ``ErrorCode/forbidden``
    /// (the token may not read every list), ``ErrorCode/overloaded`` (a backup is already
    /// running), ``ErrorCode/serverShuttingDown``, or ``ErrorCode/backupRefused`` (the
    /// directory, or a write; the message says which). Sent as `u16` 0 when `nil`.
    public var failure: ErrorCode?
    /// Human-readable: where the backup is, or why there is none.
    public var message: String
    /// Lists written (0 when refused).
    public var lists: UInt64
    /// Bytes written (0 when refused).
    public var bytes: UInt64

    /// Creates a reply.
    public init(requestID: UInt64, failure: ErrorCode?, message: String, lists: UInt64 = 0, bytes: UInt64 = 0) {
        self.requestID = requestID
        self.failure = failure
        self.message = message
        self.lists = lists
        self.bytes = bytes
    }
}
