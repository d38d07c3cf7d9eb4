import FlowSyncCore
import FlowSyncProtocol

/// One named list on the server: its sequencer, who subscribes to it, and the encoded
/// snapshot frames of its current version. Loop-confined.
final class ListHost {
    let name: String
    /// The list's ordering and state (the core's `Sequencer`). Changed only through
    /// this host: ``submit(_:tag:)``, ``seal(encoder:)``, ``apply(history:director:)``.
    private(set) var sequencer: Sequencer
    /// The subscribers, in subscription order: what the fan-out visits once per batch.
    private(set) var subscribers: [Subscriber] = []
    /// Declared in the config (never dropped when idle).
    var declared: Bool
    /// Loop time of the last subscribe, unsubscribe or write: idle unloading counts from
    /// here (lists on demand).
    var lastActive: UInt64 = 0

    // MARK: The turn's and the cluster's flags of this list (issue #30: in its entry,
    // not in collections of the server keyed by its name, so a list that leaves the
    // registry takes all of them with it)

    /// Where the list's snapshot of the log (compaction) is.
    enum CompactionPhase: Equatable {
        case idle
        /// Asked for this turn; started after the flush (``ListTable/compactionsDue``).
        case due
        /// Being written off the loop; one at a time (a second would race the
        /// first's install). A "due" meanwhile is dropped: the store says due again.
        case running
    }

    var compaction: CompactionPhase = .idle
    /// A take-over of this replica list is in flight (cluster mode): its forwarded
    /// writes wait for the claim's outcome.
    var takingOver = false
    /// Loop time its waiting forwarded writes were last forwarded again (at most every
    /// half lease; cluster mode).
    var lastForwardedAgain: UInt64 = 0
    /// A hand-over of this owned list to the node placement prefers is in flight
    /// (cluster mode, issue #33): its writes wait, parked, for the outcome.
    var handingOver = false
    /// Writes other nodes forwarded to this list (owned here), by the negative tag
    /// their mutation was submitted with, until sealed. Dropped with the list: their
    /// nodes forward them again when overdue.
    var remoteWrites: [Int: ForwardedWrite] = [:]

    /// Whether the list may be unloaded: idle for `idleFor` ms at loop time `now`, and
    /// nothing of it in flight — no subscriber, no mutation waiting for the seal (a
    /// dirty list always has one, or its seal is a no-op), no compaction (its install
    /// needs the list's files), no frame built off the loop (it serves the list's
    /// subscribers), no take-over. `busyElsewhere` is what other rooms hold for it (a
    /// commit in the gate, a write forwarded to its owner).
    func isIdle(now: UInt64, idleFor: UInt64, busyElsewhere: Bool) -> Bool {
        !declared && subscribers.isEmpty && now >= lastActive + idleFor && !hasPending && !hasPendingFrames
            && compaction == .idle && !takingOver && !handingOver && remoteWrites.isEmpty && !busyElsewhere
    }

    /// Encoded snapshot frames of ``cachedVersion``, one per reason (the reason is part
    /// of the frame). Why cache: every joiner at one version shares one encoding and
    /// one deflate, which for a large list is most of the cost of a subscribe.
    private var cachedSnapshots: [Snapshot.Reason: [UInt8]] = [:]
    private var cachedVersion: ListVersion?

    init(
        name: String, epoch: UInt64, limits: DirectorLimits, history: Sequencer.HistoryLimits,
        dedupe: DedupeWindow.Limits, declared: Bool
    ) {
        self.name = name
        self.declared = declared
        sequencer = Sequencer(
            director: Director(limits: limits), position: ListVersion(epoch: epoch, version: 0), historyLimits: history,
            dedupeLimits: dedupe)
    }

    /// Recovered from the store: never dropped, even at version 0 of a new epoch (its
    /// state and its files are still there).
    private(set) var stored = false

    /// A list recovered from the store.
    init(name: String, sequencer: Sequencer, declared: Bool) {
        self.name = name
        self.declared = declared
        self.sequencer = sequencer
        self.stored = true
    }

    var position: ListVersion { sequencer.position }

