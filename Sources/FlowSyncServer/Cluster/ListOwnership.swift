import FlowSyncPostgres

/// One list's ownership on this cluster node, as a pure machine (issue #30: it was
/// spread over `owned`, `replicas` and `sinceSnapshot` in ``ClusterStore`` and
/// `takeOvers` in the server). PostgreSQL's fence stays the truth (``ClusterLog``'s one
/// conditional statement); this machine is what the node believes and may do, decided
/// without a socket and tested without PostgreSQL (`ListOwnershipTests`).
///
/// ```
///  (any) ──claimStarted──▶ claiming ──claimed(term)──▶ owned(term) ──fenced(term)──▶ fenced
///     ▲                         │  └──loadFailed──▶ unowned        │  └──released / unloaded──▶ unowned
///     │                         └──following(epoch, head)──▶ replica ──takeOverStarted──▶ takingOver
///     │                                                       ▲   │                          │ │
///     └──────────────────────────unloaded / broken────────────┘   └────◀──takeOverEnded(nil)─┘ │
///                                                      owned(term) ◀──takeOverEnded(term)──────┘
///  owned(term) ──handOverStarted──▶ handingOver(term) ──handOverEnded(.released)──▶ replica
///                                        │ └──handOverEnded(.kept)──▶ owned(term)
///                                        └──handOverEnded(.fenced)──▶ fenced
/// ```
///
/// Rules, each with its reason:
/// 1. **Commits only while owned, at the term they were appended with.** An append's
///    completion for an older term (the list was lost and claimed again meanwhile)
///    changes nothing: the newer claim read the head back from PostgreSQL.
/// 2. **A fence ends the term, not the next one**: `fenced(term)` for another term than
///    the current is ignored (a late completion of an earlier claim).
/// 3. **A replica reads one batch range at a time**; a notification meanwhile asks for
///    one more read after it (`again`), so no batch is read twice concurrently and none
///    is missed. A take-over keeps following (its batches come first).
/// 4. **Nothing in flight is unloaded**: a replica's read, an owned list's snapshot.
/// 5. **Snapshot counts survive the write**: what was appended while a snapshot was
///    written stays counted after it.
/// 6. **A hand-over starts only from owned, and nothing commits while it runs**
///    (issue #33: a list whose preferred node appeared moves there). `owned` is `nil`
///    meanwhile, so an append, the inbox and a snapshot are refused; it ends owned
///    (not released: PostgreSQL failed), a replica at the head it had (released), or
///    fenced (another node had claimed it).
///
/// 7. **The owner a replica knows is a routing hint, never a promise** (issue #33, peer
///    links): a forwarded write goes straight to it over its link, and a node that no
///    longer owns the list passes the write on through PostgreSQL. It is learnt from the
///    list's row at load, from claims, and from the node that pushes its batches.
///
/// Not guaranteed: that PostgreSQL agrees — a node that believes it owns a list learns
/// otherwise only from a fenced append. `unowned` and `fenced` entries are forgotten
/// by the table that holds the machines (``ClusterLists``).
struct ListOwnership {
    /// What an owned list carries: the claim and the batches since its last snapshot.
    struct Owned: Equatable {
        var ownership: ClusterLog.Ownership
        var batchesSinceSnapshot = 0
        var bytesSinceSnapshot = 0
        var writingSnapshot = false
        /// The node placement prefers for the list since it appeared (rule 6): the list
        /// is handed over to it once nothing of it is in flight.
        var movingTo: String?
    }

    /// What a followed list carries: the owner's epoch, the last version delivered,
    /// whether a read of newer batches is in flight (rule 3), and the node believed to
    /// own it (rule 7).
    struct Following: Equatable {
        var epoch: Int64
        var head: Int64
        var fetching = false
        var again = false
        var owner: String?
    }

