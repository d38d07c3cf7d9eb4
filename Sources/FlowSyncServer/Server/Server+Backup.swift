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
    /// The backups of this server: the one being written, and how it reads lists on
    /// disk.
    struct Backups {
        /// The backup being written off the loop, if any.
        var inFlight: BackupInFlight?
        /// Lists a backup reads from disk per worker job, with lists on demand: what it
        /// holds in memory at once, and the longest a load of one of them waits. Tests
        /// make it small to interleave more loads with the reads.
        var chunkSize = 256
    }

    struct BackupInFlight {
        var directory: String
        var startedAt: UInt64
        var io: FileIO
        /// Runs once, on the loop, with the outcome.
        var completion: (BackupReply) -> Void
        /// What was written so far.
        var written = StoreBackup.Written()
        /// Lists on demand: the stored lists not loaded at the start, taken chunk by
        /// chunk once the worker has listed them (`nil` before, and without on demand).
        var plan: BackupPlan?
        /// Lists on demand: storage key → name of every list loaded, or loading, since
        /// the backup started — how the plan knows a key is in memory now.
        var names: [String: String] = [:]
        /// Names whose load waits for the chunk in flight (their key is being read).
        var blockedLoads: [String] = []
        /// A worker is writing (the first lists, a chunk, or the manifest).
        var writing = false
    }

    /// Answers a BackupRequest the connection machine accepted (the grant reads every
    /// list): refused at once, or started, with the reply sent when it is on disk.
    func backup(_ request: BackupRequest, for connection: Connection) {
        let id = connection.id
        startBackup(to: request.directory) { [weak self] reply in
            // The connection may be gone by now: the backup stands, the answer is lost.
            guard let self, let connection = connections[id] else { return }
            send(
                .backupReply(
                    BackupReply(
                        requestID: request.requestID, failure: reply.failure, message: reply.message,
                        lists: reply.lists, bytes: reply.bytes)), to: connection)
            // Queued only: it leaves with this turn's flush (the check hook runs after
            // the poll phase in which this completion runs).
        }
    }

    /// Starts a backup of every list into `directory` (missing or empty, absolute,
    /// outside the data directory). `completion` runs on the loop thread exactly once:
    /// at once when refused, else when the backup is durable or has failed. The
    /// ``BackupReply/requestID`` it is given is 0 (the caller sets its own). `io` is for
    /// tests (a worker held at its first write, to watch the loop carry on).
    ///
    /// Consistency: every list is taken at a committed version no older than this call:
    /// a loaded list now, between two loop turns' seals (the batch of the current turn
    /// is sealed later, in the check hook, and is not in the backup); with lists on
    /// demand, a list on disk only later, by a read-only read on a worker during which
    /// it cannot load (``BackupPlan``), or from memory if it loaded meanwhile. So every
    /// write acknowledged before the request arrived is in it: an ack leaves only after
    /// its batch was sealed and appended (and, under `fsync = "always"`, synced).
    ///
    /// Not guaranteed: lists of different names are each at *a* committed version, not
    /// at one instant across lists (there is no cross-list transaction to preserve). The
    /// history for resume is not copied: a subscriber of the restored daemon resumes
    /// from the backup's version exactly, or gets a snapshot.
    public func startBackup(
        to directory: String, io: FileIO = PosixFileIO(), completion: @escaping (BackupReply) -> Void
    ) {
        func refuse(_ code: ErrorCode, _ message: String) {
            logger.warning("backup refused", metadata: ["directory": "\(directory)", "reason": "\(message)"])
            completion(BackupReply(requestID: 0, failure: code, message: message))
        }
        if let failure = storageFailure {
            return refuse(.internalError, "the store failed (\(failure)): no backup can be trusted; restart the daemon")
        }
        if lifecycle.isShuttingDown { return refuse(.serverShuttingDown, "the server is shutting down") }
        // Cluster mode: this node holds only the lists it owns now; the lists live in
        // PostgreSQL, whose own tools back them up consistently.
        if storage.cluster != nil {
            return refuse(
                .backupRefused,
                "cluster mode: the lists live in PostgreSQL, and this node holds only those it owns; back up the database instead (pg_basebackup or pg_dump, docs/CLUSTER.md)"
            )
        }
        if let running = backups.inFlight {
            return refuse(
                .overloaded, "a backup is already running (into \(running.directory)); try again when it has finished")
        }
        let dataDirectory = configuration.storageEngine == .file ? configuration.dataDirectory : nil
        if let reason = StoreBackup.refusal(of: directory, dataDirectory: dataDirectory, io: io) {
            return refuse(.backupRefused, reason)
        }

        // On the loop: the committed state of every loaded list, O(1) per list
        // (copy-on-write); unsorted (the manifest is ordered on the worker).
        let taken = lists.hosts.map { BackupList(name: $0.name, sequencer: $0.sequencer) }
        var backup = BackupInFlight(
            directory: directory, startedAt: MonotonicClock.nanoseconds(), io: io, completion: completion)
        var listKeys: (@Sendable () -> Result<[String], StoreError>)?
        var takenKeys = Set<String>()
        if let store = onDemandStore {
            // O(lists loaded or loading): one key each, so the plan can tell which
            // stored lists are in memory. Lists loading now are looked at later.
            for name in lists.hostedNames {
                let key = store.storageKey(for: name)
                backup.names[key] = name
                takenKeys.insert(key)
            }
            for name in lists.loadingNames { backup.names[store.storageKey(for: name)] = name }
            listKeys = store.storedListKeys()
        }
        backups.inFlight = backup
        let keyLister = listKeys
        let alreadyTaken = takenKeys
        logger.notice(
            "backup started",
            metadata: [
                "directory": "\(directory)", "lists loaded": "\(taken.count)", "on demand": "\(onDemandStore != nil)",
            ])
        runBackupWrite(
            work: { () throws(StoreError) -> (StoreBackup.Written, [String]) in
                let written = try StoreBackup.writeLists(taken, into: directory, io: io)
                guard let keyLister else { return (written, []) }
                return (written, try keyLister().get().filter { !alreadyTaken.contains($0) })
            },
            then: { [weak self] written, keys in
                guard let self else { return }
                backups.inFlight?.written.add(written)
                // Read before the optional chain starts modifying `backups` (exclusivity).
                let chunkSize = backups.chunkSize
                if onDemandStore != nil { backups.inFlight?.plan = BackupPlan(keys: keys, chunkSize: chunkSize) }
                continueBackup()
            })
    }

    /// Takes the next chunk of stored lists, or finishes. Runs on the loop whenever the
    /// backup may go on: after each write, and after a load while it waits for loads.
    func continueBackup() {
        guard var backup = backups.inFlight, !backup.writing else { return }
        if let failure = storageFailure { return failBackup(failure) }
        // A shutdown that began meanwhile waits for the backup to finish: each write
        // starts before the previous one's completion returns, so the offload count
        // never drops to zero in between (as for the backup of loaded lists alone).
        guard var plan = backup.plan else { return writeBackupManifest() }
        let step = plan.next { key in
            guard let name = backup.names[key] else { return .disk }
            if lists[name] != nil { return .memory(name: name) }
            return lists.isLoading(name) ? .loading : .disk
        }
        backup.plan = plan
        backups.inFlight = backup
        switch step {
        case .finished:
            backups.inFlight?.plan = nil
            writeBackupManifest()
        case .waitForLoads:
            // listLoaded() calls continueBackup() again.
            break
        case .take(let chunk):
            guard let store = onDemandStore else { return }
            // Memory copies now, between turns; the disk reads on the worker, while
            // these keys block their loads (BackupPlan.reading).
            let fromMemory = chunk.fromMemory.compactMap { name in
                lists[name].map { BackupList(name: name, sequencer: $0.sequencer) }
            }
            let read = chunk.fromDisk.isEmpty ? nil : store.prepareBackupRead(of: chunk.fromDisk)
            let directory = backup.directory
            let io = backup.io
            runBackupWrite(
                work: { () throws(StoreError) -> StoreBackup.Written in
                    var taken = fromMemory
                    if let read { taken += try read().get() }
                    return try StoreBackup.writeLists(taken, into: directory, io: io)
                },
                then: { [weak self] written in
                    guard let self else { return }
                    backups.inFlight?.written.add(written)
                    continueBackup()
                })
        }
    }

    /// Writes the manifest: the backup is complete when it is durable.
    private func writeBackupManifest() {
        guard let backup = backups.inFlight else { return }
        let written = backup.written
        let directory = backup.directory
        let io = backup.io
        runBackupWrite(
            work: { () throws(StoreError) -> StoreBackup.Summary in
                try StoreBackup.finish(written, in: directory, io: io)
            },
            then: { [weak self] summary in
                guard let self, let backup = backups.inFlight else { return }
                let milliseconds = (MonotonicClock.nanoseconds() - backup.startedAt) / 1_000_000
                logger.notice(
                    "backup written",
                    metadata: [
                        "directory": "\(directory)", "lists": "\(summary.lists)", "bytes": "\(summary.bytes)",
                        "ms": "\(milliseconds)",
                    ])
                endBackup(
                    BackupReply(
                        requestID: 0, failure: nil,
                        message: "backup of \(summary.lists) lists written to \(directory) in \(milliseconds) ms",
                        lists: UInt64(summary.lists), bytes: UInt64(summary.bytes)))
            })
    }

    /// Runs one write of the backup (the loaded lists and the key listing, a chunk, or
    /// the manifest) on libuv's pool; on the loop afterwards, lets the blocked loads go
    /// (the keys read are free again), then `then` — or fails the backup. Counted like
    /// any offloaded work, so a shutdown waits for it.
    private func runBackupWrite<Output: Sendable>(
        work: @escaping @Sendable () throws(StoreError) -> Output,
        then: @escaping (Output) -> Void
    ) {
        backups.inFlight?.writing = true
        offloadsOutstanding += 1
        loop.offload(
            work: { () -> Result<Output, StoreError> in
                do throws(StoreError) { return .success(try work()) } catch { return .failure(error) }
            },
            then: { [weak self] result in
                guard let self else { return }
                offloadsOutstanding -= 1
                backups.inFlight?.writing = false
                backups.inFlight?.plan?.chunkTaken()
                releaseLoadsBlockedByBackup()
                switch result {
                case .success(let output): then(output)
                case .failure(let error): failBackup(error)
                }
                finishShutdownIfDone()
            })
    }

    private func failBackup(_ error: StoreError) {
        guard let backup = backups.inFlight else { return }
        // The live store is untouched: a failed backup is the backup's problem only.
        logger.error("backup failed", metadata: ["directory": "\(backup.directory)", "error": "\(error)"])
        endBackup(
            BackupReply(
                requestID: 0, failure: .backupRefused,
                message: "the backup into \(backup.directory) failed and is incomplete (no STOPPED file): \(error)"))
    }

    /// The backup is over: every load it held goes on, and the answer goes out.
    private func endBackup(_ reply: BackupReply) {
        guard let backup = backups.inFlight else { return }
        releaseLoadsBlockedByBackup()
        backups.inFlight = nil
        backup.completion(reply)
    }

    /// Whether a load of `name` must wait for the backup's read of it; remembers the
    /// list's key either way (it is in memory from now on, as far as the plan knows).
    func backupHoldsLoad(of name: String) -> Bool {
        guard backups.inFlight != nil, let store = onDemandStore else { return false }
        let key = store.storageKey(for: name)
        backups.inFlight?.names[key] = name
        guard backups.inFlight?.plan?.blocksLoad(ofKey: key) == true else { return false }
        backups.inFlight?.blockedLoads.append(name)
        events.loadHeldByBackup()
        return true
    }

    /// A load of `name` has finished: a backup waiting for loads may go on.
    func backupSawLoad() {
        guard let backup = backups.inFlight, !backup.writing, backup.plan != nil else { return }
        continueBackup()
    }

    private func releaseLoadsBlockedByBackup() {
        guard let names = backups.inFlight?.blockedLoads, !names.isEmpty else { return }
        backups.inFlight?.blockedLoads = []
        for name in names { runBlockedLoad(name) }
    }

    /// Whether a backup is being written (for tests and stats).
    public var isBackupRunning: Bool { backups.inFlight != nil }
}
