import FlowSyncCore
import FlowSyncLoop
import FlowSyncProtocol

/// The online backup (docs/STORAGE.md, "Backup and restore"; Redis's BGSAVE and
/// `etcdctl snapshot save` are the models): the state of every list is taken on the
/// loop thread in O(lists) — a copy of each sequencer, a value whose storage is shared
/// copy-on-write — then encoded, written and synced on a worker while the loop goes on
/// committing. The answer comes back on the loop (the offload's completion, woken by
/// libuv's `uv_async`).
extension Server {
    /// A backup in progress (one at a time: a second could only compete for the disk).
    struct BackupInFlight {
        var directory: String
        var startedAt: UInt64
    }

    /// Answers a BackupRequest the connection machine accepted (the grant reads every
    /// list): refused at once, or started, with the reply sent when it is on disk.
    func backup(_ request: BackupRequest, for connection: Connection) {
        let id = connection.id
        startBackup(to: request.directory) { [weak self] reply in
            // The connection may be gone by now: the backup stands, the answer is lost.
            guard let self, let connection = connections[id] else { return }
            send(.backupReply(BackupReply(requestID: request.requestID, failure: reply.failure, message: reply.message,
                                          lists: reply.lists, bytes: reply.bytes)), to: connection)
            // Queued only: it leaves with this turn's flush (the check hook runs after
            // the poll phase in which this completion runs).
        }
    }

    /// Starts a backup of every hosted list into `directory` (missing or empty, absolute,
    /// outside the data directory). `completion` runs on the loop thread exactly once:
    /// at once when refused, else when the backup is durable or has failed. The
    /// ``BackupReply/requestID`` it is given is 0 (the caller sets its own). `io` is for
    /// tests (a worker held at its first write, to watch the loop carry on).
    ///
    /// Consistency: every list is taken at the version it has in this call, between two
    /// loop turns' seals — a committed version (the batch of the current turn is sealed
    /// later, in the check hook, and is not in the backup). So every write acknowledged
    /// before the request arrived is in it: an ack leaves only after its batch was
    /// sealed (and, under `fsync = "always"`, synced).
    ///
    /// Not guaranteed: lists of different names are each at *a* committed version, not
    /// at one instant across lists (there is no cross-list transaction to preserve). The
    /// history for resume is not copied: a subscriber of the restored daemon resumes
    /// from the backup's version exactly, or gets a snapshot.
    public func startBackup(to directory: String, io: FileIO = PosixFileIO(), completion: @escaping (BackupReply) -> Void) {
        func refuse(_ code: ErrorCode, _ message: String) {
            logger.warning("backup refused", metadata: ["directory": "\(directory)", "reason": "\(message)"])
            completion(BackupReply(requestID: 0, failure: code, message: message))
        }
        if let failure = storageFailure { return refuse(.internalError, "the store failed (\(failure)): no backup can be trusted; restart the daemon") }
        if lifecycle.isShuttingDown { return refuse(.serverShuttingDown, "the server is shutting down") }
        // Lists on demand: the lists not loaded now are on disk only, and this backup
        // copies the loaded ones. Refused rather than a backup that silently lacks lists
        // (not built yet: a backup that reads the unloaded lists on a worker).
        if onDemandStore != nil {
            return refuse(.backupRefused, "lists.on_demand is on: a backup would miss the lists not loaded now; not supported yet (stop the daemon and copy the data directory, or run without lists.on_demand)")
        }
        if let running = backupInFlight { return refuse(.overloaded, "a backup is already running (into \(running.directory)); try again when it has finished") }
        let dataDirectory = configuration.storageEngine == .file ? configuration.dataDirectory : nil
        if let reason = StoreBackup.refusal(of: directory, dataDirectory: dataDirectory, io: io) { return refuse(.backupRefused, reason) }

        // On the loop: the committed state of every list, O(1) per list (copy-on-write);
        // unsorted (the manifest is ordered on the worker).
        let taken = lists.values.map { (name: $0.name, sequencer: $0.sequencer) }
        backupInFlight = BackupInFlight(directory: directory, startedAt: MonotonicClock.nanoseconds())
        offloadsOutstanding += 1
        logger.notice("backup started", metadata: ["directory": "\(directory)", "lists": "\(taken.count)"])
        loop.offload(work: { () -> Result<StoreBackup.Summary, StoreError> in
            do throws(StoreError) {
                return .success(try StoreBackup.write(taken, to: directory, io: io))
            } catch {
                return .failure(error)
            }
        }, then: { [weak self] result in
            guard let self else { return }
            offloadsOutstanding -= 1
            let started = backupInFlight?.startedAt ?? 0
            backupInFlight = nil
            let milliseconds = (MonotonicClock.nanoseconds() - started) / 1_000_000
            switch result {
            case .success(let summary):
                logger.notice("backup written", metadata: ["directory": "\(directory)", "lists": "\(summary.lists)", "bytes": "\(summary.bytes)", "ms": "\(milliseconds)"])
                completion(BackupReply(requestID: 0, failure: nil, message: "backup of \(summary.lists) lists written to \(directory) in \(milliseconds) ms",
                                       lists: UInt64(summary.lists), bytes: UInt64(summary.bytes)))
            case .failure(let error):
                // The live store is untouched: a failed backup is the backup's problem only.
                logger.error("backup failed", metadata: ["directory": "\(directory)", "error": "\(error)"])
                completion(BackupReply(requestID: 0, failure: .backupRefused, message: "the backup into \(directory) failed and is incomplete (no STOPPED file): \(error)"))
            }
            // A shutdown waits for this completion (the offload count).
            finishShutdownIfDone()
        })
    }

    /// Whether a backup is being written (for tests and stats).
    public var isBackupRunning: Bool { backupInFlight != nil }
}