    private enum State: Equatable {
        case unowned
        /// A load is claiming it (or reading it as a replica).
        case claiming
        case owned(Owned)
        /// Its term was fenced: another node owns it.
        case fenced(term: Int64)
        case replica(Following)
        /// A replica whose claim is in flight; it keeps following meanwhile.
        case takingOver(Following)
        /// Owned, being released to the node placement prefers (rule 6).
        case handingOver(Owned)
    }

    private var state: State = .unowned

    /// A machine in `unowned`.
    init() {}

    // MARK: What the state says

    /// The claim, while owned.
    var owned: Owned? {
        if case .owned(let owned) = state { return owned }
        return nil
    }

    /// The replica's position, while following (as a replica or taking over).
    var following: Following? {
        switch state {
        case .replica(let following), .takingOver(let following): return following
        default: return nil
        }
    }

    /// Whether this node follows the list (a write to it is forwarded).
    var isReplica: Bool { following != nil }

    /// Whether the table may forget the entry (nothing it says is needed any more).
    var isSettled: Bool {
        switch state {
        case .unowned, .fenced: return true
        default: return false
        }
    }

    /// The phase's name, for logs and tests.
    var name: String {
        switch state {
        case .unowned: return "unowned"
        case .claiming: return "claiming"
        case .owned: return "owned"
        case .fenced: return "fenced"
        case .replica: return "replica"
        case .takingOver: return "takingOver"
        case .handingOver: return "handingOver"
        }
    }

    // MARK: Claims

    /// A load starts claiming the list: whatever the node believed, PostgreSQL decides
    /// again (the server loads a name only when it does not host it).
    mutating func claimStarted() {
        state = .claiming
    }

    /// The claim won `ownership` and the log was read: `batches`, `bytes` since the
    /// newest snapshot.
    mutating func claimed(_ ownership: ClusterLog.Ownership, batches: Int, bytes: Int) {
        guard case .claiming = state else {
            preconditionFailure("Internal inconsistency in ListOwnership: claimed in \(name)")
        }
        state = .owned(Owned(ownership: ownership, batchesSinceSnapshot: batches, bytesSinceSnapshot: bytes))
    }

    /// Another node owns it (or placement prefers another): followed from `head`.
    mutating func following(epoch: Int64, head: Int64, owner: String? = nil) {
        guard case .claiming = state else {
            preconditionFailure("Internal inconsistency in ListOwnership: followed in \(name)")
        }
        state = .replica(Following(epoch: epoch, head: head, owner: owner))
    }

    /// `owner` owns the followed list, as far as this node can tell (rule 7): a claim
    /// was notified, or it pushed a batch. Nothing while not following.
    mutating func ownerSeen(_ owner: String?) {
        guard var following = following, following.owner != owner else { return }
        following.owner = owner
        setFollowing(following)
    }

    /// The load failed (an I/O error, damage): nothing is held.
    mutating func loadFailed() {
        guard case .claiming = state else {
            preconditionFailure("Internal inconsistency in ListOwnership: a load failed in \(name)")
        }
        state = .unowned
    }

    // MARK: Commits (rules 1, 2, 5)

    /// An append at `term` committed `version` (`bytes` of record). Returns whether it
    /// counted (rule 1).
    @discardableResult
    mutating func committed(term: Int64, version: Int64, bytes: Int) -> Bool {
        guard case .owned(var owned) = state, owned.ownership.term == term else { return false }
        owned.ownership.head = max(owned.ownership.head, version)
        owned.batchesSinceSnapshot += 1
        owned.bytesSinceSnapshot += bytes
        state = .owned(owned)
        return true
    }

    /// An append whose outcome the lost connection left unknown was read back as
    /// committed at `version`: the head moves, the counts do not (rule 1).
    mutating func resolvedCommitted(term: Int64, version: Int64) {
        guard case .owned(var owned) = state, owned.ownership.term == term else { return }
        owned.ownership.head = max(owned.ownership.head, version)
        state = .owned(owned)
    }

