/// The server's counters and gauges, as named integers (`connections`,
/// `list.version`, `bytes.out`…). Names are dotted and stable; the set may grow.
public struct StatsReply: Hashable, Sendable {
    /// One named value.
    public struct Entry: Hashable, Sendable {
        /// A dotted name.
        public var name: String
        /// The value (a count, a gauge, a size in bytes, a duration in microseconds).
        public var value: Int64

        /// Creates an entry.
        public init(name: String, value: Int64) {
            self.name = name
            self.value = value
        }
    }

    /// The request's ID.
    public var requestID: UInt64
    /// The values, in the server's order.
    public var entries: [Entry]

    /// Creates a reply.
    public init(requestID: UInt64, entries: [Entry]) {
        self.requestID = requestID
        self.entries = entries
    }
}
