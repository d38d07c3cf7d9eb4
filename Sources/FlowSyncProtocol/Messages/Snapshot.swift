import FlowSyncCore

/// A whole list at one position: what a new or resyncing subscriber starts from.
public struct Snapshot: Hashable, Sendable {
    /// Why the server sent a snapshot rather than diffs.
    public enum Reason: UInt8, Hashable, Sendable, CaseIterable {
        /// The Subscribe had no resume position.
        case freshSubscribe = 0
        /// The resume position is older than the server's history.
        case resumeTooOld = 1
        /// The resume position belongs to another epoch (history was reset).
        case epochChanged = 2
        /// The client asked for it, or its digest did not match, or it fell too far
        /// behind (a slow consumer catching up).
        case resyncRequested = 3
    }

    /// The list's name.
    public var listName: String
    /// The position the sections are at.
    public var position: ListVersion
    /// The digest of `sections`; the receiver checks it after building its replica.
    public var digest: StateDigest
    /// Why this snapshot was sent.
    public var reason: Reason
    /// Every section, in order, with its rows.
    public var sections: [Section]

    /// Creates a Snapshot.
    public init(listName: String, position: ListVersion, digest: StateDigest, reason: Reason, sections: [Section]) {
        self.listName = listName
        self.position = position
        self.digest = digest
        self.reason = reason
        self.sections = sections
    }
}