    /// PostgreSQL fenced an append at `term`. Returns whether this ended the current
    /// term (rule 2): then the server drops the list.
    @discardableResult
    mutating func fenced(term: Int64) -> Bool {
        guard case .owned(let owned) = state, owned.ownership.term == term else { return false }
        state = .fenced(term: term)
        return true
    }

    /// A clean stop released every list of this node.
    mutating func released() {
        switch state {
        case .owned, .handingOver: state = .unowned
        default: break
        }
    }

    // MARK: Following (rule 3)

    /// A read of newer batches is wanted. Returns the position to read from, or `nil`
    /// when one is in flight (it reads once more when done) or the list is not followed.
    mutating func fetchWanted() -> Following? {
        guard var following = following else { return nil }
        if following.fetching {
            following.again = true
            setFollowing(following)
            return nil
        }
        following.fetching = true
        following.again = false
        setFollowing(following)
        return following
    }

    /// The read ended. Returns whether another is wanted (a notification meanwhile).
    mutating func fetchEnded() -> Bool {
        guard var following = following else { return false }
        following.fetching = false
        setFollowing(following)
        return following.again
    }

    /// Batches up to `head` were delivered.
    mutating func delivered(upTo head: Int64) {
        guard var following = following, head > following.head else { return }
        following.head = head
        setFollowing(following)
    }

    /// The replica's batches do not follow on: it stops following (the server drops
    /// the list; its next use loads it again).
    mutating func broken() {
        if isReplica { state = .unowned }
    }

    private mutating func setFollowing(_ following: Following) {
        switch state {
        case .replica: state = .replica(following)
        case .takingOver: state = .takingOver(following)
        default: preconditionFailure("Internal inconsistency in ListOwnership: following in \(name)")
        }
    }

    // MARK: Taking over

    /// A claim of the replica starts (its owner seems gone). Returns whether it may
    /// (one at a time).
    mutating func takeOverStarted() -> Bool {
        guard case .replica(let following) = state else { return false }
        state = .takingOver(following)
        return true
    }

    /// The take-over ended: `ownership` when this node owns the list now (its replica
    /// caught up to the claim's head), `nil` when it still follows (owned elsewhere,
    /// or the claim failed).
    mutating func takeOverEnded(_ ownership: ClusterLog.Ownership?) {
        guard case .takingOver(let following) = state else { return }
        if let ownership {
            // Unknown since when: the next snapshot comes one full interval from now.
            state = .owned(Owned(ownership: ownership))
        } else {
            state = .replica(following)
        }
    }

    // MARK: Handing over (rule 6)

    /// How a hand-over ended.
    enum HandOverEnd {
        /// PostgreSQL released the list: this node follows it from the head it had.
        case released
        /// Not released (the statement failed): this node still owns it.
        case kept
        /// This node no longer owned it at its term: another node claimed it.
        case fenced
    }

    /// Node `node` appeared and placement prefers it for the list (`nil`: nobody else
    /// is preferred any more): the list moves there when it is quiet.
    mutating func preferred(_ node: String?) {
        guard case .owned(var owned) = state, owned.movingTo != node else { return }
        owned.movingTo = node
        state = .owned(owned)
    }

    /// A hand-over starts. Returns the claim to release, or `nil` when the list is not
    /// owned here (one hand-over at a time).
    mutating func handOverStarted() -> Owned? {
        guard case .owned(let owned) = state else { return nil }
        state = .handingOver(owned)
        return owned
    }

    /// Whether a hand-over is in flight.
    var isHandingOver: Bool {
        if case .handingOver = state { return true }
        return false
    }

    /// The hand-over ended (rule 6).
    mutating func handOverEnded(_ end: HandOverEnd) {
        guard case .handingOver(let owned) = state else { return }
        switch end {
        case .released:
            state = .replica(Following(epoch: owned.ownership.epoch, head: owned.ownership.head))
        case .kept:
            var kept = owned
            kept.movingTo = nil
            state = .owned(kept)
        case .fenced:
            state = .fenced(term: owned.ownership.term)
        }
    }

