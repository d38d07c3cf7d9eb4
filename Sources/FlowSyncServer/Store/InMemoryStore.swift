import FlowSyncCore

/// A ``DirectorStore`` in memory: what a file store would hold, without files. For
/// tests (a second `Server` given the same instance "restarts" over the same data) and
/// `engine = "memory"` (nothing survives the process).
///
/// It keeps per list the newest snapshot and the batches after it, and follows the
/// same rules as ``FileStore`` — one conformance suite checks both.
public final class InMemoryStore: DirectorStore {
    private struct StoredList {
        var snapshot: StoredSnapshot?
        var epoch: UInt64
        var batches: [Sequencer.Commit] = []
        var sinceSnapshot = 0
    }

    private var lists: [String: StoredList] = [:]
    private var unsynced = 0
    /// Batches since a list's snapshot that make a snapshot due (0: never).
    public var snapshotEveryBatches: Int
    /// Times ``sync()`` found something to do (for tests of group commit).
    public private(set) var syncCount = 0

    public init(snapshotEveryBatches: Int = FileStore.Options().snapshotEveryBatches) {
        self.snapshotEveryBatches = snapshotEveryBatches
    }

    public func recover(_ options: RecoveryOptions) throws(StoreError) -> RecoveryReport {
        var report = RecoveryReport()
        for (name, stored) in lists.sorted(by: { $0.key < $1.key }) {
            do throws(Sequencer.ReplayError) {
                var rebuilder =
                    try stored.snapshot.map { s throws(Sequencer.ReplayError) in
                        try ListRebuilder(snapshot: s, options: options)
                    }
                    ?? ListRebuilder(epoch: stored.epoch, options: options)
                for commit in stored.batches
                where commit.to.epoch != rebuilder.sequencer.position.epoch
                    || commit.to.version > rebuilder.sequencer.position.version
                {
                    try rebuilder.replay(commit)
                    report.replayedBatches += 1
                }
                report.lists.append(RecoveredList(name: name, sequencer: rebuilder.sequencer))
            } catch {
                throw .corrupt("memory:\(name)", offset: 0, error.description)
            }
        }
        return report
    }

    public func append(_ batch: StoredBatch) throws(StoreError) -> Bool {
        var stored = lists[batch.listName] ?? StoredList(epoch: batch.commit.to.epoch)
        stored.batches.append(batch.commit)
        stored.sinceSnapshot += 1
        lists[batch.listName] = stored
        unsynced += 1
        return snapshotEveryBatches > 0 && stored.sinceSnapshot >= snapshotEveryBatches
    }

    public var hasUnsyncedWrites: Bool { unsynced > 0 }

    public func sync() throws(StoreError) {
        guard unsynced > 0 else { return }
        unsynced = 0
        syncCount += 1
    }

    public func compact(_ snapshot: StoredSnapshot) throws(StoreError) {
        var stored = lists[snapshot.listName] ?? StoredList(epoch: snapshot.position.epoch)
        stored.snapshot = snapshot
        stored.batches.removeAll {
            $0.to.epoch == snapshot.position.epoch && $0.to.version <= snapshot.position.version
        }
        stored.sinceSnapshot = 0
        lists[snapshot.listName] = stored
    }

    public func startEpoch(_ snapshot: StoredSnapshot) throws(StoreError) {
        lists[snapshot.listName] = StoredList(snapshot: snapshot, epoch: snapshot.position.epoch)
    }

    public func close() throws(StoreError) {
        try sync()
    }

    /// Nothing to release: the values stay in memory (what a killed process would lose).
    public func abandon() {}

    /// Names of the stored lists (tests).
    public var listNames: [String] { lists.keys.sorted() }
}
