/// Ends the subscription to one list. The server sends nothing back; frames of the list
/// already in flight may still arrive and are to be ignored.
public struct Unsubscribe: Hashable, Sendable {
    /// The list's name.
    public var listName: String

    /// Creates an Unsubscribe.
    public init(listName: String) { self.listName = listName }
}
