import FlowSyncLoop

/// The cluster's shared log on PostgreSQL (issue #18), one statement per operation:
/// node leases on PostgreSQL's clock, list ownership by term, and the fenced append.
///
/// Tables (``schema``):
/// - `fs_lists`: per list, its epoch, `head` (the last version appended), its `owner`
///   node and the ownership `term`;
/// - `fs_leases`: per node, when its lease expires (PostgreSQL's clock, so no two
///   machines' clocks are compared);
/// - `fs_batches`: the batch log, `(list, epoch, version)` → the record body the file
///   store writes;
/// - `fs_snapshots`: a list's state at a version (the file store's snapshot format), so a
///   load replays only the batches after it;
/// - `fs_inbox`: writes a node forwards to a list's owner (the encoded `Mutate`), and
///   `fs_outbox`: the owner's answers to them, for the node they came from.
///
/// **Notifications** (`LISTEN`/`NOTIFY`): ``batchesChannel`` for committed appends, sent
/// by ``announce(_:_:)`` *after* the appends committed, in a statement that writes no WAL
/// (issue #33: PostgreSQL holds one server-wide lock from a notifying commit's queueing
/// through its WAL flush and its wait for the synchronous standby, so an append that
/// notified serialized every commit of the cluster); ``inboxChannel`` for a forwarded
/// write (payload: the owner), sent by the statement that inserts into an **unlogged**
/// table, so it too neither flushes WAL nor waits for the standby; ``answersChannel``
/// for an answer, carried in the payload (``outboxChannel`` and an unlogged `fs_outbox`
/// row only for an answer too long for a payload); ``claimsChannel`` and
/// ``nodesChannel`` for the rare claims and arrivals.
///
/// `fs_inbox` and `fs_outbox` are `UNLOGGED` (issue #33): a forwarded write and its
/// answer are not acknowledged to anyone until the origin node reads the answer, and a
/// node sends its waiting writes again at every new session and at every claim of
/// their list, so losing these rows in a crash or a failover (PostgreSQL empties
/// unlogged tables then, and a standby never has them) loses no acknowledged write; the
/// idempotency window answers a write sent again that had committed.
///
/// **The fence.** An append advances `head` only where `owner = me`, `term = t`,
/// `epoch = e` and `head = v - 1`, and inserts the batch in the same statement. Zero rows
/// means this node was fenced (another node claimed the list, or the version is not
/// next): it must drop the list and acknowledge nothing. A lost connection leaves the
/// outcome unknown; ``head(list:_:)`` reads it back.
///
/// The daemon uses it through `ClusterStore` (FlowSyncServer) in cluster mode; tested
/// against a real PostgreSQL (`ClusterLogTests` and its `+ClusterStore`, `+ZombieOwner` files).
public final class ClusterLog {
    /// Who owns a list, as a successful ``claim(list:epoch:_:)`` returns it.
    public struct Ownership: Sendable, Equatable {
        public var term: Int64
        public var epoch: Int64
        /// The last version appended (0: none).
        public var head: Int64

        public init(term: Int64, epoch: Int64, head: Int64) {
            self.term = term
            self.epoch = epoch
            self.head = head
        }
    }

    /// A list's row, as ``head(list:_:)`` reads it.
    public struct ListState: Sendable, Equatable {
        public var epoch: Int64
        public var head: Int64
        public var owner: String?
        public var term: Int64
        /// Whether the owner's lease is alive (false when there is no owner).
        public var ownerAlive: Bool

        public init(epoch: Int64, head: Int64, owner: String?, term: Int64, ownerAlive: Bool = true) {
            self.epoch = epoch
            self.head = head
            self.owner = owner
            self.term = term
            self.ownerAlive = ownerAlive
        }
    }

    /// What an append did.
    public enum AppendOutcome: Sendable, Equatable {
        /// `head` advanced and the batch is in the log (committed when the completion runs).
        case appended
        /// Nothing changed: this node no longer owns the list at this term, or the version
        /// is not the next one.
        case fenced
    }

