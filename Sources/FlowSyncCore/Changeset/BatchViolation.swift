/// A UIKit batch-update consistency rule that a changeset stage breaks.
///
/// Each rule mirrors an `NSInternalInconsistencyException` that `performBatchUpdates`
/// would raise on a device, so a bad changeset is caught here, in a test or on the
/// server, instead of crashing an app.
public struct BatchViolation: Error, Hashable, Sendable, CustomStringConvertible {
    /// The rule broken; compare with the static members.
    public struct Rule: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }

        /// A section index is outside the state it refers to.
        public static let sectionOutOfRange = Rule("section index out of range")
        /// A row index path is outside the state it refers to.
        public static let rowOutOfRange = Rule("row index out of range")
        /// A section index is deleted/moved twice, or inserted/moved-to twice.
        public static let duplicateSection = Rule("section index used twice")
        /// An index path is deleted/moved/reloaded twice, or inserted/moved-to twice.
        public static let duplicateRow = Rule("index path used twice")
        /// A row is reloaded and also deleted or moved in the same batch.
        public static let deleteAndReload = Rule("delete or move and reload of the same index path")
        /// A row is deleted, reloaded or moved out of a section deleted in the same batch.
        public static let rowInDeletedSection = Rule("row change inside a deleted section")
        /// A row is inserted or moved into a section inserted in the same batch.
        public static let rowIntoInsertedSection = Rule("row inserted into an inserted section")
        /// Sections after ≠ before − deleted + inserted.
        public static let sectionCountMismatch = Rule("invalid number of sections")
        /// Rows in a section after ≠ before − deleted − moved out + inserted + moved in.
        public static let rowCountMismatch = Rule("invalid number of rows in section")
        /// Applying would put a second element with an existing ID in the director.
        public static let duplicateID = Rule("duplicate ID")
        /// A reload carries a row whose ID differs from the row it reloads.
        public static let reloadChangesID = Rule("reload changes the row ID")

        public var description: String { name }
    }

    public let rule: Rule
    public let message: String

    public init(_ rule: Rule, _ message: String) {
        self.rule = rule
        self.message = message
    }

    public var description: String { "\(rule): \(message)" }
}

/// Why ``Changeset/apply(to:)`` refused a changeset; the director is unchanged.
public struct ChangesetApplyError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Index of the offending stage.
    public let stage: Int
    public let violation: BatchViolation
    public var description: String { "stage \(stage): \(violation)" }
}
