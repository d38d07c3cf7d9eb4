/// Which committed batches this node still has to announce to the nodes that follow its
/// lists, and when (issue #33, item 5). Pure: ``ClusterStore`` feeds it the appends that
/// committed and the announcement statements' outcomes, and sends what it returns.
///
/// Why announcements are their own statement: PostgreSQL serializes every commit that
/// notifies behind one server-wide lock, held from the notification's queueing through
/// the commit's WAL flush and its wait for the synchronous standby (`async.c`,
/// `xact.c`). When the fenced append notified in its own statement, every append of the
/// cluster queued on that lock, so more nodes did not mean more commits. An announcement
/// is a `SELECT pg_notify(…)` that writes no WAL: its commit neither flushes nor waits
/// for the standby, so the lock is held for microseconds, and the appends (which no
/// longer notify) commit side by side and share WAL flushes.
///
/// Rules, each with its reason:
/// 1. **Only after the commit.** A batch is announced only once its append returned
///    `appended` (or was read back as committed after a lost connection): a follower
///    reads what the log holds, never more.
/// 2. **One announcement statement in flight per node.** While one is in flight, what
///    commits meanwhile waits and is sent together when it returns: the number of
///    notifying commits follows PostgreSQL's pace, not the number of lists or batches.
///    An idle node announces a batch at once (no timer, no added wait).
/// 3. **The newest version per list is enough.** A follower notified of version v of a
///    list reads every batch after its own head (``ClusterStore`` `catchUp`), so the
///    announcements of older versions of that list add nothing. The newest one carries
///    its frame: a follower at the version before applies it without a read; one
///    further behind reads.
/// 4. **Nothing is dropped by a lost connection.** An announcement whose statement
///    failed goes back with what waits, and all of it is sent once the next session
///    is ready.
///
/// 5. **Through PostgreSQL only while a follower may lack a link** (issue #33, item 4:
///    PostgreSQL stays the log and the fence, not the carrier). The store says whether
///    every other live node (per the leases) has a ready, authenticated link to this one
///    (``linksChanged(everyLiveNodeLinked:ownedHeads:)``). While it has, a commit is not
///    announced: the owner pushes it to the links whose peer follows the list, and a
///    node that follows a list has said so on its link (``ClusterStore`` peer-link
///    rule 7). While it has not (a node without the secret, of an older build, a link
///    down or not yet up, links off), every commit is announced as before.
/// 6. **Losing full coverage announces every owned list's head once.** A push written
///    into a link that was already dead, or a commit a node that just appeared could not
///    be told of, would otherwise be missed on a list that then goes quiet. The moment
///    this node learns a live node lacks a link is after every such push, so announcing
///    each head then lets every follower behind it read the log.
/// 7. **Some heads are announced whatever the links** (``announceHead(list:version:)``):
///    when a peer's follow of a list owned here arrives (a commit between the
///    follower's read and the follow's arrival was pushed to nobody), when this node
///    claims a list, and for a batch resolved after a lost connection (it is not
///    pushed). They are rare: a follow per list per link, a claim, a resolution.
///
/// Not guaranteed: that a follower is notified at all — PostgreSQL drops notifications
/// for sessions that are not connected. A follower that reconnects reads what it missed
/// (``ClusterStore`` `resynchronise`), as before.
struct BatchAnnouncements {
    /// What the store sends: one statement that notifies each (list, version).
    enum Action: Equatable {
        case none
        /// Send these in one statement, and report its outcome as ``announced(_:succeeded:)``
        /// with this `id` (an answer from a lost session's statement then changes nothing).
        case announce(id: UInt64, [Announcement])
    }

    struct Announcement: Equatable {
        var list: String
        var version: Int64
        /// The batch's frame, when the store has it (a follower at the version before
        /// applies it without a read); `nil` for a batch resolved after a lost
        /// connection, or when the frame is large.
        var frame: [UInt8]? = nil
    }