    /// The statements that create the tables (each sent on its own: the extended
    /// protocol takes one statement per query).
    public static let schema: [String] = [
        """
        CREATE TABLE IF NOT EXISTS fs_lists (
            list text PRIMARY KEY, epoch bigint NOT NULL, head bigint NOT NULL,
            owner text, term bigint NOT NULL DEFAULT 0)
        """,
        "CREATE TABLE IF NOT EXISTS fs_leases (node text PRIMARY KEY, expires_at timestamptz NOT NULL)",
        """
        CREATE TABLE IF NOT EXISTS fs_batches (
            list text NOT NULL, epoch bigint NOT NULL, version bigint NOT NULL, body bytea NOT NULL,
            PRIMARY KEY (list, epoch, version))
        """,
        """
        CREATE TABLE IF NOT EXISTS fs_snapshots (
            list text NOT NULL, epoch bigint NOT NULL, version bigint NOT NULL, body bytea NOT NULL,
            PRIMARY KEY (list, epoch, version))
        """,
        "CREATE UNLOGGED TABLE IF NOT EXISTS fs_inbox (id bigserial PRIMARY KEY, list text NOT NULL, origin text NOT NULL, body bytea NOT NULL)",
        """
        CREATE UNLOGGED TABLE IF NOT EXISTS fs_outbox (
            id bigserial PRIMARY KEY, origin text NOT NULL, list text NOT NULL, client_id text NOT NULL, seq bigint NOT NULL,
            epoch bigint NOT NULL, version bigint NOT NULL, code integer NOT NULL, message text NOT NULL)
        """,
        // Issue #33: a forward says whether its origin node reads answers from their
        // notification (``answersChannel``); a node of an older build inserts without
        // it (false), and is answered through `fs_outbox` as before. Instant (a
        // constant default) and idempotent.
        "ALTER TABLE fs_inbox ADD COLUMN IF NOT EXISTS answer_by_notification boolean NOT NULL DEFAULT false",
        // Issue #33, peer links: the address (`host:port`) of each node's peer listener,
        // set with its lease; NULL for a node without links (or of an older build, which
        // never sets it: such a node is reached through PostgreSQL only).
        "ALTER TABLE fs_leases ADD COLUMN IF NOT EXISTS peer text",
        // Tables made by a build before issue #33 were logged: made unlogged once (the
        // ALTER rewrites the table, so only when needed). Their id sequences stay
        // logged: PostgreSQL 15 (15.18 here) makes a serial column's sequence unlogged
        // with its table, and such a sequence on a promoted standby fails every
        // `nextval` with "bad magic number in sequence" (seen in the failover test). A
        // logged sequence writes WAL once per 32 values, so 1 forward in 32 waits for a
        // flush. `EXECUTE`, so that a server before 15 (no unlogged sequences) never
        // parses `ALTER SEQUENCE … SET LOGGED`.
        """
        DO $$
        DECLARE
            name text;
        BEGIN
            FOREACH name IN ARRAY ARRAY['fs_inbox', 'fs_outbox'] LOOP
                IF EXISTS (SELECT 1 FROM pg_class WHERE relname = name AND relpersistence = 'p'
                           AND relnamespace = current_schema()::regnamespace) THEN
                    EXECUTE format('ALTER TABLE %I SET UNLOGGED', name);
                END IF;
                IF EXISTS (SELECT 1 FROM pg_class WHERE relname = name || '_id_seq' AND relpersistence = 'u'
                           AND relnamespace = current_schema()::regnamespace) THEN
                    EXECUTE format('ALTER SEQUENCE %I SET LOGGED', name || '_id_seq');
                END IF;
            END LOOP;
        END $$
        """,
    ]

    public let connection: PostgresConnection
    /// This node's name in `fs_leases` and `fs_lists.owner`.
    public let node: String

    public init(connection: PostgresConnection, node: String) {
        self.connection = connection
        self.node = node
    }

    /// Creates the tables if missing.
    public func createSchema(_ completion: @escaping (Result<Void, PostgresError>) -> Void) {
        var remaining = Self.schema.count
        var failed = false
        for statement in Self.schema {
            connection.send(statement) { result in
                guard !failed else { return }
                switch result {
                case .failure(let error):
                    failed = true
                    completion(.failure(error))
                case .success:
                    remaining -= 1
                    if remaining == 0 { completion(.success(())) }
                }
            }
        }
    }

    /// Extends this node's lease to `milliseconds` from now, on PostgreSQL's clock.
    /// `peer`: the address of this node's peer listener (`host:port`), or `nil` without
    /// peer links; other nodes read it with ``livePeers(_:)``.
    public func renewLease(
        milliseconds: Int, peer: String? = nil, _ completion: @escaping (Result<Void, PostgresError>) -> Void
    ) {
        connection.send(
            """
            INSERT INTO fs_leases (node, expires_at, peer) VALUES ($1, clock_timestamp() + $2::bigint * interval '1 millisecond', $3)
            ON CONFLICT (node) DO UPDATE SET expires_at = EXCLUDED.expires_at, peer = EXCLUDED.peer
            """, [.text(node), .text("\(milliseconds)"), peer.map { .text($0) } ?? .null]
        ) { result in
            completion(result.map { _ in () })
        }
    }

