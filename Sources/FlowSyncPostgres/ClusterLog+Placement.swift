/// What the nodes tell each other about where lists live (issue #33): claims, node
/// arrivals, the writes waiting for a node that restarted, and the hand-over of a list
/// to the node placement prefers. None of it is on an append's path: each is one
/// statement at a load, a connection or a move.
extension ClusterLog {
    /// Notified by every successful ``claim(list:epoch:takeFree:_:)``, in the claim's
    /// own statement (so only when it commits): payload
    /// `"<term> <owner byte count> <owner><list>"` (the count because a node's name may
    /// hold a space). A node with writes waiting for the list sends them to the new
    /// owner at once, instead of after its forward deadline.
    public static let claimsChannel = "fs_claims"

    /// Notified once per session of a node, right after its lease is taken
    /// (``announce(_:)``): payload the node's name. Every node reads the live nodes
    /// again at once, so placement counts a node from its first second, not from the
    /// next lease renewal.
    public static let nodesChannel = "fs_nodes"

    /// A ``claimsChannel`` payload: who claimed which list, at which term.
    public struct Claim: Sendable, Equatable {
        public var list: String
        public var owner: String
        public var term: Int64

        public init(list: String, owner: String, term: Int64) {
            self.list = list
            self.owner = owner
            self.term = term
        }
    }

    /// Parses a ``claimsChannel`` payload; `nil` when it is not one.
    public static func parseClaimNotification(_ payload: String) -> Claim? {
        let bytes = Array(payload.utf8)
        var fields: [Int64] = []
        var index = 0
        // Two decimal fields, each ended by one space.
        while fields.count < 2 {
            guard let space = bytes[index...].firstIndex(of: UInt8(ascii: " ")), space > index,
                let value = Int64(String(decoding: bytes[index..<space], as: UTF8.self))
            else { return nil }
            fields.append(value)
            index = space + 1
        }
        let (term, ownerCount) = (fields[0], Int(fields[1]))
        guard term > 0, ownerCount > 0, bytes.count - index > ownerCount else { return nil }
        let owner = String(decoding: bytes[index..<(index + ownerCount)], as: UTF8.self)
        let list = String(decoding: bytes[(index + ownerCount)...], as: UTF8.self)
        return Claim(list: list, owner: owner, term: term)
    }

    /// Tells every node that this one has a session and a live lease now.
    public func announce(_ completion: @escaping (Result<Void, PostgresError>) -> Void) {
        connection.send("SELECT pg_notify('\(Self.nodesChannel)', $1)", [.text(node)]) { result in
            completion(result.map { _ in () })
        }
    }

    /// A list with writes forwarded to it that nobody took yet, and whether this node
    /// owns it or it is free (no owner, or its owner's lease lapsed).
    public struct WaitingList: Sendable, Equatable {
        public var list: String
        /// True when nobody owns it (placement decides who claims it).
        public var free: Bool
    }

    /// The lists with forwarded writes waiting in `fs_inbox` that this node owns or
    /// that are free: what a node that (re)connects claims at once, so writes forwarded
    /// while it was down or cut off are served now rather than when their nodes forward
    /// them again.
    public func waitingLists(_ completion: @escaping (Result<[WaitingList], PostgresError>) -> Void) {
        connection.send(
            """
            SELECT DISTINCT i.list, l.owner IS DISTINCT FROM $1
            FROM fs_inbox i JOIN fs_lists l ON l.list = i.list
            WHERE l.owner = $1 OR l.owner IS NULL
               OR NOT EXISTS (SELECT 1 FROM fs_leases s WHERE s.node = l.owner AND s.expires_at > clock_timestamp())
            """, [.text(node)]
        ) { result in
            completion(
                result.map { rows in
                    rows.rows.compactMap { row in
                        guard let list = row.first ?? nil else { return nil }
                        return WaitingList(list: list, free: row.count > 1 && row[1] == "t")
                    }
                })
        }
    }

    /// Hands `list`, owned by this node at `ownership`'s term, to `node` (placement
    /// prefers it now): the list is released (`owner = NULL`) and `node` is nudged on
    /// ``inboxChannel``, which makes it claim the list — in one statement. `true` when
    /// released; `false` when this node no longer owned it at that term (it was fenced
    /// meanwhile: another node claimed it).
    public func handOver(
        list: String, ownership: Ownership, to node: String,
        _ completion: @escaping (Result<Bool, PostgresError>) -> Void
    ) {
        connection.send(
            """
            WITH released AS (
                UPDATE fs_lists SET owner = NULL WHERE list = $1 AND owner = $2 AND term = $3::bigint RETURNING list)
            SELECT pg_notify('\(Self.inboxChannel)', $4 || ' ' || list) FROM released
            """, [.text(list), .text(self.node), .text("\(ownership.term)"), .text(node)]
        ) { result in
            completion(result.map { $0.rows.count == 1 })
        }
    }
}
