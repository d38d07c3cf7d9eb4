/// The server's asynchronous commits (a ``CommittingStore``; docs/ARCHITECTURE.md,
/// "Storage", rule 7): the gate that holds the frames of batches whose commit has not
/// returned, and whether a graceful shutdown waits for them before it closes the
/// connections (so the frames of the last batches are not dropped).
struct PendingCommits {
    /// The frames of batches whose asynchronous commit has not returned, by connection.
    var gate = CommitGate<Int, [UInt8]>()
    /// A shutdown closes the connections once the gate has no pending commit.
    var closeConnectionsWhenDrained = false
}
