import FlowSyncCore

/// What every store of lists does, however it commits: recover at start, store a
/// snapshot, start an epoch (or refuse to), close. A store commits either by
/// appending (``DirectorStore``: a write now, a sync before the flush) or later
/// (``CommittingStore``: a completion on the loop); the server finds out which once, at
/// init (``StorageMode``), and never asks a store for what it does not do (issue #30:
/// the cluster's store used to refuse `append` with a trap).
public protocol ListStore: AnyObject {
    /// Reads every stored list back: the newest valid snapshot, then the log replayed
    /// over it, with the history (for resume) and the idempotency window rebuilt (a
    /// store that loads lists on demand only opens here). Call once, first.
    func recover(_ options: RecoveryOptions) throws(StoreError) -> RecoveryReport

    /// Writes `snapshot` (the state of its list at `snapshot.position`, which is at
    /// most the current version) and drops the log wholly before it. Batches after the
    /// snapshot's version stay in the log, so they remain resumable after a restart.
    func compact(_ snapshot: StoredSnapshot) throws(StoreError)

    /// Replaces everything stored for the list with `snapshot`, the first state of a
    /// new epoch (after a repair or a lost history). A store may refuse (cluster mode:
    /// not built).
    func startEpoch(_ snapshot: StoredSnapshot) throws(StoreError)

    /// Syncs and releases files; marks a clean shutdown (``FileStore``: records what it
    /// left in a clean-stop manifest, which the next start holds the files to).
    func close() throws(StoreError)

    /// Releases every resource without syncing or marking a clean stop — what a killed
    /// process leaves behind. Called instead of ``close()`` after a fatal storage error
    /// (the state in memory is ahead of the disk, so a clean-stop mark would lie).
    func abandon()
}

/// Where committed batches go so that an acknowledged write survives a crash, and where
/// they come back from at start, by appending. Two implementations share one
/// conformance suite (`Tests/FlowSyncStoreTests`): ``InMemoryStore`` (tests, and
/// `engine = "memory"`) and ``FileStore`` (the default: logs and snapshots in the data
/// directory, docs/STORAGE.md).
///
/// Loop-confined like the server that drives it. The contract, per loop turn:
/// 1. ``append(_:)`` each list's sealed batch (a write, no fsync);
/// 2. ``sync()`` once, before any ack or diff of those batches leaves (fsync policy
///    `always`; under `interval` a timer calls it, under `never` nobody does);
/// 3. when ``append(_:)`` said a snapshot is due, ``compact(_:)`` after the flush.
///
/// Any error from 1–3 is fatal for the daemon: the batch must not be acknowledged, and
/// the in-memory state is now ahead of the disk.
public protocol DirectorStore: ListStore {
    /// Appends a committed batch; returns true when the list is due a snapshot.
    /// Not durable before ``sync()``.
    func append(_ batch: StoredBatch) throws(StoreError) -> Bool

    /// True when appended batches wait for ``sync()``.
    var hasUnsyncedWrites: Bool { get }

    /// Makes every batch appended so far durable — one call covers every list written
    /// this turn (group commit).
    func sync() throws(StoreError)
}

/// fsync policy: when appended batches reach the disk (`[storage] fsync`).
public enum FsyncPolicy: String, Hashable, Sendable, CaseIterable {
    /// Before any ack or diff of a batch leaves (one fsync per list written per loop
    /// turn). A crash loses nothing acknowledged.
    case always
    /// Every `fsync_interval_ms`; acks leave at once. An OS crash or power loss loses
    /// at most that interval (a killed process loses nothing: the page cache survives).
    case interval
    /// Never explicitly (the kernel writes back within ~30 s). For tests and caches.
    case never
}

/// A committed batch as stored.
public struct StoredBatch: Sendable {
    public var listName: String
    public var commit: Sequencer.Commit
    /// The batch's `Diff` frame as encoded for subscribers, which the file store reuses
    /// as the record body (no second encode); `nil` lets the store encode it.
    public var encodedDiff: [UInt8]?

    public init(listName: String, commit: Sequencer.Commit, encodedDiff: [UInt8]? = nil) {
        self.listName = listName
        self.commit = commit
        self.encodedDiff = encodedDiff
    }
}

