/// Asks the server for its counters (the `flowsync stats` CLI command).
public struct StatsRequest: Hashable, Sendable {
    /// Echoed in the ``StatsReply`` to match answers to requests.
    public var requestID: UInt64
    /// One list's stats, or `nil` for the server's.
    public var listName: String?

    /// Creates a request.
    public init(requestID: UInt64, listName: String? = nil) {
        self.requestID = requestID
        self.listName = listName
    }
}
