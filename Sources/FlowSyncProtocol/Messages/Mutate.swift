import FlowSyncCore

/// An atomic group of operations from a writer, made against `base`. The server
/// transforms it over the batches committed since `base`, applies all of it or none,
/// and answers with an ``Ack`` or a ``Reject`` carrying the same `seq`.
public struct Mutate: Hashable, Sendable {
    /// The list's name.
    public var listName: String
    /// The writer's stable client ID.
    public var clientID: String
    /// The writer's sequence number; a retry reuses it, so a mutation is committed at
    /// most once.
    public var seq: UInt64
    /// The position the writer's replica was at when it made the operations.
    public var base: ListVersion
    /// The operations, applied in order, atomically.
    public var operations: [Operation]

    /// Creates a Mutate.
    public init(listName: String, clientID: String, seq: UInt64, base: ListVersion, operations: [Operation]) {
        self.listName = listName
        self.clientID = clientID
        self.seq = seq
        self.base = base
        self.operations = operations
    }

    /// The mutation's identity.
    public var id: MutationID { MutationID(clientID: clientID, seq: seq) }
}