    /// A list that nobody subscribes to, was never written and is not declared can be
    /// forgotten (subscribing to a name must not leak memory forever).
    var isDisposable: Bool {
        !declared && !stored && subscribers.isEmpty && sequencer.position.version == 0 && !sequencer.hasPending
    }

    /// One subscriber of the list as the fan-out needs it (issue #20: no lookup,
    /// retain/release or allocation per subscriber per batch): the connection itself,
    /// not its ID, and the slot of the subscription's flow in the connection's machine
    /// (``SubscriptionTable``).
    ///
    /// Lifetime: the entry **owns one strong reference** to the connection, taken in
    /// ``addSubscriber(_:slot:)`` and given back in ``removeSubscriber(_:)`` or, for
    /// a list dropped with entries left (a fenced list), in `deinit`. Held as an
    /// `Unmanaged` so that the fan-out reaches the connection with
    /// `_withUnsafeGuaranteedRef` — no retain/release per delivery (a `Connection` has a
    /// side table for its weak references, so each of those took the slow path) — while
    /// the entry's own reference keeps it alive for as long as the entry exists.
    struct Subscriber {
        let connection: Unmanaged<Connection>
        /// The subscription's slot in the connection's machine, valid while the entry
        /// exists (the entry is dropped when the subscription ends).
        let slot: Int

        /// The connection's ID.
        var id: Int { connection._withUnsafeGuaranteedRef { $0.id } }
    }

    /// Adds `connection`, whose subscription to this list is in `slot`.
    func addSubscriber(_ connection: Connection, slot: Int) {
        subscribers.append(Subscriber(connection: .passRetained(connection), slot: slot))
    }

    /// Removes `connection` (if subscribed), keeping the others' order.
    /// - Complexity: O(subscribers), as an unsubscribe or a close always was.
    func removeSubscriber(_ connection: Connection) {
        guard
            let k = subscribers.firstIndex(where: {
                $0.connection.toOpaque() == Unmanaged.passUnretained(connection).toOpaque()
            })
        else { return }
        let removed = subscribers.remove(at: k)
        removed.connection.release()
    }

    deinit {
        // A list dropped with subscribers left (fenced in cluster mode: its
        // subscribers are being closed) gives their references back.
        for subscriber in subscribers { subscriber.connection.release() }
    }

    /// Frames being built off the loop for this list's subscribers, by ID.
    private(set) var pendingFrames: [UInt64: PendingFrame] = [:]

    /// Rows plus sections: what a snapshot's encoding cost follows.
    var size: Int { sequencer.director.rowCount + sequencer.director.sections.count }

    /// The cached snapshot frame of the current version for `reason`, if encoded.
    func cachedSnapshot(reason: Snapshot.Reason) -> [UInt8]? {
        cachedVersion == sequencer.position ? cachedSnapshots[reason] : nil
    }

    /// Keeps a snapshot frame built off the loop — if the list is still at `position`
    /// (a frame of an older version serves only the joiners of its build).
    func cache(snapshot frame: [UInt8], reason: Snapshot.Reason, at position: ListVersion) {
        guard position == sequencer.position else { return }
        if cachedVersion != position {
            cachedSnapshots = [:]
            cachedVersion = position
        }
        cachedSnapshots[reason] = frame
    }

    /// The snapshot frame of the current version for `reason`, encoded once (on the
    /// loop thread: for small lists, see `offload_snapshot_rows`). `encoded` says
    /// whether this call encoded it (statistics).
    func snapshotFrame(reason: Snapshot.Reason, encoder: FrameEncoder) -> (frame: [UInt8], encoded: Bool) {
        if let frame = cachedSnapshot(reason: reason) { return (frame, false) }
        let frame = Self.snapshotFrame(name: name, sequencer: sequencer, reason: reason, encoder: encoder)
        cache(snapshot: frame, reason: reason, at: sequencer.position)
        return (frame, true)
    }

    /// The snapshot frame of `sequencer`'s current state. Pure: runs on a worker thread
    /// too, with the worker's own encoder.
    static func snapshotFrame(
        name: String, sequencer: Sequencer, reason: Snapshot.Reason, encoder: FrameEncoder
    ) -> [UInt8] {
        let snapshot = Snapshot(
            listName: name, position: sequencer.position, digest: sequencer.director.digest, reason: reason,
            sections: sequencer.director.sections)
        return encoder.encode(.snapshot(snapshot))
    }

