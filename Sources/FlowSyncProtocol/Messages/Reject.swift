/// The server refused a ``Mutate``; nothing of it was applied.
public struct Reject: Hashable, Sendable {
    /// The list's name.
    public var listName: String
    /// The refused mutation's sequence number.
    public var seq: UInt64
    /// Why; ``ErrorCode/reaction`` says what to do.
    public var code: ErrorCode
    /// A human-readable detail (which op, which ID).
    public var message: String

    /// Creates a Reject.
    public init(listName: String, seq: UInt64, code: ErrorCode, message: String) {
        self.listName = listName
        self.seq = seq
        self.code = code
        self.message = message
    }
}