    /// The newest committed version per list not announced yet, with its frame
    /// (rule 3).
    private var waiting: [String: (version: Int64, frame: [UInt8]?)] = [:]
    /// The announcement in flight, if any (rule 2).
    private var inFlight: (id: UInt64, batch: [Announcement])?
    private var lastID: UInt64 = 0
    /// Whether a session is up to send on (rule 4).
    private var connected = false
    /// Whether every other live node has a ready link here (rule 5). `false` until the
    /// store knows: a node starts announcing everything.
    private var everyLiveNodeLinked = false

    /// Commits not announced because every live node was linked (rule 5; for tests and
    /// statistics).
    private(set) var skipped = 0

    /// Whether an announcement is in flight (for tests).
    var isAnnouncing: Bool { inFlight != nil }
    /// How many lists wait for an announcement.
    var waitingCount: Int { waiting.count }

    /// A session is ready: send what waits.
    mutating func sessionReady() -> Action {
        connected = true
        return sendIfIdle()
    }

    /// The session was lost. An announcement in flight has an unknown outcome and is
    /// sent again later (rule 4); announcing it twice is harmless (rule 3).
    mutating func sessionLost() {
        connected = false
        if let lost = inFlight {
            inFlight = nil
            for announcement in lost.batch { remember(announcement.list, announcement.version, announcement.frame) }
        }
    }

    /// Version `version` of `list` committed (rule 1) and was pushed to the linked
    /// followers; announced only while some live node lacks a link (rule 5).
    mutating func committed(list: String, version: Int64, frame: [UInt8]? = nil) -> Action {
        guard !everyLiveNodeLinked else {
            skipped += 1
            return .none
        }
        remember(list, version, frame)
        return sendIfIdle()
    }

    /// Announce `list` at `version` whatever the links (rule 7): a follow of a list
    /// owned here arrived, this node claimed it, or an append was resolved as committed.
    mutating func announceHead(list: String, version: Int64) -> Action {
        remember(list, version, nil)
        return sendIfIdle()
    }

    /// Whether every other live node has a ready link to this node changed, or may have
    /// (the live nodes were read, a link became ready or was lost). Losing full
    /// coverage announces `ownedHeads` (rule 6), read only then.
    mutating func linksChanged(everyLiveNodeLinked linked: Bool, ownedHeads: () -> [String: Int64]) -> Action {
        defer { everyLiveNodeLinked = linked }
        guard everyLiveNodeLinked, !linked else { return .none }
        everyLiveNodeLinked = linked
        for (list, version) in ownedHeads() { remember(list, version, nil) }
        return sendIfIdle()
    }

    /// The announcement `id` returned. `lost`: its session was lost with it (outcome
    /// unknown): it waits again, and nothing is sent before the next ``sessionReady()``
    /// (so a dead session is not asked again and again). Otherwise it is done (a
    /// statement PostgreSQL refused is not sent again: the next announcement of the
    /// list covers it, rule 3). An answer for an announcement ``sessionLost()`` already
    /// put back changes nothing.
    mutating func announced(_ id: UInt64, lost: Bool) -> Action {
        guard let sent = inFlight, sent.id == id else { return .none }
        inFlight = nil
        if lost {
            connected = false
            for announcement in sent.batch { remember(announcement.list, announcement.version, announcement.frame) }
            return .none
        }
        return sendIfIdle()
    }

    private mutating func remember(_ list: String, _ version: Int64, _ frame: [UInt8]?) {
        // The newest version wins (rule 3); at the same version, a frame beats none.
        if let known = waiting[list], known.version > version || (known.version == version && known.frame != nil) {
            return
        }
        waiting[list] = (version, frame)
    }

    private mutating func sendIfIdle() -> Action {
        guard connected, inFlight == nil, !waiting.isEmpty else { return .none }
        let batch = waiting.map { Announcement(list: $0.key, version: $0.value.version, frame: $0.value.frame) }
            .sorted { $0.list < $1.list }
        waiting = [:]
        lastID += 1
        inFlight = (lastID, batch)
        return .announce(id: lastID, batch)
    }
}
