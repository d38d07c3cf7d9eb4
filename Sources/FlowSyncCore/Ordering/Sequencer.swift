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

    /// A sequencer for a list at `position` holding `director`.
    public init(director: Director = Director(), position: ListVersion, historyLimits: HistoryLimits = HistoryLimits()) {
        self.director = director
        self.position = position
        self.historyLimits = historyLimits
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
    /// - Complexity: that of ``Director/applyBatch(_:)`` for the accepted groups.
    public mutating func seal() -> SealedBatch {
        let batch = pending
        pending = []
        var outcomes: [Outcome?] = Array(repeating: nil, count: batch.count)
        var accepted: [Int] = []
        for (index, item) in batch.enumerated() {
            if let rejection = check(base: item.request.base) {
                outcomes[index] = Outcome(id: id(item.request), result: .failure(rejection), tag: item.tag)
            } else {
                accepted.append(index)
            }
        }
        let outcome = director.applyBatch(accepted.map { batch[$0].request.operations })
        var committed: [MutationID] = []
        let next = position.next
        for (k, index) in accepted.enumerated() {
            let item = batch[index]
            switch outcome.results[k] {
            case .success:
                committed.append(id(item.request))
                outcomes[index] = Outcome(id: id(item.request), result: .success(next), tag: item.tag)
            case .failure(let error):
                outcomes[index] = Outcome(id: id(item.request), result: .failure(.invalid(error)), tag: item.tag)
            }
        }
        guard !committed.isEmpty else {
            return SealedBatch(outcomes: outcomes.map { $0! }, commit: nil)
        }
        let from = position
        position = next
        record(HistoryEntry(version: next, reversal: outcome.reversal, bytes: outcome.reversal.approximateBytes + 64, mutations: committed))
        let commit = Commit(from: from, to: next, changeset: outcome.changeset, digest: director.digest, mutations: committed)
        return SealedBatch(outcomes: outcomes.map { $0! }, commit: commit)
    }

    private func id(_ r: MutationRequest) -> MutationID { MutationID(clientID: r.clientID, seq: r.seq) }

    private func check(base: ListVersion) -> SequencerRejection? {
        // Epoch 0 is never a real epoch: it means "at head" — apply against whatever is
        // current, like a Redis command. For writers that do not subscribe (the CLI,
        // fire-and-forget producers) and so cannot know the version.
        if base.epoch == 0 { return nil }
        if base.epoch != position.epoch || base.version < oldestResumable.version {
            return .staleBase(base: base, oldestKept: oldestResumable)
        }
        if base.version > position.version { return .futureBase(base: base, current: position) }
        if base != position { return .baseNotCurrent(base: base, current: position) }
        return nil
    }

    private mutating func record(_ entry: HistoryEntry) {
        history.append(entry)
        historyBytes += entry.bytes
        // Trim from the front; removing a prefix of a small array is cheap next to a batch.
        var drop = 0
        var bytes = historyBytes
        while history.count - drop > historyLimits.maxBatches || (bytes > historyLimits.maxBytes && history.count - drop > 1) {
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
        guard version.epoch == position.epoch,
              version.version >= oldestResumable.version,
              version.version <= position.version else { return nil }
        var past = director
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

    /// Starts a new epoch (history lost or reset): the version restarts at 0 and every
    /// subscriber must resync from a snapshot.
    public mutating func startEpoch(_ epoch: UInt64) {
        position = ListVersion(epoch: epoch, version: 0)
        history = []
        historyBytes = 0
    }
}