    // MARK: Writes

    /// Whether mutations wait for the turn's seal.
    var hasPending: Bool { sequencer.hasPending }

    /// When the oldest mutation waiting for the seal arrived (`nil`: none waits), in
    /// the outbox clock's nanoseconds. The seal's pacing bounds that wait
    /// (``FlushPacer``, rule 1).
    private(set) var pendingSince: UInt64?

    /// Queues a mutation for this turn's seal; `tag` names the writer's connection and
    /// `now` is the time on the server's outbox clock (``Outbox/clock``); the default
    /// reads the monotonic clock, for callers outside a server.
    func submit(_ request: MutationRequest, tag: Int, now: UInt64 = MonotonicClock.nanoseconds()) {
        if pendingSince == nil { pendingSince = now }
        sequencer.submit(request, tag: tag)
    }

    /// Drops the oldest history down to `bytes` (the daemon-wide budget); returns the
    /// bytes dropped.
    func trimHistory(toBytes bytes: Int) -> Int {
        sequencer.trimHistory(toBytes: bytes)
    }

    /// A reload's limits, for batches sealed from now on.
    func apply(history: Sequencer.HistoryLimits, director: DirectorLimits) {
        sequencer.historyLimits = history
        sequencer.setDirectorLimits(director)
    }

    /// Applies a batch its owner committed (this list is a replica, cluster mode): the
    /// state, history and idempotency window advance as the owner's did.
    func replicate(_ commit: Sequencer.Commit) throws(Sequencer.ReplayError) {
        try sequencer.replay(commit)
    }

    // MARK: Sealing

    /// A batch committed by ``seal(encoder:)``, with its `Diff` frame: encoded once,
    /// the same bytes for the store's log record and for every subscriber.
    struct SealedBatch {
        let commit: Sequencer.Commit
        let frame: [UInt8]
    }

    /// Seals the mutations queued this turn into one batch (or none, when every one was
    /// refused) and encodes its `Diff` frame. `outcomes` answer each writer.
    func seal(encoder: FrameEncoder) -> (batch: SealedBatch?, outcomes: [Sequencer.Outcome]) {
        pendingSince = nil
        let sealed = sequencer.seal()
        guard let commit = sealed.commit else { return (nil, sealed.outcomes) }
        let diff = Diff(
            listName: name, epoch: commit.to.epoch, fromVersion: commit.from.version, toVersion: commit.to.version,
            digest: commit.digest, changeset: commit.changeset, mutations: commit.mutations)
        return (SealedBatch(commit: commit, frame: encoder.encode(.diff(diff))), sealed.outcomes)
    }

    /// The wire code and message of a refused mutation.
    static func wire(_ rejection: SequencerRejection) -> (ErrorCode, String) {
        switch rejection {
        case .invalid(let error): return (ErrorCode(for: error.reason), error.description)
        case .staleBase: return (.staleBaseVersion, rejection.description)
        case .futureBase: return (.staleBaseVersion, rejection.description)
        case .retryOutsideWindow: return (.staleBaseVersion, rejection.description)
        }
    }

    // MARK: Frames built off the loop

    /// The build a snapshot joiner for `reason` can share, if one is in flight.
    func shareablePendingFrame(reason: Snapshot.Reason) -> PendingFrame? {
        pendingFrames.values.first { $0.isShareable(for: reason) }
    }

    /// Whether a frame is being built off the loop for a subscriber of this list.
    var hasPendingFrames: Bool { !pendingFrames.isEmpty }

    func addPendingFrame(_ pending: PendingFrame) {
        pendingFrames[pending.id] = pending
    }

    func removePendingFrame(_ id: UInt64) {
        pendingFrames[id] = nil
    }

    /// A batch was committed: every build in flight holds its frame for its waiting
    /// subscribers.
    func holdForPendingFrames(from: ListVersion, to: ListVersion, frame: [UInt8]) {
        for pending in pendingFrames.values { pending.hold(from: from, to: to, frame: frame) }
    }

