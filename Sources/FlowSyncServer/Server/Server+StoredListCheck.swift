import Dispatch
import FlowSyncLoop
import Logging

/// The background check of every stored list (issue #33, item 9; ``StoredListCheck``
/// has the store's side and its promises; docs/STORAGE.md, "The background check").
///
/// With lists on demand the start reads no list. After it, a chunk of
/// ``storedListCheckChunk`` list directories at a time is checked on a queue of its own
/// (dispatch class `.utility`) — never libuv's pool (snapshots, compactions) nor the loaders
/// (cold loads) — and each chunk's findings come back to the loop, where a damaged list
/// nobody has touched in this run is:
/// - logged at error, with the file and offset (`stored list damaged`);
/// - counted: `flowsync_stored_lists_damaged_total`, and `stored.damaged` in the stats;
/// - refused until a restart, exactly as its load would refuse it: its subscribers get
///   5002 internal-error, its writers a Reject 5002; every other list is served.
///
/// A list loaded, loading or refused meanwhile is left to its own load (its verdict
/// here may be stale: the files can grow once it is loaded). An I/O error is logged and
/// counted, and the list is not refused (its load will retry). Under `--repair` damage
/// is only logged: the list's load repairs it. A shutdown waits for the chunk in
/// flight, then the walk stops.
extension Server {
    /// List directories checked per chunk: tens of milliseconds of a worker, so a
    /// shutdown never waits long and findings reach the loop soon.
    static let storedListCheckChunk = 256

    /// The queue of the background check (one walk per process at a time in practice).
    /// `.utility`, not `.background`: on a loaded machine a background-class thread got
    /// so little CPU that 20,000 lists took 104 s; the loop and the loaders run at higher
    /// classes either way.
    private static let storedListCheckQueue = DispatchQueue(label: "flowsync.stored-list-check", qos: .utility)

    /// A progress line every this many lists checked.
    static let storedListCheckProgressEvery = 100_000

    /// Starts the walk when the store opened on demand and `lists.check_stored` is on.
    func startStoredListCheck(repair: Bool) {
        guard configuration.checkStoredLists, let (store, _) = storage.onDemand, let check = store.makeStoredListCheck()
        else { return }
        logger.info("checking every stored list in the background (lists.check_stored)")
        housekeeping.storedListCheck = Housekeeping.StoredListCheckProgress(startedAt: loop.now)
        offloadsOutstanding += 1
        runStoredListCheckChunk(check, store: store, repair: repair)
    }

    private func runStoredListCheckChunk(_ check: StoredListCheck, store: OnDemandStore, repair: Bool) {
        let loop = self.loop
        let completion = LoopBound { [weak self] (progress: StoredListCheck.Progress) in
            guard let self else { return }
            storedListCheckChunkDone(progress, check, store: store, repair: repair)
        }
        Self.storedListCheckQueue.async {
            let progress = check.checkNext(Self.storedListCheckChunk)
            _ = loop.execute { completion.value(progress) }
        }
    }

    private func storedListCheckChunkDone(
        _ progress: StoredListCheck.Progress, _ check: StoredListCheck, store: OnDemandStore, repair: Bool
    ) {
        let before = housekeeping.storedListCheck?.checked ?? 0
        housekeeping.storedListCheck?.checked += progress.checked
        if let state = housekeeping.storedListCheck,
            state.checked / Self.storedListCheckProgressEvery > before / Self.storedListCheckProgressEvery
        {
            logger.info(
                "stored lists check progress",
                metadata: [
                    "lists": "\(state.checked)", "damaged": "\(state.damaged)", "ms": "\(loop.now - state.startedAt)",
                ])
        }
        for finding in progress.findings { storedListFound(finding, store: store, repair: repair) }
        let stopping = lifecycle.isShuttingDown || storageFailure != nil
        guard progress.finished || stopping, var state = housekeeping.storedListCheck else {
            runStoredListCheckChunk(check, store: store, repair: repair)
            return
        }
        state.finished = progress.finished
        housekeeping.storedListCheck = state
        offloadsOutstanding -= 1
        logger.info(
            progress.finished ? "stored lists checked" : "stored lists check stopped by the shutdown",
            metadata: [
                "lists": "\(state.checked)", "damaged": "\(state.damaged)",
                "ms": "\(loop.now - state.startedAt)",
            ])
        finishShutdownIfDone()
    }

    private func storedListFound(_ finding: StoredListCheck.Finding, store: OnDemandStore, repair: Bool) {
        // Its own load checked (or is checking) it, and its files may have grown since
        // this read: not this walk's to report.
        if store.wasTouchedThisRun(key: finding.directory) { return }
        if let name = finding.listName, lists.slot(name) != nil { return }
        housekeeping.storedListCheck?.damaged += 1
        events.storedListDamaged()
        let corrupt = finding.error.isCorruption
        logger.error(
            corrupt
                ? (repair
                    ? "stored list damaged: its load will repair it (--repair)"
                    : "stored list damaged: refused until repaired (the other lists are served)")
                : "stored list unreadable: its load will retry",
            metadata: [
                "flowsync.list": "\(finding.listName ?? "?")", "directory": "lists/\(finding.directory)",
                "error": "\(finding.error)",
            ])
        guard corrupt, !repair, let name = finding.listName else { return }
        lists.refuse(name, finding.error)
    }
}
