/// An error the server reports outside a mutation's answer: about one subscription
/// (with ``listName``), or about the whole connection, which it then closes.
public struct ErrorMessage: Hashable, Sendable {
    /// What went wrong.
    public var code: ErrorCode
    /// A human-readable detail.
    public var message: String
    /// What the client should do (usually ``ErrorCode/reaction``, but the server may
    /// choose, for example, a longer back-off).
    public var reaction: ClientReaction
    /// The list concerned, or `nil` for a connection-level error.
    public var listName: String?
    /// True when the sender closes the connection after this frame; no further frame
    /// will follow.
    public var closesConnection: Bool

    /// Creates an error; the reaction defaults to the code's.
    public init(
        code: ErrorCode, message: String, reaction: ClientReaction? = nil, listName: String? = nil,
        closesConnection: Bool = true
    ) {
        self.code = code
        self.message = message
        self.reaction = reaction ?? code.reaction
        self.listName = listName
        self.closesConnection = closesConnection
    }
}