    // MARK: Unloading (rule 4)

    /// The server unloads the idle list. Returns `false` when something of it is in
    /// flight (a replica's read, a snapshot, `unresolved` appends): not now.
    mutating func unloaded(unresolved: Bool) -> Bool {
        switch state {
        case .replica(let following):
            guard !following.fetching else { return false }
        case .owned(let owned):
            guard !owned.writingSnapshot, !unresolved else { return false }
        case .takingOver, .claiming, .handingOver:
            return false
        case .unowned, .fenced:
            return true
        }
        state = .unowned
        return true
    }

    // MARK: Snapshots (rule 5)

    /// Whether the next snapshot is due under the thresholds (0: never).
    func snapshotDue(everyBatches: Int, everyBytes: Int) -> Bool {
        guard let owned, !owned.writingSnapshot else { return false }
        return (everyBatches > 0 && owned.batchesSinceSnapshot >= everyBatches)
            || (everyBytes > 0 && owned.bytesSinceSnapshot >= everyBytes)
    }

    /// A snapshot starts being written; returns the counts it covers.
    mutating func snapshotStarted() -> (batches: Int, bytes: Int)? {
        guard case .owned(var owned) = state else { return nil }
        owned.writingSnapshot = true
        state = .owned(owned)
        return (owned.batchesSinceSnapshot, owned.bytesSinceSnapshot)
    }

    /// Nothing to store yet (the history reaches version 0): counted as done, so the
    /// next try comes one interval later, not at every batch.
    mutating func snapshotSkipped() {
        guard case .owned(var owned) = state else { return }
        owned.batchesSinceSnapshot = 0
        owned.bytesSinceSnapshot = 0
        state = .owned(owned)
    }

    /// The snapshot write ended; `stored` with the counts it covered: what was appended
    /// meanwhile stays counted.
    mutating func snapshotEnded(stored covered: (batches: Int, bytes: Int)?) {
        guard case .owned(var owned) = state else { return }
        owned.writingSnapshot = false
        if let covered {
            owned.batchesSinceSnapshot = max(0, owned.batchesSinceSnapshot - covered.batches)
            owned.bytesSinceSnapshot = max(0, owned.bytesSinceSnapshot - covered.bytes)
        }
        state = .owned(owned)
    }
}

/// The ownership machines of the lists this node holds, by name; a settled machine
/// (unowned, fenced) is forgotten, so the table holds only what the node owns, claims
/// or follows. Loop-confined like ``ClusterStore``, which keeps it.
struct ClusterLists {
    private var machines: [String: ListOwnership] = [:]

    /// The machine of `name` (a fresh `unowned` one when the table has none).
    subscript(name: String) -> ListOwnership { machines[name] ?? ListOwnership() }

    /// Runs `event` on the machine of `name` and keeps it unless it settled.
    @discardableResult
    mutating func update<Result>(_ name: String, _ event: (inout ListOwnership) -> Result) -> Result {
        var machine = machines[name] ?? ListOwnership()
        let result = event(&machine)
        machines[name] = machine.isSettled ? nil : machine
        return result
    }

    /// The claims of the lists owned here, by name.
    var owned: [String: ClusterLog.Ownership] {
        machines.compactMapValues { $0.owned?.ownership }
    }

    /// The names of the lists followed here.
    var replicaNames: [String] { machines.compactMap { $0.value.isReplica ? $0.key : nil } }

    /// The names of the lists owned here.
    var ownedNames: [String] { machines.compactMap { $0.value.owned == nil ? nil : $0.key } }

    /// The lists owned here that are to move, and where (rule 6).
    var moving: [(list: String, to: String)] {
        machines.compactMap { name, machine in machine.owned?.movingTo.map { (name, $0) } }
    }

    /// Every list owned here is released (a clean stop).
    mutating func releaseAll() {
        for name in ownedNames { update(name) { $0.released() } }
    }
}