/// A list's state at one version, as a snapshot stores it.
public struct StoredSnapshot: Sendable {
    public var listName: String
    public var position: ListVersion
    public var digest: StateDigest
    public var sections: [Section]
    /// The idempotency window as of ``position``.
    public var dedupe: [DedupeWindow.ClientRecord]

    public init(
        listName: String, position: ListVersion, digest: StateDigest, sections: [Section],
        dedupe: [DedupeWindow.ClientRecord]
    ) {
        self.listName = listName
        self.position = position
        self.digest = digest
        self.sections = sections
        self.dedupe = dedupe
    }
}

/// How recovery rebuilds lists.
public struct RecoveryOptions: Sendable {
    public var directorLimits: DirectorLimits
    public var historyLimits: Sequencer.HistoryLimits
    public var dedupeLimits: DedupeWindow.Limits
    /// Keep the valid prefix of a damaged log instead of refusing to start.
    public var repair: Bool

    public init(
        directorLimits: DirectorLimits = DirectorLimits(), historyLimits: Sequencer.HistoryLimits = .init(),
        dedupeLimits: DedupeWindow.Limits = .init(), repair: Bool = false
    ) {
        self.directorLimits = directorLimits
        self.historyLimits = historyLimits
        self.dedupeLimits = dedupeLimits
        self.repair = repair
    }
}

/// One list as recovery rebuilt it.
public struct RecoveredList: Sendable {
    public var name: String
    public var sequencer: Sequencer
    /// True when what is stored may not be everything clients saw (a repair dropped
    /// data, or a policy other than `always` after an unclean stop): the server starts
    /// a new epoch, so clients resync from a snapshot instead of trusting a gap.
    public var needsNewEpoch: Bool

    public init(name: String, sequencer: Sequencer, needsNewEpoch: Bool = false) {
        self.name = name
        self.sequencer = sequencer
        self.needsNewEpoch = needsNewEpoch
    }
}

/// What recovery found.
public struct RecoveryReport: Sendable {
    public var lists: [RecoveredList] = []
    /// One line per notable event (a torn tail truncated, a repair, a new epoch).
    public var notes: [String] = []
    /// Bytes cut from torn tails.
    public var truncatedBytes = 0
    /// Bytes a repair dropped (damaged records and everything after them).
    public var repairedBytes = 0
    /// Batches replayed from logs.
    public var replayedBatches = 0

    /// Whether a repair changed or found anything: a file set aside, cut or missing, a
    /// list lost. Every note of a repair starts with `repair: ` — even one that drops no
    /// byte (a segment deleted after a clean stop is found missing, not dropped).
    public var repairedAnything: Bool { notes.contains { $0.hasPrefix("repair: ") } }

    public init() {}
}

/// Rebuilds one list: a snapshot (or the empty state), then batches in order. Shared by
/// both stores so they cannot disagree on what a stored list means.
struct ListRebuilder {
    var sequencer: Sequencer

    /// Starts from a snapshot; throws a description when it does not load.
    init(snapshot: StoredSnapshot, options: RecoveryOptions) throws(Sequencer.ReplayError) {
        // Loaded without limits (a lowered limit must not make stored data unreadable);
        // the configured ones apply to later mutations.
        let director: Director
        do {
            director = try Director(sections: snapshot.sections, limits: .unlimited)
        } catch {
            throw Sequencer.ReplayError(description: "snapshot of \(snapshot.position) does not load: \(error)")
        }
        guard director.digest == snapshot.digest else {
            throw Sequencer.ReplayError(
                description: "snapshot of \(snapshot.position): digest \(director.digest), \(snapshot.digest) recorded")
        }
        sequencer = Sequencer(
            director: director, position: snapshot.position, historyLimits: options.historyLimits,
            dedupeLimits: options.dedupeLimits, restoring: snapshot.dedupe)
        sequencer.setDirectorLimits(options.directorLimits)
    }

    /// Starts from the empty state at version 0 of `epoch`.
    init(epoch: UInt64, options: RecoveryOptions) {
        var director = Director(limits: .unlimited)
        director.limits = options.directorLimits
        sequencer = Sequencer(
            director: director, position: ListVersion(epoch: epoch, version: 0), historyLimits: options.historyLimits,
            dedupeLimits: options.dedupeLimits)
    }

