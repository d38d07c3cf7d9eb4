/// One list's ordering point: the authoritative director, its position, the
/// mutations received during the current loop turn, and a bounded history.
///
/// Lifecycle per loop turn: ``submit(_:)`` each arriving mutation (cheap checks only),
/// then ``seal()`` once — every pending mutation is applied in arrival order, each
/// atomically, and the successful ones become **one** batch with the next version.
/// Why batch per turn: one version, one changeset and one encoded frame serve every
/// mutation of the turn, so fan-out cost follows turns, not writes.
///
/// Pure: no clock, no I/O. The server calls it on its loop thread.
public struct Sequencer: Sendable {
    /// One committed batch, as kept in the history.
    public struct HistoryEntry: Sendable {
        /// The version the batch produced.
        public let version: ListVersion
        /// How to undo it (to rebuild older states for catch-up).
        let reversal: BatchReversal
        /// Approximate memory held.
        public let bytes: Int
        /// The mutations it contains, in order.
        public let mutations: [MutationID]
    }

    /// The outcome of one mutation in a sealed batch.
    public struct Outcome: Sendable {
        public let id: MutationID
        /// The committed version, or why it was refused.
        public let result: Result<ListVersion, SequencerRejection>
        /// Opaque tag the caller passed with the mutation (e.g. its connection).
        public let tag: Int
    }

    /// What ``seal()`` produced.
    public struct SealedBatch: Sendable {
        /// One outcome per pending mutation, in arrival order.
        public let outcomes: [Outcome]
        /// The committed batch, or `nil` when every mutation was refused.
        public let commit: Commit?
    }

    /// A committed batch.
    public struct Commit: Sendable {
        public init(
            from: ListVersion, to: ListVersion, changeset: Changeset, digest: StateDigest, mutations: [MutationID]
        ) {
            self.from = from
            self.to = to
            self.changeset = changeset
            self.digest = digest
            self.mutations = mutations
        }
        public let from: ListVersion
        public let to: ListVersion
        public let changeset: Changeset
        public let digest: StateDigest
        public let mutations: [MutationID]
    }

    /// Limits of the history used for catch-up.
    public struct HistoryLimits: Hashable, Sendable {
        public var maxBatches: Int
        public var maxBytes: Int
        public init(maxBatches: Int = 10_000, maxBytes: Int = 64 << 20) {
            self.maxBatches = maxBatches
            self.maxBytes = maxBytes
        }
    }

    /// How a subscriber at some position is brought up to date.
    public enum CatchUp: Sendable {
        /// Already at the current version.
        case upToDate
        /// The composed changeset of every batch after the position.
        case changeset(Changeset)
        /// Position unusable (other epoch, too old, or in the future): send a snapshot.
        case snapshot(SnapshotReason)
    }

    /// Why a catch-up needs a snapshot.
    public enum SnapshotReason: Hashable, Sendable {
        case epochChanged, tooOld, unknownPosition
    }

    public private(set) var director: Director
    public private(set) var position: ListVersion
    public var historyLimits: HistoryLimits
    /// Recent batches, oldest first (bounded by ``historyLimits``).
    public private(set) var history: [HistoryEntry] = []
    private var historyBytes = 0
    private var pending: [(request: MutationRequest, tag: Int)] = []
    /// Committed `(clientID, seq)` pairs, for idempotent retries.
    private var dedupe: DedupeWindow

    /// A sequencer for a list at `position` holding `director`.
    public init(
        director: Director = Director(), position: ListVersion, historyLimits: HistoryLimits = HistoryLimits(),
        dedupeLimits: DedupeWindow.Limits = DedupeWindow.Limits()
    ) {
        self.director = director
        self.position = position
        self.historyLimits = historyLimits
        self.dedupe = DedupeWindow(limits: dedupeLimits)
    }

    /// Approximate bytes the history holds (what ``HistoryLimits/maxBytes`` bounds).
    public var historyByteCount: Int { historyBytes }

    /// Drops the oldest history entries until at most `bytes` remain; returns the bytes
    /// dropped. For a budget across lists (the server's `[history] total_max_bytes`):
    /// resumes and bases older than what is kept are then answered as for any history
    /// limit (a snapshot, or `staleBase`).
    @discardableResult
    public mutating func trimHistory(toBytes bytes: Int) -> Int {
        var drop = 0
        var kept = historyBytes
        while drop < history.count && kept > bytes {
            kept -= history[drop].bytes
            drop += 1
        }
        guard drop > 0 else { return 0 }
        history.removeFirst(drop)
        let dropped = historyBytes - kept
        historyBytes = kept
        return dropped
    }

