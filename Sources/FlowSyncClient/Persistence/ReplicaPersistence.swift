import FlowSyncCore
import FlowSyncProtocol

/// Decides what of the session's lists to write to disk, and when. Pure: the shell
/// (``ClientCore``) shows it the session after every input and carries out the
/// returned ``Action``s on disk, then reports durable replica writes back.
///
/// Two files per list (docs/SDK.md, "Offline"):
/// - the **pending file**, rewritten whenever the pending queue changes (an edit, a
///   send, an ack, a commit, a rollback): every write the replica file does not
///   contain, in order, with its `(clientID, seq)`, anchored operations and the Mutate
///   as sent;
/// - the **replica file**, the confirmed state at its `(epoch, version, digest)`,
///   written at the ``PersistenceSchedule`` cadence, always together with (and after) a
///   fresh pending file.
///
/// The rule that keeps the two consistent whatever the crash point: a committed write
/// leaves the pending file only once a replica file at or past the version it committed
/// at is durable. Until then it stays, marked with that version (``PendingWrite/ackedAt``):
/// a relaunch on an older replica shows it (re-applied by identity) and drops it when
/// the resume reaches that version; a relaunch on a newer replica drops it at once.
struct ReplicaPersistence: Sendable {
    /// What to write.
    enum Action: Sendable {
        /// Replace the list's pending file.
        case writePending(PersistedPending)
        /// Replace the pending file, then the replica file; report the replica's
        /// position with ``replicaWritten(list:at:)`` once both are durable.
        case writeReplica(PersistedReplica, pending: PersistedPending)
    }

    /// What the pending file says about one write, to see when it must be rewritten.
    private struct Mark: Equatable {
        var seq: UInt64
        var sent: Bool
        var ackedAt: ListVersion?
    }

    private struct Journal: Sendable {
        var schedule: PersistenceSchedule
        /// The position of the replica file on disk (durable).
        var persisted: ListVersion?
        /// The confirmed position seen last.
        var position: ListVersion?
        /// Writes committed past ``persisted``, no longer pending in the session; each
        /// with `ackedAt` set to its commit version.
        var committed: [PendingWrite] = []
        /// The session's pending writes seen last.
        var pending: [PendingWrite] = []
        /// Commit versions of writes a Diff showed committed (their Ack may not come).
        var commitVersions: [UInt64: ListVersion] = [:]
        /// What the pending file on disk says (or will, once queued writes land).
        var marks: [Mark] = []
    }

    let options: PersistenceOptions
    private var journals: [String: Journal] = [:]

    init(options: PersistenceOptions) {
        self.options = options
    }

    private func newJournal() -> Journal {
        Journal(
            schedule: PersistenceSchedule(
                everyBatches: options.writeEveryBatches, everyMilliseconds: options.writeEveryMilliseconds))
    }

    /// A list was restored from disk: what the files say is already there.
    mutating func restored(list name: String, position: ListVersion?, pending: [PendingWrite]) {
        var journal = newJournal()
        journal.persisted = position
        journal.position = position
        journal.pending = pending
        journal.marks = pending.map(Self.mark)
        journals[name] = journal
    }

    /// Records the session's verdict on a write (``SessionAction/complete(list:seq:_:)``).
    mutating func completed(list name: String, seq: UInt64, _ result: Result<ListVersion, FlowSyncError>) {
        guard case .success(let version) = result, journals[name] != nil else { return }
        journals[name]!.commitVersions[seq] = version
    }

    /// A replica file at `position` is durable: writes committed at or before it (or in
    /// an older epoch) leave the pending file at its next write.
    mutating func replicaWritten(list name: String, at position: ListVersion) {
        guard var journal = journals[name] else { return }
        journal.persisted = position
        journal.committed.removeAll { write in
            guard let at = write.ackedAt else { return true }
            return at.epoch != position.epoch || at <= position
        }
        journals[name] = journal
    }

