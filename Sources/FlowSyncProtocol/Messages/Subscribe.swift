import FlowSyncCore

/// Starts (or resumes) the subscription to one list. A connection holds at most one
/// subscription per list name.
///
/// Without ``resumeFrom`` the server answers with a ``Snapshot``. With it, the server
/// sends the ``Diff``s after that position if its history still holds them (an empty
/// Diff with `fromVersion == toVersion` when the client is already current), or else a
/// ``Snapshot`` whose ``Snapshot/reason`` says why.
public struct Subscribe: Hashable, Sendable {
    /// The list's name.
    public var listName: String
    /// The position of the client's replica, when it has one.
    public var resumeFrom: ListVersion?
    /// The replica's digest at ``resumeFrom``; a server that finds another digest at
    /// that position answers with a snapshot (the replica drifted).
    public var digest: StateDigest?

    /// Creates a Subscribe.
    public init(listName: String, resumeFrom: ListVersion? = nil, digest: StateDigest? = nil) {
        self.listName = listName
        self.resumeFrom = resumeFrom
        self.digest = digest
    }
}