    mutating func replay(_ commit: Sequencer.Commit) throws(Sequencer.ReplayError) {
        try sequencer.replay(commit)
    }
}

extension DirectorLimits {
    /// No limit at all: for loading stored data.
    static let unlimited = DirectorLimits(
        maxIDBytes: .max, maxKindBytes: .max, maxPayloadBytes: .max, maxSections: .max,
        maxRows: .max, maxOpsPerMutation: .max)
}

/// A store that commits a batch later than its append returns (cluster mode: a
/// statement pipelined to PostgreSQL). The server routes the frames of such a batch —
/// its Diff, the Acks and Rejects of its mutations, and any snapshot of its list taken
/// meanwhile — through a ``CommitGate``: they leave only once the commit returned
/// committed (docs/ARCHITECTURE.md, "Storage", rule 7).
///
/// ``FileStore`` and ``InMemoryStore`` do not conform: their batches are durable after
/// ``DirectorStore/sync()`` in the same turn, and the server keeps its synchronous path
/// for them. A committing store is not a ``DirectorStore``: it has no `append`.
public protocol CommittingStore: ListStore {
    /// Starts committing `batch`. `completion` runs exactly once, on the loop thread —
    /// possibly before this call returns — with how the commit ended. The server
    /// submits one list's batches in version order; a store completes them in that
    /// order (a later batch of a list cannot commit when an earlier one did not).
    func submit(_ batch: StoredBatch, completion: @escaping (CommitOutcome) -> Void)
    /// Whether the list's next snapshot is due (the server then builds one off the
    /// loop and hands it to ``compact(list:at:encoded:)``). Default: never.
    func snapshotDue(of list: String) -> Bool
    /// Stores a snapshot encoded off the loop (`StoreFormat`'s snapshot format) as the
    /// list's state at `position`. Default: nothing.
    func compact(list: String, at position: ListVersion, encoded: [UInt8])
}

extension CommittingStore {
    public func snapshotDue(of list: String) -> Bool { false }
    public func compact(list: String, at position: ListVersion, encoded: [UInt8]) {}
}

/// Why a store fenced a batch (``CommitOutcome/fenced(_:)``, cluster mode).
public enum FenceReason: Sendable, Equatable {
    /// Another node claimed the list (its name, when the store read it): the list now
    /// lives there, and this node serves it as a replica at its next use.
    case claimedElsewhere(owner: String?)
    /// An append was cut off by a lost PostgreSQL connection and, read back, had not
    /// committed; this node still owns the list. Its state in memory is ahead of the
    /// log, so the server drops it and loads it again from PostgreSQL at once — on this
    /// node (issue #33: the clients were told it had moved to another node).
    case notCommitted

    /// What the list's clients are told, after "list "name"".
    public var explanation: String {
        switch self {
        case .claimedElsewhere(let owner?):
            return "is now owned by node \(owner) (another node claimed it); reconnect and resume, any node serves it"
        case .claimedElsewhere(nil):
            return "is now owned by another node (it claimed the list); reconnect and resume, any node serves it"
        case .notCommitted:
            return
                "lost an unconfirmed write when the connection to PostgreSQL was cut (it did not commit) and reloads from PostgreSQL on this node; reconnect and resume"
        }
    }
}

/// How an asynchronous commit (``CommittingStore/submit(_:completion:)``) ended.
public enum CommitOutcome: Sendable {
    /// The batch is durable: its frames may leave.
    case committed
    /// The store refused the batch because this node may no longer append to the list
    /// (cluster mode: another node claimed it, or an append was cut off and did not
    /// commit — `reason` says which). Nothing of the batch leaves; the server drops the
    /// list and closes the connections that lost a frame of it, and its subscribers,
    /// with `server-draining` (5001) and a message that says what happened. Every later
    /// batch of the list that was submitted ends the same way.
    case fenced(FenceReason)
    /// The commit failed: nothing of the batch leaves, and the server takes the
    /// storage-failure path (the fatal handler, every connection closed).
    case failed(StoreError)
}