    /// Looks at every list after a session input; returns the writes due.
    ///
    /// - Parameter flush: Write every replica that is behind now (pause, close).
    mutating func observe(_ session: ClientSession, now: UInt64, flush: Bool = false) -> [Action] {
        var actions: [Action] = []
        for name in session.lists.keys.sorted() {
            let list = session.lists[name]!
            if case .failed = list.phase { continue }
            var journal = journals[name] ?? newJournal()
            if list.position != journal.position, let position = list.position {
                let batches: Int
                if let old = journal.position, old.epoch == position.epoch, position.version >= old.version {
                    batches = Int(clamping: position.version - old.version)
                } else {
                    batches = 1
                }
                journal.schedule.advanced(batches: batches, now: now)
                journal.position = position
            }
            // Put off while a sent write's fate is unknown and the confirmed state moved
            // since it was sent: a catch-up Diff or a Snapshot names no mutations, so the
            // state may contain the write while the pending file still lists it as
            // unanswered — a relaunch would then show it twice. Its Ack settles it.
            let uncertain = list.pending.contains {
                $0.ackedAt == nil && $0.sent.map { $0.base != list.position } ?? false
            }
            let writeReplica = (journal.schedule.isDue(now: now) || (flush && journal.schedule.isDirty)) && !uncertain
            // Writes that left the pending queue: committed ones stay on disk until a
            // replica contains them; rejected ones go.
            let still = Set(list.pending.map(\.seq))
            for write in journal.pending where !still.contains(write.seq) && write.sent != nil {
                guard let at = journal.commitVersions[write.seq] ?? write.ackedAt else { continue }
                if let persisted = journal.persisted, persisted.epoch == at.epoch, at <= persisted { continue }
                var committed = write
                committed.ackedAt = at
                journal.committed.append(committed)
            }
            journal.commitVersions = journal.commitVersions.filter { still.contains($0.key) }
            journal.pending = list.pending
            let writes = journal.committed + list.pending
            let marks = writes.map(Self.mark)
            let pendingFile = PersistedPending(name: name, nextSeq: session.nextSequenceNumber, writes: writes)
            // A changed pending file is queued even when a replica write (which
            // rewrites it too) is due: a send waits behind it on the directory's queue,
            // and must find its "sent" mark there.
            if marks != journal.marks {
                journal.marks = marks
                actions.append(.writePending(pendingFile))
            }
            if writeReplica, let position = list.position {
                journal.schedule.wrote()
                actions.append(
                    .writeReplica(
                        PersistedReplica(name: name, position: position, confirmed: list.confirmed),
                        pending: pendingFile))
            }
            journals[name] = journal
        }
        return actions
    }

    private static func mark(_ write: PendingWrite) -> Mark {
        Mark(seq: write.seq, sent: write.sent != nil, ackedAt: write.ackedAt)
    }
}

/// Where and how often a client keeps its lists on disk (``FlowSyncClient/Configuration/persistence``).
///
/// Off by default. With a directory, each list the client opens is kept there: its
/// confirmed state (written at the cadence below, and on ``FlowSyncClient/pause()`` and
/// ``FlowSyncClient/close()``) and its pending writes (written in the background, in
/// order, each before its write is sent; ``FlowSyncClient/flushPersistence()`` waits).
/// At the next launch, ``FlowSyncClient/director(_:)`` shows the list from disk before
/// any network, resumes from the stored position, and resends the stored writes
/// unchanged. The writer identity (client ID) is stored there too, so it is stable per
/// installation. One client at a time per directory (a `lock` file enforces it:
/// another client gets ``FlowSyncError/persistenceUnavailable(_:)``).
public struct PersistenceOptions: Sendable, Hashable {
    /// The directory (created if missing). Use one the system does not purge, such as
    /// Application Support on Apple platforms.
    public var directory: String
    /// Write a list's confirmed state after this many batches … Default 100.
    public var writeEveryBatches: Int
    /// … or this many milliseconds after the first batch not on disk. Default 5,000.
    public var writeEveryMilliseconds: UInt64
    /// `fsync` every file (and the directory) before using it. Default true; turning it
    /// off keeps the files consistent after an app crash but not after a power loss.
    public var synchronizesToDisk: Bool
    /// Whether an edit call returns only once the edit is on disk. Default true: an edit
    /// whose call returned survives a kill of the app, at the cost of one file write
    /// (with `fsync`) waited for on the calling thread — 10–20 ms on this Linux
    /// machine's disk, expected far less on a phone's flash (not measured). False: the
    /// call returns at once and the edit is written in the background, still in order
    /// and still before it is sent; a kill within those milliseconds can lose the newest
    /// edits (never one that was sent). ``FlowSyncClient/flushPersistence()`` waits for
    /// them where it matters.
    public var waitsForDisk: Bool

    /// Keeps the client's lists in `directory` (a path).
    public init(
        directory: String, writeEveryBatches: Int = 100, writeEveryMilliseconds: UInt64 = 5_000,
        synchronizesToDisk: Bool = true, waitsForDisk: Bool = true
    ) {
        precondition(writeEveryBatches >= 1, "writeEveryBatches must be at least 1")
        self.directory = directory
        self.writeEveryBatches = writeEveryBatches
        self.writeEveryMilliseconds = writeEveryMilliseconds
        self.synchronizesToDisk = synchronizesToDisk
        self.waitsForDisk = waitsForDisk
    }
}
