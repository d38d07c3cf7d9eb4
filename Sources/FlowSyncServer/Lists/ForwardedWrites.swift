import FlowSyncCore
import FlowSyncProtocol

/// The writes a node forwarded to the owners of the lists it replicates (cluster mode,
/// docs/CLUSTER.md, "Writes on a replica"), until each is answered. Pure: the server
/// carries out the answers it returns.
///
/// **Diff before Ack, end to end.** The owner's acknowledgement names the version that
/// committed the write. A writer that subscribes on this node must see that version's
/// Diff first, and this node's replica delivers it only when the batch arrives from
/// PostgreSQL — which may be before or after the answer. So an Ack is held until the
/// replica is at (or past) its version, and released by ``replicaAdvanced(_:to:)``.
/// A Reject carries no version and is answered at once.
///
/// **Overdue.** An owner that died after taking a write never answers it. A write
/// unanswered for longer than a deadline makes its list ``overdue(now:after:)``: the
/// server then tries to take the list over, and resubmits the list's writes itself
/// (``takeAll(list:)``) — the idempotency window, rebuilt from the log, answers the
/// ones the old owner had committed.
struct ForwardedWrites {
    struct Key: Hashable {
        var list: String
        var clientID: String
        var seq: UInt64
    }

    struct Pending: Equatable {
        /// The writer's connection.
        var connection: Int
        var mutate: Mutate
        /// Loop time when forwarded (or last resubmitted).
        var since: UInt64
    }

    /// What to send to whom.
    enum Answer: Equatable {
        case ack(connection: Int, Ack)
        case reject(connection: Int, Reject)
    }

    private(set) var waiting: [Key: Pending] = [:]
    /// The keys waiting per list: a list's writes without a scan of every write
    /// (issue #30: idle unloading and take-overs asked by scanning `waiting`).
    private var keysByList: [String: Set<Key>] = [:]
    /// Acks whose version the replica has not reached yet, by list.
    private var held: [String: [(connection: Int, ack: Ack)]] = [:]

    var isEmpty: Bool { waiting.isEmpty && held.isEmpty }

    /// The lists with writes waiting for their owner's answer. O(lists).
    var listsWaiting: [String] { Array(keysByList.keys) }

    /// Whether a write of `list` waits for its owner's answer. O(1).
    func hasWaiting(for list: String) -> Bool { keysByList[list] != nil }

    /// The writes of `list` waiting for their answer. O(writes of the list).
    func waiting(of list: String) -> [Pending] { (keysByList[list] ?? []).compactMap { waiting[$0] } }

    private mutating func insert(_ key: Key, _ pending: Pending) {
        waiting[key] = pending
        keysByList[key.list, default: []].insert(key)
    }

    private mutating func remove(_ key: Key) -> Pending? {
        guard let pending = waiting.removeValue(forKey: key) else { return nil }
        keysByList[key.list]?.remove(key)
        if keysByList[key.list]?.isEmpty == true { keysByList[key.list] = nil }
        return pending
    }
    var heldCount: Int { held.values.reduce(0) { $0 + $1.count } }

    /// A write was forwarded for `connection`. A retry of the same `(clientID, seq)`
    /// replaces the earlier entry: the answer goes to the latest connection.
    mutating func forwarded(_ mutate: Mutate, connection: Int, now: UInt64) {
        insert(
            Key(list: mutate.listName, clientID: mutate.clientID, seq: mutate.seq),
            Pending(connection: connection, mutate: mutate, since: now))
    }

    /// The owner answered `key`: a Reject now, an Ack now if the replica (at
    /// `replica`) already holds its version, else later. An answer for a write nobody
    /// waits for (answered already, or its list taken over) is ignored.
    mutating func answered(_ key: Key, result: WriteAnswer.Result, replica: ListVersion?) -> [Answer] {
        guard let pending = remove(key) else { return [] }
        switch result {
        case .rejected(let code, let message):
            return [
                .reject(
                    connection: pending.connection,
                    Reject(listName: key.list, seq: key.seq, code: code, message: message))
            ]
        case .committed(let version):
            let ack = Ack(listName: key.list, seq: key.seq, committed: version)
            if let replica, Self.holds(replica, version) { return [.ack(connection: pending.connection, ack)] }
            held[key.list, default: []].append((pending.connection, ack))
            return []
        }
    }

    /// The replica of `list` is at `position` now: the held Acks it covers go out, in
    /// version order.
    mutating func replicaAdvanced(_ list: String, to position: ListVersion) -> [Answer] {
        guard var acks = held[list] else { return [] }
        let ready = acks.filter { Self.holds(position, $0.ack.committed) }
        guard !ready.isEmpty else { return [] }
        acks.removeAll { Self.holds(position, $0.ack.committed) }
        held[list] = acks.isEmpty ? nil : acks
        return ready.sorted { $0.ack.committed.version < $1.ack.committed.version }.map {
            .ack(connection: $0.connection, $0.ack)
        }
    }

    /// Lists with a write unanswered since before `now - deadline`.
    func overdue(now: UInt64, after deadline: UInt64) -> Set<String> {
        var lists: Set<String> = []
        for (key, pending) in waiting where now >= pending.since + deadline { lists.insert(key.list) }
        return lists
    }

    /// Marks `list`'s waiting writes as just (re)tried: the next overdue check counts
    /// from `now`.
    mutating func retried(_ list: String, now: UInt64) {
        for key in keysByList[list] ?? [] { waiting[key]?.since = now }
    }

    /// This node owns `list` now: its waiting writes are handed back, oldest first, to
    /// be submitted here; held Acks go out (the list's state here includes them).
    mutating func takeAll(list: String) -> (resubmit: [Pending], acks: [Answer]) {
        let keys = keysByList[list] ?? []
        let pending = keys.compactMap { remove($0) }.sorted { ($0.since, $0.mutate.seq) < ($1.since, $1.mutate.seq) }
        let acks = (held.removeValue(forKey: list) ?? []).map { Answer.ack(connection: $0.connection, $0.ack) }
        return (pending, acks)
    }

    /// A connection closed: nothing more is sent to it (its writes stay forwarded; the
    /// client retries them on its next connection, idempotently).
    mutating func connectionClosed(_ connection: Int) {
        for (key, pending) in waiting where pending.connection == connection { _ = remove(key) }
        for (list, acks) in held {
            let kept = acks.filter { $0.connection != connection }
            held[list] = kept.isEmpty ? nil : kept
        }
    }

    private static func holds(_ replica: ListVersion, _ version: ListVersion) -> Bool {
        replica.epoch == version.epoch && replica.version >= version.version
    }
}
