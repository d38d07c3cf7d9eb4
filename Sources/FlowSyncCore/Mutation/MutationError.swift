/// Why a mutation group was refused. The director is left exactly as it was.
///
/// A struct around an open set of reasons (rather than a public enum) so reasons can
/// be added without breaking clients that switch over them.
public struct MutationError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The category of failure; compare with the static members.
    public struct Reason: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case indexOutOfRange = "index out of range"
            case duplicateID = "duplicate ID"
            case unknownSection = "unknown section"
            case unknownRow = "unknown row"
            case limitExceeded = "limit exceeded"
            case invalidID = "invalid ID"
            case conflict = "conflict"
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// An index or index path does not exist in the state the op was applied to.
        public static let indexOutOfRange = Reason(.indexOutOfRange)
        /// A section or row ID is already used in the director (or twice in the op).
        public static let duplicateID = Reason(.duplicateID)
        /// No section has that ID.
        public static let unknownSection = Reason(.unknownSection)
        /// No row has that ID.
        public static let unknownRow = Reason(.unknownRow)
        /// A ``DirectorLimits`` bound would be exceeded.
        public static let limitExceeded = Reason(.limitExceeded)
        /// An ID is empty or too long.
        public static let invalidID = Reason(.invalidID)
        /// The operation's intention cannot survive a concurrent edit (a row moved or
        /// updated after another writer deleted it, an insert into a section another
        /// writer deleted). The message names the cause.
        public static let conflict = Reason(.conflict)

        public var description: String { base.rawValue }
    }

    /// Index of the failing operation within its group.
    public let opIndex: Int
    /// The category.
    public let reason: Reason
    /// A human-readable explanation naming the offending index or ID.
    public let message: String

    public init(opIndex: Int, reason: Reason, message: String) {
        self.opIndex = opIndex
        self.reason = reason
        self.message = message
    }

    public var description: String { "op \(opIndex): \(reason): \(message)" }
}