    /// How a subscriber resuming from `from` (with its replica's `digest`) is served,
    /// decided cheaply on the loop: the expensive answers (a snapshot, a composed diff)
    /// are built inline or off the loop by the caller, by the list's size.
    enum ResumePlan: Equatable {
        /// A snapshot of the current version for this reason.
        case snapshot(Snapshot.Reason)
        /// An empty diff: the subscriber is at the current version.
        case upToDate
        /// A composed diff from `from` (or a snapshot, when smaller or the digest differs).
        case catchUp
    }

    func resumePlan(from: ListVersion, digest: StateDigest?) -> ResumePlan {
        let position = sequencer.position
        if from.epoch != position.epoch { return .snapshot(.epochChanged) }
        if from == position {
            if let digest, digest != sequencer.director.digest { return .snapshot(.resyncRequested) }
            return .upToDate
        }
        // In the future, or older than the history: the same answers Sequencer.catchUp gives.
        if from.version > position.version || from.version < sequencer.oldestResumable.version {
            return .snapshot(.resumeTooOld)
        }
        return .catchUp
    }

    /// The frame that brings a subscriber at `from` to the current version: a diff from
    /// exactly `from`, or a snapshot when the position is unusable, when `digest` shows
    /// the subscriber's replica drifted, or when the snapshot is the smaller frame.
    /// On the loop thread; uses (and fills) the snapshot cache.
    func catchUpFrame(
        from: ListVersion, digest: StateDigest?, encoder: FrameEncoder
    ) -> (frame: [UInt8], isSnapshot: Bool, encodedSnapshot: Bool) {
        var encodedSnapshot = false
        let built = Self.catchUpFrame(name: name, sequencer: sequencer, from: from, digest: digest, encoder: encoder) {
            reason in
            let snapshot = snapshotFrame(reason: reason, encoder: encoder)
            encodedSnapshot = encodedSnapshot || snapshot.encoded
            return snapshot.frame
        }
        return (built.frame, built.isSnapshot, encodedSnapshot)
    }

    /// ``catchUpFrame(from:digest:encoder:)`` over a copy of the sequencer. Pure (the
    /// snapshot comes from `snapshot`), so it runs on a worker thread too.
    static func catchUpFrame(
        name: String, sequencer: Sequencer, from: ListVersion, digest: StateDigest?, encoder: FrameEncoder,
        snapshot: (Snapshot.Reason) -> [UInt8]
    ) -> (frame: [UInt8], isSnapshot: Bool) {
        switch sequencer.catchUp(from: from) {
        case .snapshot(let reason):
            let wire: Snapshot.Reason = reason == .epochChanged ? .epochChanged : .resumeTooOld
            return (snapshot(wire), true)
        case .upToDate:
            if let digest, digest != sequencer.director.digest {
                return (snapshot(.resyncRequested), true)
            }
            return (
                diffFrame(name: name, sequencer: sequencer, from: from, changeset: Changeset(), encoder: encoder), false
            )
        case .changeset(let changeset):
            if let digest, let past = sequencer.state(at: from), past.digest != digest {
                return (snapshot(.resyncRequested), true)
            }
            let diff = diffFrame(name: name, sequencer: sequencer, from: from, changeset: changeset, encoder: encoder)
            // Only encode a snapshot to compare when it could plausibly be smaller.
            let rows = sequencer.director.rowCount + sequencer.director.sections.count
            if changeset.changeCount * 2 > rows {
                let frame = snapshot(.resumeTooOld)
                if frame.count < diff.count { return (frame, true) }
            }
            return (diff, false)
        }
    }

    private static func diffFrame(
        name: String, sequencer: Sequencer, from: ListVersion, changeset: Changeset, encoder: FrameEncoder
    ) -> [UInt8] {
        let diff = Diff(
            listName: name, epoch: from.epoch, fromVersion: from.version, toVersion: sequencer.position.version,
            digest: sequencer.director.digest, changeset: changeset, mutations: [])
        return encoder.encode(.diff(diff))
    }
}