    /// The oldest version a subscriber can resume from with a changeset.
    public var oldestResumable: ListVersion {
        guard let first = history.first else { return position }
        return ListVersion(epoch: position.epoch, version: first.version.version - 1)
    }

    /// True when mutations wait for ``seal()``.
    public var hasPending: Bool { !pending.isEmpty }

    /// Queues a mutation for the next ``seal()``. `tag` comes back in its outcome.
    public mutating func submit(_ request: MutationRequest, tag: Int) {
        pending.append((request, tag))
    }

    /// Applies every pending mutation, in arrival order, as one batch.
    ///
    /// Per mutation, in order:
    /// 1. a `(clientID, seq)` already committed is not applied again: it gets its
    ///    original version (a retry); one older than the window is refused;
    /// 2. a base of another epoch, older than the history or in the future is refused;
    /// 3. the fast path — base is the current version and nothing precedes it in this
    ///    batch — applies the operations as written;
    /// 4. otherwise the group is replayed on the state at its base, which re-expresses
    ///    it by identity (``AnchoredOperation``), and applied to the current state
    ///    after everything committed since: the rebase (see docs/ORDERING.md).
    /// - Complexity: ``Director/applyBatch(_:)`` plus, for the rebased mutations, one
    ///   walk of the live director back through the history to the oldest base among
    ///   them and forward again (O(edits since that base), each O(log n)), and the
    ///   replay of each rebased group. No director is copied: a copy would make the
    ///   walk's first edit copy the row-ID index and the edited sections' storage (O(n)).
    public mutating func seal() -> SealedBatch {
        let batch = pending
        pending = []
        var outcomes: [Outcome?] = Array(repeating: nil, count: batch.count)
        var groups: [BatchGroup] = []
        var groupOwner: [Int] = []  // batch index of each group
        var firstInBatch: [MutationID: Int] = [:]  // for duplicates within the batch
        var duplicatesInBatch: [(index: Int, of: Int)] = []
        let anchoredInPast = anchorPastBases(batch.map(\.request))

        for (index, item) in batch.enumerated() {
            let request = item.request
            let id = MutationID(clientID: request.clientID, seq: request.seq)
            if let version = dedupe.committedVersion(of: id) {
                outcomes[index] = Outcome(id: id, result: .success(version), tag: item.tag)
                continue
            }
            if let oldest = dedupe.forgetsBelow(clientID: id.clientID), id.seq < oldest {
                outcomes[index] = Outcome(
                    id: id, result: .failure(.retryOutsideWindow(seq: id.seq, oldestRemembered: oldest)), tag: item.tag)
                continue
            }
            if let earlier = firstInBatch[id] {
                duplicatesInBatch.append((index, earlier))
                continue
            }
            if let rejection = check(base: request.base) {
                outcomes[index] = Outcome(id: id, result: .failure(rejection), tag: item.tag)
                continue
            }
            if request.base.epoch == 0 || (request.base == position && groups.isEmpty) {
                // At head, or current with nothing before it: apply as written.
                groups.append(.operations(request.operations))
            } else {
                // Rebase: anchored by identity in the writer's base state, where its
                // indices mean what it meant. For a current base that is the pre-batch
                // state, which the live director still holds (nothing is applied before
                // the loop ends); `anchor` replays the group and undoes the replay.
                let anchored: Result<[AnchoredOperation], MutationError>
                if request.base == position {
                    do { anchored = .success(try director.anchor(request.operations)) } catch {
                        anchored = .failure(error)
                    }
                } else if let past = anchoredInPast[index] {
                    anchored = past
                } else {
                    outcomes[index] = Outcome(
                        id: id, result: .failure(.staleBase(base: request.base, oldestKept: oldestResumable)),
                        tag: item.tag)
                    continue
                }
                switch anchored {
                case .success(let operations):
                    groups.append(.anchored(operations))
                case .failure(let error):
                    outcomes[index] = Outcome(id: id, result: .failure(.invalid(error)), tag: item.tag)
                    continue
                }
            }
            groupOwner.append(index)
            firstInBatch[id] = index
        }

        let outcome = director.applyBatch(groups: groups)
        var committedIDs: [MutationID] = []
        let next = position.next
        for (k, index) in groupOwner.enumerated() {
            let item = batch[index]
            let id = MutationID(clientID: item.request.clientID, seq: item.request.seq)
            switch outcome.results[k] {
            case .success:
                committedIDs.append(id)
                outcomes[index] = Outcome(id: id, result: .success(next), tag: item.tag)
            case .failure(let error):
                outcomes[index] = Outcome(id: id, result: .failure(.invalid(error)), tag: item.tag)
            }
        }
        for (index, original) in duplicatesInBatch {
            let item = batch[index]
            outcomes[index] = Outcome(
                id: MutationID(clientID: item.request.clientID, seq: item.request.seq),
                result: outcomes[original]!.result, tag: item.tag)
        }
        guard !committedIDs.isEmpty else {
            return SealedBatch(outcomes: outcomes.map { $0! }, commit: nil)
        }
        let from = position
        position = next
        for id in committedIDs { dedupe.record(id, version: next) }
        record(
            HistoryEntry(
                version: next, reversal: outcome.reversal, bytes: outcome.reversal.approximateBytes + 64,
                mutations: committedIDs))
        let commit = Commit(
            from: from, to: next, changeset: outcome.changeset, digest: director.digest, mutations: committedIDs)
        return SealedBatch(outcomes: outcomes.map { $0! }, commit: commit)
    }

