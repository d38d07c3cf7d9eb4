/// The committed `(clientID, seq)` pairs a list remembers, so that a retried mutation
/// (resent after a reconnect, say) gets its original ack instead of being applied twice.
///
/// Bounded both ways: per client, the last ``Limits/perClient`` committed sequence
/// numbers; overall, ``Limits/clients`` clients, the least recently active forgotten
/// first. A retry older than what a client's window remembers is refused (its fate is
/// unknown), never applied blindly.
public struct DedupeWindow: Sendable {
    public struct Limits: Hashable, Sendable {
        /// Committed sequence numbers remembered per client. Default 1,024.
        public var perClient: Int
        /// Clients remembered per list. Default 100,000.
        public var clients: Int
        public init(perClient: Int = 1_024, clients: Int = 100_000) {
            self.perClient = perClient
            self.clients = clients
        }
    }

    private struct Client {
        var versions: [UInt64: ListVersion] = [:]
        /// Remembered sequence numbers, oldest first (for eviction).
        var order: [UInt64] = []
        /// Everything below this may have been committed and forgotten.
        var forgottenBelow: UInt64?
        var lastUse: UInt64 = 0

        mutating func remember(_ seq: UInt64, version: ListVersion, at clock: UInt64, perClient: Int) {
            versions[seq] = version
            order.append(seq)
            lastUse = clock
            if order.count > perClient {
                // Forget the oldest half-window at once: trimming one at a time would
                // make every commit pay an O(window) array shift.
                let drop = order.count - perClient / 2
                for old in order.prefix(drop) { versions[old] = nil }
                let highestForgotten = order.prefix(drop).max() ?? 0
                forgottenBelow = max(forgottenBelow ?? 0, highestForgotten + 1)
                order.removeFirst(drop)
            }
        }
    }

    public let limits: Limits
    private var clients: [String: Client] = [:]
    private var clock: UInt64 = 0

    public init(limits: Limits) {
        self.limits = limits
    }

    /// The version a committed mutation was acknowledged with, if remembered.
    public func committedVersion(of id: MutationID) -> ListVersion? {
        clients[id.clientID]?.versions[id.seq]
    }

    /// Sequence numbers below the returned one may have been committed and forgotten.
    public func forgetsBelow(clientID: String) -> UInt64? {
        clients[clientID]?.forgottenBelow
    }

    /// Remembers a committed mutation.
    public mutating func record(_ id: MutationID, version: ListVersion) {
        clock += 1
        // Mutated in place through the dictionary's modify accessor: copying a client's
        // record out and back would duplicate its whole window on every commit.
        clients[id.clientID, default: Client()].remember(id.seq, version: version, at: clock, perClient: limits.perClient)
        if clients.count > limits.clients, let (oldest, _) = clients.min(by: { $0.value.lastUse < $1.value.lastUse }) {
            clients[oldest] = nil
        }
    }
}
