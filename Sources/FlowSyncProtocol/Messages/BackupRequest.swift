/// Asks the server to write a consistent backup of every list into a new directory on
/// the server's machine (the `flowsync backup` CLI command; docs/STORAGE.md, "Backup and
/// restore"). Needs a token that may read every list (`read: ["*"]`), or auth off.
/// Answered by one ``BackupReply`` with the same ``requestID`` once the backup is on
/// disk, or at once when it is refused.
public struct BackupRequest: Hashable, Sendable {
    /// Echoed in the ``BackupReply``.
    public var requestID: UInt64
    /// An absolute path on the server's machine: missing, or an empty directory.
    public var directory: String

    /// Creates a request.
    public init(requestID: UInt64, directory: String) {
        self.requestID = requestID
        self.directory = directory
    }
}