    /// Anchors every pending mutation whose base is an older version of this epoch in
    /// its base state, keyed by batch index. The live director is walked back through
    /// the history, newest base first, each group anchored when its base is reached,
    /// then walked forward again by undoing the walk's own undo log: the director ends
    /// exactly as it began (same rows, digest and indexes), and nothing is copied.
    /// Mutations that the seal loop refuses before anchoring (retries, bad bases) are
    /// skipped; anchoring is pure, so anchoring one the loop later ignores (a duplicate)
    /// changes nothing.
    private mutating func anchorPastBases(
        _ requests: [MutationRequest]
    ) -> [Int: Result<[AnchoredOperation], MutationError>] {
        var byBase: [UInt64: [Int]] = [:]
        for (index, request) in requests.enumerated() {
            let id = MutationID(clientID: request.clientID, seq: request.seq)
            if dedupe.committedVersion(of: id) != nil { continue }
            if let oldest = dedupe.forgetsBelow(clientID: id.clientID), id.seq < oldest { continue }
            if request.base.epoch == 0 || request.base == position || check(base: request.base) != nil { continue }
            byBase[request.base.version, default: []].append(index)
        }
        guard !byBase.isEmpty else { return [:] }
        var results: [Int: Result<[AnchoredOperation], MutationError>] = [:]
        var walk: [UndoEntry] = []  // what walking back did, to walk forward again
        var reverted = history.count  // history[reverted...] is reverted
        for version in byBase.keys.sorted(by: >) {
            while reverted > 0 && history[reverted - 1].version.version > version {
                reverted -= 1
                director.undo(history[reverted].reversal.entries, recording: &walk)
            }
            for index in byBase[version]! {
                do { results[index] = .success(try director.anchor(requests[index].operations)) } catch {
                    results[index] = .failure(error)
                }
            }
        }
        director.undo(walk)
        return results
    }

    private func check(base: ListVersion) -> SequencerRejection? {
        // Epoch 0 is never a real epoch: it means "at head" — apply against whatever is
        // current, like a Redis command. For writers that do not subscribe (the CLI,
        // fire-and-forget producers) and so cannot know the version.
        if base.epoch == 0 { return nil }
        if base.epoch != position.epoch || base.version < oldestResumable.version {
            return .staleBase(base: base, oldestKept: oldestResumable)
        }
        if base.version > position.version { return .futureBase(base: base, current: position) }
        return nil
    }

    private mutating func record(_ entry: HistoryEntry) {
        history.append(entry)
        historyBytes += entry.bytes
        // Trim from the front; removing a prefix of a small array is cheap next to a batch.
        var drop = 0
        var bytes = historyBytes
        while history.count - drop > historyLimits.maxBatches
            || (bytes > historyLimits.maxBytes && history.count - drop > 1)
        {
            bytes -= history[drop].bytes
            drop += 1
        }
        if drop > 0 {
            history.removeFirst(drop)
            historyBytes = bytes
        }
    }