    /// Takes ownership of `list` (created at `epoch` if new) with the next term, if it
    /// is already ours or — with `takeFree` — has no owner or its owner's lease has
    /// expired, and only while this node's own lease is alive. `nil`: not taken
    /// (another live node owns it, or it is free and `takeFree` is false).
    public func claim(
        list: String, epoch: Int64, takeFree: Bool = true,
        _ completion: @escaping (Result<Ownership?, PostgresError>) -> Void
    ) {
        // Two statements, pipelined: the insert must be committed for the update to see
        // a new list's row (one statement's CTEs share a snapshot).
        connection.send(
            "INSERT INTO fs_lists (list, epoch, head, owner, term) VALUES ($1, $2::bigint, 0, NULL, 0) ON CONFLICT (list) DO NOTHING",
            [.text(list), .text("\(epoch)")]
        ) { _ in }
        // A claim notifies ``claimsChannel`` in the same statement (so only when it
        // commits): the nodes with writes waiting for the list send them to the new
        // owner at once. Claims are rare (a load, a take-over), never per batch: the
        // notification's server-wide lock stays out of the appends' path.
        connection.send(
            """
            WITH claimed AS (
                UPDATE fs_lists SET owner = $2, term = term + 1
                WHERE list = $1
                  AND (owner = $2 OR ($3::boolean AND (owner IS NULL
                       OR NOT EXISTS (SELECT 1 FROM fs_leases l WHERE l.node = fs_lists.owner AND l.expires_at > clock_timestamp()))))
                  AND EXISTS (SELECT 1 FROM fs_leases l WHERE l.node = $2 AND l.expires_at > clock_timestamp())
                RETURNING term, epoch, head, list)
            SELECT term, epoch, head, pg_notify('\(Self.claimsChannel)', term::text || ' ' || octet_length($2)::text || ' ' || $2 || list)
            FROM claimed
            """, [.text(list), .text(node), .text(takeFree ? "true" : "false")]
        ) { result in
            completion(
                result.map { rows in
                    guard rows.rows.count == 1, let term = rows.int(0, 0), let epoch = rows.int(0, 1),
                        let head = rows.int(0, 2)
                    else { return nil }
                    return Ownership(term: term, epoch: epoch, head: head)
                })
        }
    }

    /// Appends batch `version` of `list` under `ownership`: the fenced statement (see the
    /// type's notes). Acknowledge the batch's writes only after `.appended`. It notifies
    /// nobody: announce it with ``announce(_:_:)`` once it committed.
    public func append(
        list: String, ownership: Ownership, version: Int64, body: [UInt8],
        _ completion: @escaping (Result<AppendOutcome, PostgresError>) -> Void
    ) {
        connection.send(
            """
            WITH advanced AS (
                UPDATE fs_lists SET head = $5::bigint
                WHERE list = $1 AND owner = $2 AND term = $3::bigint AND epoch = $4::bigint AND head = $5::bigint - 1
                RETURNING list),
            inserted AS (
                INSERT INTO fs_batches (list, epoch, version, body) SELECT $1, $4::bigint, $5::bigint, $6::bytea FROM advanced
                RETURNING version)
            SELECT version FROM inserted
            """,
            [
                .text(list), .text(node), .text("\(ownership.term)"), .text("\(ownership.epoch)"), .text("\(version)"),
                .bytes(body),
            ]
        ) { result in
            completion(result.map { $0.rows.count == 1 ? .appended : .fenced })
        }
    }

    /// The channel committed appends are announced on: payload `"<version> <list>"`.
    /// Replicas `LISTEN`.
    public static let batchesChannel = "fs_batches"

