import FlowSyncCore

/// The server committed a ``Mutate``: it is part of the batch at `committed`.
public struct Ack: Hashable, Sendable {
    /// The list's name.
    public var listName: String
    /// The acknowledged mutation's sequence number.
    public var seq: UInt64
    /// The position of the batch that contains it.
    public var committed: ListVersion

    /// Creates an Ack.
    public init(listName: String, seq: UInt64, committed: ListVersion) {
        self.listName = listName
        self.seq = seq
        self.committed = committed
    }
}
