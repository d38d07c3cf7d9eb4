/// The identity of one client mutation, `(clientID, seq)`: it makes a retried write
/// idempotent and lets a writer find its own edits in a diff. One type for the
/// sequencer, the wire protocol and the SDK.
public struct MutationID: Hashable, Sendable, CustomStringConvertible {
    /// The writer's stable client ID (from its handshake).
    public var clientID: String
    /// The writer's sequence number for the mutation.
    public var seq: UInt64

    /// Creates an identity.
    public init(clientID: String, seq: UInt64) {
        self.clientID = clientID
        self.seq = seq
    }

    public var description: String { "\(clientID)#\(seq)" }
}