    /// Notifies ``batchesChannel`` of each committed (list, version), in one statement
    /// that writes no WAL, so its commit holds PostgreSQL's notification lock only
    /// briefly (no flush, no wait for the standby). Call it only for appends that
    /// returned `.appended`: a follower reads what it is told of.
    ///
    /// A batch given with its frame (the record body `fs_batches` holds) small enough
    /// for a payload is also notified on ``framesChannel``, before its
    /// ``batchesChannel`` notification: a follower at the version before applies it
    /// without reading `fs_batches` (issue #33). Nodes of an older build listen only on
    /// ``batchesChannel``, which is why both are sent.
    public func announce(
        _ batches: [(list: String, version: Int64, frame: [UInt8]?)],
        _ completion: @escaping (Result<Void, PostgresError>) -> Void
    ) {
        var channels: [String] = []
        var payloads: [String] = []
        for batch in batches {
            if let frame = batch.frame,
                let payload = Self.framePayload(list: batch.list, version: batch.version, frame: frame)
            {
                channels.append(Self.framesChannel)
                payloads.append(payload)
            }
            channels.append(Self.batchesChannel)
            payloads.append("\(batch.version) \(batch.list)")
        }
        // unnest yields the pairs in order, and notifications are delivered in the
        // order a transaction sent them.
        connection.send(
            "SELECT pg_notify(c, p) FROM unnest($1::text[], $2::text[]) AS t(c, p)",
            [.text(Self.arrayLiteral(channels)), .text(Self.arrayLiteral(payloads))]
        ) { result in
            completion(result.map { _ in () })
        }
    }

    /// The channel a committed batch is announced on with its frame:
    /// ``framePayload(list:version:frame:)``.
    public static let framesChannel = "fs_frames"

    /// `"<version> <list bytes>:<list><frame in hex>"`, or `nil` when it would not fit
    /// a notification (PostgreSQL refuses payloads of 8,000 bytes and more).
    public static func framePayload(list: String, version: Int64, frame: [UInt8]) -> String? {
        let head = "\(version) \(list.utf8.count):\(list)"
        guard head.utf8.count + 2 * frame.count <= 7_900 else { return nil }
        let digits = Array("0123456789abcdef".utf8)
        var hex: [UInt8] = []
        hex.reserveCapacity(2 * frame.count)
        for byte in frame {
            hex.append(digits[Int(byte >> 4)])
            hex.append(digits[Int(byte & 0x0F)])
        }
        return head + String(decoding: hex, as: UTF8.self)
    }