    /// The state at `version` of the current epoch, rebuilt by reverting the newer
    /// batches of the history on a copy, or `nil` when it is out of reach.
    /// - Complexity: O(sections touched since) copy-on-write plus the reverted edits.
    public func state(at version: ListVersion) -> Director? {
        state(at: version, from: director)
    }

    /// The state at `version`, rebuilt from `current` (the state at ``position``).
    func state(at version: ListVersion, from current: Director) -> Director? {
        guard version.epoch == position.epoch,
            version.version >= oldestResumable.version,
            version.version <= position.version
        else { return nil }
        var past = current
        for entry in history.reversed() where entry.version.version > version.version {
            past.revert(entry.reversal)
        }
        return past
    }

    /// How to bring a subscriber at `from` up to date.
    /// - Complexity: O(n) for the diff when behind; O(1) when up to date.
    public func catchUp(from: ListVersion) -> CatchUp {
        if from.epoch != position.epoch { return .snapshot(.epochChanged) }
        if from == position { return .upToDate }
        if from.version > position.version { return .snapshot(.unknownPosition) }
        guard let past = state(at: from) else { return .snapshot(.tooOld) }
        return .changeset(Changeset.diff(from: past, to: director))
    }

    /// Changes the limits later mutations are checked against (a config reload).
    public mutating func setDirectorLimits(_ limits: DirectorLimits) {
        director.limits = limits
    }

    // MARK: Recovery from a store

    /// What the idempotency window remembers of commits up to `version` (all when
    /// `nil`), for a snapshot written by a store.
    public func dedupeRecords(through version: ListVersion? = nil) -> [DedupeWindow.ClientRecord] {
        dedupe.records(through: version)
    }

    /// A sequencer rebuilt from a stored snapshot: the state at `position` and the
    /// idempotency window as it was then. Later batches come through ``replay(_:)``.
    public init(
        director: Director, position: ListVersion, historyLimits: HistoryLimits, dedupeLimits: DedupeWindow.Limits,
        restoring records: [DedupeWindow.ClientRecord]
    ) {
        self.init(director: director, position: position, historyLimits: historyLimits, dedupeLimits: dedupeLimits)
        self.dedupe = DedupeWindow(limits: dedupeLimits, restoring: records)
    }

    /// Why a stored batch cannot be replayed: the log does not fit the state it is
    /// replayed on (a gap, another epoch, a changeset that does not apply, or a digest
    /// that differs) — corruption the store's checksums did not catch, or a bug.
    public struct ReplayError: Error, Hashable, Sendable, CustomStringConvertible {
        public let description: String
        public init(description: String) { self.description = description }
    }

    /// Replays a committed batch read back from a store, exactly as it was committed:
    /// the state, the version, the history (for resume) and the idempotency window all
    /// advance as they did when the batch was sealed. On error nothing changes.
    /// - Complexity: that of ``Changeset/apply(to:)``.
    public mutating func replay(_ commit: Commit) throws(ReplayError) {
        guard commit.from == position, commit.to == position.next else {
            throw ReplayError(description: "batch \(commit.from)→\(commit.to) does not follow \(position)")
        }
        let reversal: BatchReversal
        do {
            reversal = try commit.changeset.applyReversibly(to: &director)
        } catch {
            throw ReplayError(description: "batch \(commit.from)→\(commit.to) does not apply: \(error)")
        }
        guard director.digest == commit.digest else {
            director.revert(reversal)
            throw ReplayError(
                description:
                    "batch \(commit.from)→\(commit.to): digest \(director.digest) after replay, \(commit.digest) recorded"
            )
        }
        position = commit.to
        for id in commit.mutations { dedupe.record(id, version: commit.to) }
        record(
            HistoryEntry(
                version: commit.to, reversal: reversal, bytes: reversal.approximateBytes + 64,
                mutations: commit.mutations))
    }

    /// Starts a new epoch (history lost or reset): the version restarts at 0 and every
    /// subscriber must resync from a snapshot.
    public mutating func startEpoch(_ epoch: UInt64) {
        position = ListVersion(epoch: epoch, version: 0)
        history = []
        historyBytes = 0
    }
}
