/// A writer's mutation as the sequencer sees it: who sent it, its place in that
/// writer's sequence, the version it was made against, and its atomic group of ops.
public struct MutationRequest: Hashable, Sendable {
    /// The writer's stable client ID (from its handshake).
    public var clientID: String
    /// The writer's sequence number for this mutation (rises per mutation).
    public var seq: UInt64
    /// The list version the writer last saw when it made the mutation. Epoch 0 means
    /// "at head": the operations apply to the current state, whatever its version
    /// (real epochs are never 0).
    public var base: ListVersion
    /// The operations, applied all or none.
    public var operations: [Operation]

    public init(clientID: String, seq: UInt64, base: ListVersion, operations: [Operation]) {
        self.clientID = clientID
        self.seq = seq
        self.base = base
        self.operations = operations
    }
}

/// Why the sequencer refused a mutation.
public enum SequencerRejection: Error, Hashable, Sendable, CustomStringConvertible {
    /// The group is invalid against the state it was applied to.
    case invalid(MutationError)
    /// The base version is of another epoch, or older than the history kept: the
    /// writer must resync before writing again.
    case staleBase(base: ListVersion, oldestKept: ListVersion)
    /// The base version is newer than anything committed (a confused client).
    case futureBase(base: ListVersion, current: ListVersion)
    /// A retry of a sequence number older than the idempotency window: it may or may
    /// not have been applied, and the server can no longer tell.
    case retryOutsideWindow(seq: UInt64, oldestRemembered: UInt64)

    public var description: String {
        switch self {
        case .invalid(let e): return "invalid mutation: \(e)"
        case .staleBase(let b, let o): return "base \(b) is older than the oldest kept version \(o): resync"
        case .futureBase(let b, let c): return "base \(b) is newer than the current version \(c)"
        case .retryOutsideWindow(let seq, let oldest):
            return
                "sequence number \(seq) is older than the idempotency window (oldest remembered \(oldest)): its fate is unknown, resync"
        }
    }
}
