import FlowSyncCore
import FlowSyncLoop
import FlowSyncProtocol

/// Compaction off the loop thread (docs/ARCHITECTURE.md, "Storage", rule 3): the state
/// at the oldest resumable version is rebuilt, encoded and written on a worker; the loop
/// only stages (names the file) and installs (rename, drop the covered log).
extension Server {
    /// What a compaction's worker hands back.
    enum CompactionOutcome: Sendable {
        /// Written to a temporary file (a ``StagedCompactionStore``).
        case staged(StagedSnapshot, nanoseconds: UInt64)
        /// Built as a value, for a store that keeps values (``InMemoryStore``): its
        /// `compact(_:)` on the loop is a cheap store of that value.
        case built(StoredSnapshot, nanoseconds: UInt64)
        /// Encoded on the worker, for a store that writes bytes elsewhere
        /// (``CommittingStore``: PostgreSQL in cluster mode).
        case encoded(ListVersion, [UInt8], nanoseconds: UInt64)
        case failed(StoreError)
    }

    /// Starts a snapshot for each list that asked for one (after this turn's flush, so
    /// no ack waits for it): the state at the oldest version the history still holds, so
    /// every batch resumable now stays resumable after a restart.
    func compactDueLists() {
        // One in flight per list (ListTable.compactionDue); the store keeps saying
        // "due" until it is installed.
        for list in lists.takeDueCompactions() {
            guard storageFailure == nil else { return }
            startCompaction(of: list)
        }
    }

    private func startCompaction(of list: ListHost) {
        // A copy of the sequencer: a value (O(1) to take). The worker rebuilds the state
        // at `base` from it by reverting the history on its own copy; the loop goes on
        // committing on the original (copy-on-write).
        let sequencer = list.sequencer
        let base = sequencer.oldestResumable
        let name = list.name
        let stager: SnapshotStager?
        do {
            stager = try storage.stagedCompaction?.stageCompaction(of: name)
        } catch {
            storageFailed(error)
            return
        }
        let encodesOffLoop = committingStore != nil
        list.compaction = .running
        offloadsOutstanding += 1
        loop.offload(
            work: { () -> CompactionOutcome in
                let started = MonotonicClock.nanoseconds()
                guard let state = sequencer.state(at: base) else {
                    preconditionFailure(
                        "Internal inconsistency in Server: the oldest resumable version \(base) is out of the history's reach"
                    )
                }
                let snapshot = StoredSnapshot(
                    listName: name, position: base, digest: state.digest, sections: state.sections,
                    dedupe: sequencer.dedupeRecords(through: base))
                if encodesOffLoop {
                    let bytes = StoreFormat.encode(
                        snapshot, encoder: FrameEncoder(configuration: StoreFormat.compression))
                    return .encoded(base, bytes, nanoseconds: MonotonicClock.nanoseconds() - started)
                }
                guard let stager else { return .built(snapshot, nanoseconds: MonotonicClock.nanoseconds() - started) }
                do throws(StoreError) {
                    return .staged(try stager.write(snapshot), nanoseconds: MonotonicClock.nanoseconds() - started)
                } catch {
                    return .failed(error)
                }
            },
            then: { [weak self] outcome in
                guard let self else { return }
                offloadsOutstanding -= 1
                if list.compaction == .running { list.compaction = .idle }
                compactionFinished(name, outcome)
                // A shutdown waits for this completion before it closes the store.
                finishShutdownIfDone()
            })
    }

    /// Loop thread: the cheap half. Batches appended meanwhile went to the log and stay
    /// there (the store keeps every segment that ends after `base`).
    private func compactionFinished(_ name: String, _ outcome: CompactionOutcome) {
        let started = MonotonicClock.nanoseconds()
        let workNanoseconds: UInt64
        let base: ListVersion
        do throws(StoreError) {
            switch outcome {
            case .failed(let error):
                throw error
            case .staged(let staged, let nanoseconds):
                guard storageFailure == nil, let staging = storage.stagedCompaction else {
                    // After a storage failure nothing more is written.
                    storage.stagedCompaction?.discardCompaction(staged)
                    return
                }
                try staging.installCompaction(staged)
                (workNanoseconds, base) = (nanoseconds, staged.position)
            case .built(let snapshot, let nanoseconds):
                guard storageFailure == nil else { return }
                try store.compact(snapshot)
                (workNanoseconds, base) = (nanoseconds, snapshot.position)
            case .encoded(let position, let bytes, let nanoseconds):
                guard storageFailure == nil, let committingStore else { return }
                // Written asynchronously; a failure there is the store's to log.
                committingStore.compact(list: name, at: position, encoded: bytes)
                (workNanoseconds, base) = (nanoseconds, position)
            }
        } catch {
            storageFailed(error)
            return
        }
        let loopNanoseconds = MonotonicClock.nanoseconds() - started
        events.snapshotStored(nanoseconds: workNanoseconds + loopNanoseconds)
        logger.debug(
            "snapshot written",
            metadata: [
                "flowsync.list": "\(name)", "at": "\(base)", "worker_ms": "\(workNanoseconds / 1_000_000)",
                "loop_ms": "\(loopNanoseconds / 1_000_000)",
            ])
    }
}
