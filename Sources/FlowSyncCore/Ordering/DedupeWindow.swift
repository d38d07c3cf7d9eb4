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

    /// One client's remembered window, as a store persists it (``records(through:)``,
    /// ``init(limits:restoring:)``).
    public struct ClientRecord: Hashable, Sendable {
        public struct Entry: Hashable, Sendable {
            public var seq: UInt64
            public var version: ListVersion
            public init(seq: UInt64, version: ListVersion) {
                self.seq = seq
                self.version = version
            }
        }
        public var clientID: String
        /// Sequence numbers below this may have been committed and forgotten.
        public var forgottenBelow: UInt64?
        /// Remembered commits, oldest first.
        public var entries: [Entry]
        public init(clientID: String, forgottenBelow: UInt64?, entries: [Entry]) {
            self.clientID = clientID
            self.forgottenBelow = forgottenBelow
            self.entries = entries
        }
    }

    public let limits: Limits
    private var clients: [String: Client] = [:]
    private var clock: UInt64 = 0

    public init(limits: Limits) {
        self.limits = limits
    }

    /// Rebuilds a window from persisted records, least recently active first (the
    /// order ``records(through:)`` returns), so eviction order survives a restart.
    public init(limits: Limits, restoring records: [ClientRecord]) {
        self.limits = limits
        for record in records {
            clock += 1
            var client = Client()
            for entry in record.entries {
                client.versions[entry.seq] = entry.version
                client.order.append(entry.seq)
            }
            client.forgottenBelow = record.forgottenBelow
            client.lastUse = clock
            clients[record.clientID] = client
        }
    }

    /// What the window remembers of commits up to and including `version` (all when
    /// `nil`), least recently active client first. A store writes this in a snapshot
    /// of that version; replaying the later batches records the rest again.
    /// - Complexity: O(remembered entries).
    public func records(through version: ListVersion? = nil) -> [ClientRecord] {
        var result: [(UInt64, ClientRecord)] = []
        result.reserveCapacity(clients.count)
        for (clientID, client) in clients {
            var entries: [ClientRecord.Entry] = []
            entries.reserveCapacity(client.order.count)
            for seq in client.order {
                guard let committed = client.versions[seq] else { continue }
                if let version, committed.epoch == version.epoch, committed.version > version.version { continue }
                entries.append(ClientRecord.Entry(seq: seq, version: committed))
            }
            if entries.isEmpty && client.forgottenBelow == nil { continue }
            result.append(
                (
                    client.lastUse,
                    ClientRecord(clientID: clientID, forgottenBelow: client.forgottenBelow, entries: entries)
                ))
        }
        result.sort { $0.0 < $1.0 }
        return result.map(\.1)
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
        clients[id.clientID, default: Client()].remember(
            id.seq, version: version, at: clock, perClient: limits.perClient)
        if clients.count > limits.clients, let (oldest, _) = clients.min(by: { $0.value.lastUse < $1.value.lastUse }) {
            clients[oldest] = nil
        }
    }
}
