import FlowSyncCore

/// A row as the user touched it: its identity, kept for an action that runs later (a
/// swipe action tapped seconds after the swipe began, a menu, a confirmation).
///
/// An index path names whatever row is there *now*; after a remote change it may be
/// another row. A handle names the row the user saw, by ID, so a deferred delete can
/// never act on another row: ``ListPresenter/path(of:)`` finds where it is now, or
/// nothing when it is gone.
public struct RowHandle: Hashable, Sendable, CustomStringConvertible {
    /// The row's ID (unique in the list).
    public let rowID: String
    /// The ID of the section it was in when touched.
    public let sectionID: String
    /// Its content when touched (``Row/contentHash``): lets an action tell whether the
    /// row changed since.
    public let contentHash: UInt64
    /// Where it was when touched.
    public let pathWhenTouched: RowPath

    public init(rowID: String, sectionID: String, contentHash: UInt64, pathWhenTouched: RowPath) {
        self.rowID = rowID
        self.sectionID = sectionID
        self.contentHash = contentHash
        self.pathWhenTouched = pathWhenTouched
    }

    public var description: String { "row \(rowID) (touched at \(pathWhenTouched))" }
}