    /// Parses a ``framesChannel`` payload; `nil` when it is not one.
    public static func parseFrameNotification(_ payload: String) -> (list: String, version: Int64, frame: [UInt8])? {
        let bytes = Array(payload.utf8)
        guard let space = bytes.firstIndex(of: UInt8(ascii: " ")), space > 0,
            let version = Int64(String(decoding: bytes[..<space], as: UTF8.self)), version > 0,
            let colon = bytes[(space + 1)...].firstIndex(of: UInt8(ascii: ":")), colon > space + 1, colon - space <= 6,
            let count = Int(String(decoding: bytes[(space + 1)..<colon], as: UTF8.self)), count > 0,
            count <= bytes.count - (colon + 1)
        else { return nil }
        let list = String(decoding: bytes[(colon + 1)..<(colon + 1 + count)], as: UTF8.self)
        let hex = bytes[(colon + 1 + count)...]
        guard !hex.isEmpty, hex.count % 2 == 0 else { return nil }
        func value(_ digit: UInt8) -> UInt8? {
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return digit - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return digit - UInt8(ascii: "a") + 10
            default: return nil
            }
        }
        var frame: [UInt8] = []
        frame.reserveCapacity(hex.count / 2)
        var index = hex.startIndex
        while index < hex.endIndex {
            guard let high = value(hex[index]), let low = value(hex[index + 1]) else { return nil }
            frame.append(high << 4 | low)
            index += 2
        }
        return (list, version, frame)
    }

    /// A PostgreSQL `text[]` literal: every element double-quoted, `"` and `\` escaped.
    static func arrayLiteral(_ elements: [String]) -> String {
        var literal = "{"
        for (index, element) in elements.enumerated() {
            if index > 0 { literal += "," }
            literal += "\""
            for character in element.unicodeScalars {
                if character == "\"" || character == "\\" { literal += "\\" }
                literal.unicodeScalars.append(character)
            }
            literal += "\""
        }
        return literal + "}"
    }

    /// Parses a ``batchesChannel`` payload; `nil` when it is not one.
    public static func parseBatchNotification(_ payload: String) -> (list: String, version: Int64)? {
        guard let space = payload.firstIndex(of: " "), let version = Int64(payload[..<space]), version > 0 else {
            return nil
        }
        let list = String(payload[payload.index(after: space)...])
        return list.isEmpty ? nil : (list, version)
    }

    /// The nodes whose lease is alive now (placement's candidates).
    public func liveNodes(_ completion: @escaping (Result<[String], PostgresError>) -> Void) {
        connection.send("SELECT node FROM fs_leases WHERE expires_at > clock_timestamp() ORDER BY node") { result in
            completion(result.map { rows in rows.rows.compactMap { $0.first ?? nil } })
        }
    }

    /// The nodes whose lease is alive now, each with the address of its peer listener
    /// (`nil`: it has no peer links).
    public func livePeers(_ completion: @escaping (Result<[(node: String, peer: String?)], PostgresError>) -> Void) {
        connection.send("SELECT node, peer FROM fs_leases WHERE expires_at > clock_timestamp() ORDER BY node") {
            result in
            completion(
                result.map { rows in
                    rows.rows.compactMap { row in row.first.flatMap { $0 }.map { (node: $0, peer: row[1]) } }
                })
        }
    }

    /// Asks `owner` to claim `list` (placement: it is the preferred owner of a list that
    /// has none): an ``inboxChannel`` notification naming it, as a forwarded write's.
    public func nudge(owner: String, list: String) {
        connection.send("SELECT pg_notify('\(Self.inboxChannel)', $1 || ' ' || $2)", [.text(owner), .text(list)]) { _ in
        }
    }

    /// The list's row, or `nil` when the list does not exist: how a node resolves an
    /// append whose outcome a lost connection left unknown.
    public func head(list: String, _ completion: @escaping (Result<ListState?, PostgresError>) -> Void) {
        connection.send(
            """
            SELECT epoch, head, owner, term,
                   EXISTS (SELECT 1 FROM fs_leases l WHERE l.node = fs_lists.owner AND l.expires_at > clock_timestamp())
            FROM fs_lists WHERE list = $1
            """, [.text(list)]
        ) { result in
            completion(
                result.map { rows in
                    guard rows.rows.count == 1, let epoch = rows.int(0, 0), let head = rows.int(0, 1),
                        let term = rows.int(0, 3)
                    else { return nil }
                    return ListState(
                        epoch: epoch, head: head, owner: rows.rows[0][2], term: term, ownerAlive: rows.rows[0][4] == "t"
                    )
                })
        }
    }

    /// The batches of `list` at `epoch` after `version`, in order: (version, body).
    public func batches(
        list: String, epoch: Int64, after version: Int64,
        _ completion: @escaping (Result<[(version: Int64, body: [UInt8])], PostgresError>) -> Void
    ) {
        connection.send(
            "SELECT version, body FROM fs_batches WHERE list = $1 AND epoch = $2::bigint AND version > $3::bigint ORDER BY version",
            [.text(list), .text("\(epoch)"), .text("\(version)")]
        ) { result in
            completion(
                result.map { rows in
                    (0..<rows.rows.count).compactMap { r in
                        guard let v = rows.int(r, 0), let body = rows.bytes(r, 1) else { return nil }
                        return (version: v, body: body)
                    }
                })
        }
    }

    // MARK: Forwarded writes

    /// Notified when a write is forwarded: payload `"<owner> <list>"` (owner empty when
    /// the list has none).
    public static let inboxChannel = "fs_inbox"
    /// Notified when an owner answers a forwarded write: payload the origin node.
    public static let outboxChannel = "fs_outbox"

    /// `LISTEN`s to every channel a node follows: batches, its inbox, its outbox, claims
    /// and node arrivals.
    public func listen(_ completion: @escaping (Result<Void, PostgresError>) -> Void) {
        let channels = [
            Self.batchesChannel, Self.framesChannel, Self.inboxChannel, Self.outboxChannel, Self.answersChannel,
            Self.claimsChannel, Self.nodesChannel,
        ]
        var remaining = channels.count
        var failed = false
        for channel in channels {
            connection.send("LISTEN \(channel)") { result in
                guard !failed else { return }
                switch result {
                case .failure(let error):
                    failed = true
                    completion(.failure(error))
                case .success:
                    remaining -= 1
                    if remaining == 0 { completion(.success(())) }
                }
            }
        }
    }

    /// Parses an ``inboxChannel`` payload: (owner, list).
    public static func parseInboxNotification(_ payload: String) -> (owner: String, list: String)? {
        guard let space = payload.firstIndex(of: " ") else { return nil }
        let list = String(payload[payload.index(after: space)...])
        return list.isEmpty ? nil : (String(payload[..<space]), list)
    }

    /// Forwards a write (`body`: its encoded `Mutate`) to the owner of `list`, and
    /// notifies it — in one statement.
    /// `origin`: the node to answer (this one unless it passes on a write another node
    /// sent it over a peer link for a list it does not own).
    public func forward(
        list: String, body: [UInt8], origin: String? = nil,
        _ completion: @escaping (Result<Void, PostgresError>) -> Void
    ) {
        connection.send(
            """
            WITH queued AS (INSERT INTO fs_inbox (list, origin, body, answer_by_notification) VALUES ($1, $2, $3::bytea, true) RETURNING list)
            SELECT pg_notify('\(Self.inboxChannel)', coalesce(l.owner, '') || ' ' || l.list) FROM fs_lists l JOIN queued q ON l.list = q.list
            """, [.text(list), .text(origin ?? node), .bytes(body)]
        ) { result in completion(result.map { _ in () }) }
    }

    /// A forwarded write as the owner takes it.
    public struct InboxEntry: Sendable, Equatable {
        public var id: Int64
        public var origin: String
        public var body: [UInt8]
        /// Whether the origin reads its answer from the notification (``answersChannel``);
        /// false for a node of a build before issue #33 (answer through `fs_outbox`).
        public var answerByNotification: Bool
    }

    /// What ``takeInbox(list:term:_:)`` found.
    public struct InboxTake: Sendable, Equatable {
        /// The writes taken, in the order they were forwarded (empty when not owned).
        public var entries: [InboxEntry]
        /// Whether this node owns the list at the term asked about. `false` means the
        /// node's belief is stale — another node claimed the list, or it was released
        /// (a hand-over back to this node) — and nothing was taken.
        public var owned: Bool

        public init(entries: [InboxEntry], owned: Bool) {
            self.entries = entries
            self.owned = owned
        }
    }

    /// Takes (deletes and returns, in the order they were forwarded) the writes
    /// forwarded to `list` — only while this node owns it at `term`, so a node that lost
    /// the list leaves them to the new owner — and says whether it does: an inbox
    /// notification for a list this node believes it owns may be a nudge to claim it,
    /// sent after another node released it (issue #33), which only the row can tell.
    public func takeInbox(
        list: String, term: Int64, _ completion: @escaping (Result<InboxTake, PostgresError>) -> Void
    ) {
        // One statement, one snapshot: the ownership read and the delete agree. Every
        // row carries the ownership, and one more (id NULL) carries it alone, so an
        // empty inbox still says it.
        connection.send(
            """
            WITH owned AS (
                SELECT EXISTS (SELECT 1 FROM fs_lists WHERE list = $1 AND owner = $2 AND term = $3::bigint) AS yes),
            taken AS (
                DELETE FROM fs_inbox WHERE list = $1 AND (SELECT yes FROM owned)
                RETURNING id, origin, body, answer_by_notification)
            SELECT id, origin, body, answer_by_notification, (SELECT yes FROM owned) FROM taken
            UNION ALL
            SELECT NULL::bigint, NULL::text, NULL::bytea, NULL::boolean, yes FROM owned
            """, [.text(list), .text(node), .text("\(term)")]
        ) { result in
            completion(
                result.map { rows in
                    let entries = (0..<rows.rows.count).compactMap { r -> InboxEntry? in
                        guard let id = rows.int(r, 0), let origin = rows.rows[r][1], let body = rows.bytes(r, 2) else {
                            return nil
                        }
                        return InboxEntry(
                            id: id, origin: origin, body: body, answerByNotification: rows.rows[r][3] == "t")
                    }.sorted { $0.id < $1.id }
                    return InboxTake(entries: entries, owned: rows.rows.contains { $0.count > 4 && $0[4] == "t" })
                })
        }
    }

    /// An owner's answer to a forwarded write: `code` 0 is an acknowledgement at
    /// `(epoch, version)`; any other is the Reject's code and message.
    public struct Answer: Sendable, Equatable {
        public var origin: String
        public var list: String
        public var clientID: String
        public var seq: Int64
        public var epoch: Int64
        public var version: Int64
        public var code: Int
        public var message: String

        /// The ``ClusterLog/answersChannel`` payload: the eight fields in order (origin,
        /// list, client ID, seq, epoch, version, code, message), each as its UTF-8 byte
        /// count, a colon and the field (so any byte may appear in a field).
        public var notificationPayload: String {
            [origin, list, clientID, "\(seq)", "\(epoch)", "\(version)", "\(code)", message]
                .map { "\($0.utf8.count):\($0)" }.joined()
        }

        public init(
            origin: String, list: String, clientID: String, seq: Int64, epoch: Int64, version: Int64, code: Int,
            message: String
        ) {
            self.origin = origin
            self.list = list
            self.clientID = clientID
            self.seq = seq
            self.epoch = epoch
            self.version = version
            self.code = code
            self.message = message
        }
    }

    /// Notified with an owner's answer itself (issue #33): payload
    /// ``Answer/notificationPayload``, so the origin node needs no read of `fs_outbox`.
    public static let answersChannel = "fs_answers"

    /// The longest ``answersChannel`` payload sent (PostgreSQL refuses 8,000 bytes and
    /// more); a longer answer (a long Reject message) goes through `fs_outbox`.
    public static let answerPayloadLimit = 7_900

    /// Answers the origin node of a forwarded write: a notification on
    /// ``answersChannel`` carrying the answer (no table, no WAL: nothing to flush, no
    /// round trip for the origin), or, when it does not fit, a row in `fs_outbox` and
    /// a notification naming the origin. A notification the origin misses (its session
    /// was cut) is not lost for good: the origin sends its waiting writes again at its
    /// next session, and the owner's idempotency window answers them again.
    ///
    /// `byNotification` false (the origin runs a build before issue #33, which does not
    /// listen on ``answersChannel``): always through `fs_outbox`.
    public func answer(
        _ answer: Answer, byNotification: Bool, _ completion: @escaping (Result<Void, PostgresError>) -> Void
    ) {
        let payload = answer.notificationPayload
        if byNotification && payload.utf8.count <= Self.answerPayloadLimit {
            connection.send("SELECT pg_notify('\(Self.answersChannel)', $1)", [.text(payload)]) { result in
                completion(result.map { _ in () })
            }
            return
        }
        connection.send(
            """
            WITH posted AS (
                INSERT INTO fs_outbox (origin, list, client_id, seq, epoch, version, code, message)
                VALUES ($1, $2, $3, $4::bigint, $5::bigint, $6::bigint, $7::integer, $8) RETURNING origin)
            SELECT pg_notify('\(Self.outboxChannel)', origin) FROM posted
            """,
            [
                .text(answer.origin), .text(answer.list), .text(answer.clientID), .text("\(answer.seq)"),
                .text("\(answer.epoch)"),
                .text("\(answer.version)"), .text("\(answer.code)"), .text(answer.message),
            ]
        ) { result in completion(result.map { _ in () }) }
    }

    /// Parses an ``answersChannel`` payload; `nil` when it is not one.
    public static func parseAnswerNotification(_ payload: String) -> Answer? {
        let bytes = Array(payload.utf8)
        var fields: [String] = []
        var at = 0
        while at < bytes.count && fields.count < 8 {
            guard let colon = bytes[at...].firstIndex(of: UInt8(ascii: ":")), colon > at, colon - at <= 5,
                let count = Int(String(decoding: bytes[at..<colon], as: UTF8.self)), count >= 0,
                count <= bytes.count - (colon + 1)
            else { return nil }
            fields.append(String(decoding: bytes[(colon + 1)..<(colon + 1 + count)], as: UTF8.self))
            at = colon + 1 + count
        }
        guard at == bytes.count else { return nil }
        guard fields.count == 8, !fields[0].isEmpty, !fields[1].isEmpty, let seq = Int64(fields[3]),
            let epoch = Int64(fields[4]),
            let version = Int64(fields[5]), let code = Int(fields[6])
        else { return nil }
        return Answer(
            origin: fields[0], list: fields[1], clientID: fields[2], seq: seq, epoch: epoch, version: version,
            code: code, message: fields[7])
    }

    /// Takes (deletes and returns) every answer posted for this node.
    public func takeOutbox(_ completion: @escaping (Result<[Answer], PostgresError>) -> Void) {
        connection.send(
            "DELETE FROM fs_outbox WHERE origin = $1 RETURNING id, list, client_id, seq, epoch, version, code, message",
            [.text(node)]
        ) { result in
            completion(
                result.map { rows in
                    (0..<rows.rows.count).compactMap { r -> (Int64, Answer)? in
                        guard let id = rows.int(r, 0), let list = rows.rows[r][1], let client = rows.rows[r][2],
                            let seq = rows.int(r, 3),
                            let epoch = rows.int(r, 4), let version = rows.int(r, 5), let code = rows.int(r, 6),
                            let message = rows.rows[r][7]
                        else { return nil }
                        return (
                            id,
                            Answer(
                                origin: self.node, list: list, clientID: client, seq: seq, epoch: epoch,
                                version: version, code: Int(code), message: message)
                        )
                    }.sorted { $0.0 < $1.0 }.map(\.1)
                })
        }
    }

    /// Gives up every list this node owns and its lease (a clean stop): each released
    /// list is notified on ``inboxChannel`` with no owner, so a node with writes waiting
    /// for it claims it at once instead of waiting for a lease to lapse. Returns the
    /// number of lists released.
    public func release(_ completion: @escaping (Result<Int, PostgresError>) -> Void) {
        var released = 0
        connection.send(
            """
            WITH released AS (UPDATE fs_lists SET owner = NULL WHERE owner = $1 RETURNING list)
            SELECT pg_notify('\(Self.inboxChannel)', ' ' || list) FROM released
            """, [.text(node)]
        ) { result in
            if case .success(let rows) = result { released = rows.rows.count }
        }
        // Completes after the first (statements complete in order).
        connection.send("DELETE FROM fs_leases WHERE node = $1", [.text(node)]) { result in
            completion(result.map { _ in released })
        }
    }

    // MARK: Snapshots

    /// What a load reads: the newest snapshot of the epoch (if any) and every batch
    /// after it, in order — in **one statement**, so one MVCC snapshot: a compaction
    /// committing meanwhile (which deletes old batches) cannot leave a gap between them.
    public struct Stored: Sendable {
        public var snapshot: (version: Int64, body: [UInt8])?
        public var batches: [(version: Int64, body: [UInt8])]
    }

    public func load(list: String, epoch: Int64, _ completion: @escaping (Result<Stored, PostgresError>) -> Void) {
        connection.send(
            """
            WITH newest AS (SELECT max(version) AS v FROM fs_snapshots WHERE list = $1 AND epoch = $2::bigint)
            SELECT 0 AS kind, s.version, s.body FROM fs_snapshots s, newest WHERE s.list = $1 AND s.epoch = $2::bigint AND s.version = newest.v
            UNION ALL
            SELECT 1, b.version, b.body FROM fs_batches b, newest WHERE b.list = $1 AND b.epoch = $2::bigint AND b.version > coalesce(newest.v, 0)
            ORDER BY 1, 2
            """, [.text(list), .text("\(epoch)")]
        ) { result in
            completion(
                result.map { rows in
                    var stored = Stored(snapshot: nil, batches: [])
                    for r in 0..<rows.rows.count {
                        guard let kind = rows.int(r, 0), let version = rows.int(r, 1), let body = rows.bytes(r, 2)
                        else { continue }
                        if kind == 0 {
                            stored.snapshot = (version, body)
                        } else {
                            stored.batches.append((version, body))
                        }
                    }
                    return stored
                })
        }
    }

    /// Stores the list's state at `version` — only while this node owns it at the
    /// ownership's term — and trims: the batches up to the *previous* snapshot and the
    /// snapshots before it are deleted. Keeping one interval of batches before the new
    /// snapshot lets a replica a little behind still read the batches it misses.
    public func putSnapshot(
        list: String, ownership: Ownership, version: Int64, body: [UInt8],
        _ completion: @escaping (Result<Bool, PostgresError>) -> Void
    ) {
        var stored = false
        connection.send(
            """
            INSERT INTO fs_snapshots (list, epoch, version, body)
            SELECT $1, $2::bigint, $3::bigint, $4::bytea
            WHERE EXISTS (SELECT 1 FROM fs_lists WHERE list = $1 AND owner = $5 AND term = $6::bigint AND epoch = $2::bigint AND head >= $3::bigint)
            ON CONFLICT DO NOTHING
            """,
            [
                .text(list), .text("\(ownership.epoch)"), .text("\(version)"), .bytes(body), .text(node),
                .text("\(ownership.term)"),
            ]
        ) { result in
            if case .success(let rows) = result { stored = rows.affectedRows == 1 }
        }
        connection.send(
            """
            WITH previous AS (SELECT max(version) AS v FROM fs_snapshots WHERE list = $1 AND epoch = $2::bigint AND version < $3::bigint)
            DELETE FROM fs_batches WHERE list = $1 AND epoch = $2::bigint AND version <= (SELECT v FROM previous)
              AND EXISTS (SELECT 1 FROM fs_lists WHERE list = $1 AND owner = $4 AND term = $5::bigint)
            """,
            [.text(list), .text("\(ownership.epoch)"), .text("\(version)"), .text(node), .text("\(ownership.term)")]
        ) { _ in }
        connection.send(
            """
            WITH previous AS (SELECT max(version) AS v FROM fs_snapshots WHERE list = $1 AND epoch = $2::bigint AND version < $3::bigint)
            DELETE FROM fs_snapshots WHERE list = $1 AND epoch = $2::bigint AND version < (SELECT v FROM previous)
              AND EXISTS (SELECT 1 FROM fs_lists WHERE list = $1 AND owner = $4 AND term = $5::bigint)
            """,
            [.text(list), .text("\(ownership.epoch)"), .text("\(version)"), .text(node), .text("\(ownership.term)")]
        ) { result in
            completion(result.map { _ in stored })
        }
    }
}
