import FlowSyncCore

extension ErrorCode {
    /// The wire code for a director's refusal of a mutation, so the daemon can turn a
    /// ``MutationError`` into a ``Reject`` without a table of its own.
    ///
    /// `MutationError.Reason` is an open set; a reason added to the core later, and not
    /// yet mapped here, becomes ``ErrorCode/conflict`` (the writer resyncs and decides),
    /// never a trap.
    public init(for reason: MutationError.Reason) {
        switch reason {
        case .indexOutOfRange: self = .indexOutOfRange
        case .duplicateID: self = .duplicateID
        case .unknownSection: self = .unknownSection
        case .unknownRow: self = .unknownRow
        case .limitExceeded: self = .limitExceeded
        case .invalidID: self = .invalidID
        case .conflict: self = .conflict
        default: self = .conflict
        }
    }
}
