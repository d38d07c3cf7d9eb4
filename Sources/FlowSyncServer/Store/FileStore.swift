import Dispatch
import FlowSyncCore
import FlowSyncProtocol

// Why this file is over 450 lines: it is the class and the private state that
// appending, syncing, closing and abandoning share (the descriptors, the dirty lists,
// the failure latch, the lock). Recovery, compaction, the clean stop, lists on demand
// and backups are in `FileStore+*.swift`; moving the rest out would make that state
// visible to the whole module.

/// The default ``DirectorStore``: per list, append-only log segments of committed
/// batches (a length and a CRC-32C per record) plus periodic snapshots, in
/// `<data_dir>/lists/<list>/`. Format, fsync policies, recovery, repair and compaction:
/// docs/STORAGE.md.
///
/// Loop-confined. Every call does blocking file I/O on the calling (loop) thread — see
/// docs/ARCHITECTURE.md, "Storage", for why that is the chosen trade-off and what it
/// costs — except a staged compaction's snapshot write (`FileStore+Compaction.swift`),
/// which runs on a worker. A list's active segment stays open between writes, for at most
/// ``Options/maxOpenLogs`` lists (the least recently written is closed first and
/// reopened by its next write).
public final class FileStore: DirectorStore {
    /// Tunables (`[storage]` in the config).
    public struct Options: Hashable, Sendable {
        /// The policy the server syncs with. Recorded while running, so the next start
        /// knows whether an unclean stop may have lost acknowledged batches.
        public var fsync: FsyncPolicy
        /// A snapshot is due after this many batches since the last one (0: never).
        public var snapshotEveryBatches: Int
        /// … or after this many log bytes since the last one (0: never).
        public var snapshotEveryBytes: Int
        /// Sync the files of several lists concurrently (the libdispatch pool; the
        /// calling thread waits for all). Default true.
        public var parallelSync: Bool
        /// Most log segments held open at once; the least recently written is closed
        /// (and reopened when its list is written again). Default 1024: a daemon with
        /// many lists must not run out of descriptors (a failed open is fatal).
        public var maxOpenLogs: Int

        public init(
            fsync: FsyncPolicy = .always, snapshotEveryBatches: Int = 10_000, snapshotEveryBytes: Int = 64 << 20,
            parallelSync: Bool = true,
            maxOpenLogs: Int = 1_024
        ) {
            self.fsync = fsync
            self.snapshotEveryBatches = snapshotEveryBatches
            self.snapshotEveryBytes = snapshotEveryBytes
            self.parallelSync = parallelSync
            self.maxOpenLogs = max(1, maxOpenLogs)
        }
    }

    struct Segment {
        var generation: UInt64
        var path: String
        var epoch: UInt64
        var firstVersion: UInt64
        /// The version of its last record (firstVersion − 1 when it has none).
        var lastVersion: UInt64
        /// Bytes written to it (header and records): what a clean stop records.
        var length: Int
    }

    struct SnapshotFile {
        var generation: UInt64
        var path: String
        /// What a clean stop records.
        var length: Int
    }

    /// One list's files.
    final class ListFiles {
        let name: String
        let directory: String
        var segments: [Segment] = []
        /// Snapshot files, oldest first (normally one).
        var snapshots: [SnapshotFile] = []
        /// The list's newest version as stored (its last record, or the snapshot of a
        /// new epoch): what a clean stop records.
        var position: ListVersion?
        /// The descriptor of the last segment, open for appending (nil when closed: it is
        /// reopened by the next append, unless ``lastSegmentClosedForGood``).
        var activeFD: Int32?
        /// The last segment takes no more records (rolled at compaction, or from before a
        /// new epoch): the next append starts a new segment.
        var lastSegmentClosedForGood = false
        /// When this list last wrote (for closing the least recently used descriptor).
        var lastUse: UInt64 = 0
        var nextGeneration: UInt64 = 1
        var batchesSinceSnapshot = 0
        var bytesSinceSnapshot = 0
        var unsynced = false
        /// A write, snapshot or new epoch touched the files since the list was loaded (or
        /// the list is new): an unload must remember what it left (lists on demand).
        var changedSinceLoad = false

        init(name: String, directory: String) {
            self.name = name
            self.directory = directory
        }

        func takeGeneration() -> UInt64 {
            defer { nextGeneration += 1 }
            return nextGeneration
        }
    }

    public let directory: String
    public var options: Options
    let io: FileIO
    var lists: [String: ListFiles] = [:]
    private var dirty: [ListFiles] = []
    private var lockFD: Int32?
    /// ``recover(_:)`` ran: the clean-stop manifest it found is consumed, so the store
    /// may be written (and may record a clean stop).
    var recovered = false
    /// Set when the store was opened on demand (``openOnDemand(_:)``).
    var onDemand: OnDemandState?
    /// The first write, sync, snapshot or rename that failed. A store that saw one never
    /// records a clean stop: the page cache may hold bytes the disk does not, and a
    /// retried fsync can report success for data that was dropped ("fsyncgate").
    private var failure: StoreError?
    /// The lists whose active segment has a descriptor open (at most
    /// ``Options/maxOpenLogs``), and a clock for their last use. Kept apart from `lists`
    /// so that making room scans the open descriptors, not every list: with a million
    /// lists a scan of all of them per segment opened made appends O(lists) (found
    /// generating a million-list store, issue #21).
    private var openLogs: [ObjectIdentifier: ListFiles] = [:]
    private var useClock: UInt64 = 0
    let encoder = FrameEncoder(configuration: StoreFormat.compression)
    /// Times ``sync()`` found something to sync (one per loop turn with writes, under
    /// `always`): for tests and metrics.
    public private(set) var syncCount = 0
    /// Bytes appended to logs since start (records and segment headers).
    public private(set) var bytesAppended = 0
    /// Called after each sync with how long it took, in nanoseconds (metrics).
    public var onSync: ((UInt64) -> Void)?

    var listsDirectory: String { directory + "/lists" }
    var runningMarker: String { directory + "/RUNNING" }
    var cleanStopManifest: String { directory + "/" + CleanStopManifest.fileName }

    /// A store in `directory` (created when missing). Nothing is read before
    /// ``recover(_:)``, which must come first.
    public init(directory: String, options: Options = Options(), io: FileIO = PosixFileIO()) {
        self.directory = directory.hasSuffix("/") && directory.count > 1 ? String(directory.dropLast()) : directory
        self.options = options
        self.io = io
    }

    deinit {
        for list in lists.values { if let fd = list.activeFD { io.close(fd) } }
        if let lockFD { io.close(lockFD) }
    }

    // MARK: Appending

    public func append(_ batch: StoredBatch) throws(StoreError) -> Bool {
        try recordingFailure { () throws(StoreError) -> Bool in try appendRecord(batch) }
    }

    private func appendRecord(_ batch: StoredBatch) throws(StoreError) -> Bool {
        let files = try files(for: batch.listName)
        let commit = batch.commit
        let continues =
            files.segments.last.map { $0.epoch == commit.to.epoch && $0.lastVersion + 1 == commit.to.version } ?? false
        if !continues || files.lastSegmentClosedForGood {
            try openSegment(files, epoch: commit.to.epoch, firstVersion: commit.to.version)
        } else if files.activeFD == nil {
            try reopenLastSegment(files)
        }
        useClock += 1
        files.lastUse = useClock
        let frame =
            batch.encodedDiff
            ?? encoder.encode(
                .diff(
                    Diff(
                        listName: batch.listName, epoch: commit.to.epoch, fromVersion: commit.from.version,
                        toVersion: commit.to.version, digest: commit.digest, changeset: commit.changeset,
                        mutations: commit.mutations)))
        let record = StoreFormat.record(frame: frame)
        let last = files.segments.count - 1
        try io.write(files.activeFD!, record, path: files.segments[last].path)
        files.segments[last].lastVersion = commit.to.version
        files.segments[last].length += record.count
        files.position = commit.to
        if !files.unsynced {
            files.unsynced = true
            dirty.append(files)
        }
        files.batchesSinceSnapshot += 1
        files.bytesSinceSnapshot += record.count
        bytesAppended += record.count
        return (options.snapshotEveryBatches > 0 && files.batchesSinceSnapshot >= options.snapshotEveryBatches)
            || (options.snapshotEveryBytes > 0 && files.bytesSinceSnapshot >= options.snapshotEveryBytes)
    }

    public var hasUnsyncedWrites: Bool { !dirty.isEmpty }

    public func sync() throws(StoreError) {
        try recordingFailure { () throws(StoreError) in try syncDirtyLists() }
    }

    private func syncDirtyLists() throws(StoreError) {
        guard !dirty.isEmpty else { return }
        let started = MonotonicClock.nanoseconds()
        let lists = dirty
        dirty = []
        var targets: [(fd: Int32, path: String)] = []
        targets.reserveCapacity(lists.count)
        for files in lists {
            files.unsynced = false
            guard let fd = files.activeFD, let segment = files.segments.last else { continue }
            targets.append((fd, segment.path))
        }
        if targets.count == 1 || !options.parallelSync {
            for target in targets { try io.sync(target.fd, path: target.path) }
        } else {
            // Several lists written this turn: their fdatasyncs run at once (the loop
            // thread takes part and waits for all). One list file per call would cost
            // one journal commit after another; concurrent ones share commits.
            var failures = [StoreError?](repeating: nil, count: targets.count)
            let io = self.io
            let targets = targets
            failures.withUnsafeMutableBufferPointer { slots in
                let slots = UnsafeSendableSlots(slots)
                DispatchQueue.concurrentPerform(iterations: targets.count) { k in
                    do throws(StoreError) { try io.sync(targets[k].fd, path: targets[k].path) } catch {
                        slots.buffer[k] = error
                    }
                }
            }
            if let failure = failures.first(where: { $0 != nil }) ?? nil { throw failure }
        }
        syncCount += 1
        onSync?(MonotonicClock.nanoseconds() - started)
    }

    // MARK: Snapshots

    public func compact(_ snapshot: StoredSnapshot) throws(StoreError) {
        // The staged steps in a row (FileStore+Compaction.swift); the server runs the
        // middle one off the loop thread.
        try recordingFailure { () throws(StoreError) in
            try installCompaction(try stageCompaction(of: snapshot.listName).write(snapshot))
        }
    }

    public func startEpoch(_ snapshot: StoredSnapshot) throws(StoreError) {
        try recordingFailure { () throws(StoreError) in try replaceList(snapshot) }
    }

    private func replaceList(_ snapshot: StoredSnapshot) throws(StoreError) {
        let files = try files(for: snapshot.listName)
        files.position = snapshot.position
        try writeSnapshot(snapshot, in: files)
        try closeActiveSegment(files)
        files.lastSegmentClosedForGood = true
        for segment in files.segments { try io.remove(segment.path) }
        files.segments = []
        try io.syncDirectory(files.directory)
        files.batchesSinceSnapshot = 0
        files.bytesSinceSnapshot = 0
    }

    /// Writes a snapshot atomically (temporary file, fsync, rename, fsync the
    /// directory), then deletes the older snapshots.
    private func writeSnapshot(_ snapshot: StoredSnapshot, in files: ListFiles) throws(StoreError) {
        let generation = files.takeGeneration()
        let path = files.directory + "/" + StoreFormat.snapshotName(generation)
        let temporary = path + ".tmp"
        let bytes = StoreFormat.encode(snapshot, encoder: encoder)
        try writeAtomically(bytes, to: path, temporary: temporary, directory: files.directory)
        for old in files.snapshots { try io.remove(old.path) }
        files.snapshots = [SnapshotFile(generation: generation, path: path, length: bytes.count)]
    }

    /// Writes `bytes` as the file `path`, all or nothing: to `temporary`, synced (the
    /// content is durable before the name points to it), renamed, and the rename made
    /// durable by syncing `directory`. A crash leaves the old file or the new one, and
    /// at worst a `.tmp` file that recovery removes.
    func writeAtomically(_ bytes: [UInt8], to path: String, temporary: String, directory: String) throws(StoreError) {
        let fd = try io.openForAppend(temporary, create: true, truncate: true)
        do throws(StoreError) {
            try io.write(fd, bytes, path: temporary)
            try io.sync(fd, path: temporary)
        } catch {
            io.close(fd)
            throw error
        }
        io.close(fd)
        try io.rename(temporary, to: path)
        try io.syncDirectory(directory)
    }

    /// Runs a writing operation; its error, if any, is remembered (see ``failure``).
    func recordingFailure<T>(_ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        do {
            return try body()
        } catch {
            if failure == nil { failure = error }
            throw error
        }
    }

    // MARK: Closing

    /// A clean stop: syncs everything, closes the segments, records what the store
    /// holds in the clean-stop manifest (`STOPPED`), then removes `RUNNING`. The next
    /// start accepts exactly what the manifest records (docs/STORAGE.md, "Clean stop").
    ///
    /// - Throws: the store's earlier failure, if a write, sync or snapshot failed before
    ///   (then no clean stop is recorded and `RUNNING` stays: the next start applies the
    ///   unclean-stop rules), or the failure of the stop itself.
    public func close() throws(StoreError) {
        defer { releaseLock() }
        if let failure {
            // Never record a clean stop over a failed write or sync: what the files hold
            // is not known to be what was written (see ``failure``).
            releaseDescriptors()
            throw failure
        }
        // Without a recovery nothing was read, so nothing can be recorded truthfully (a
        // manifest of no lists would make the next start refuse every list it finds).
        guard recovered else { return }
        try recordingFailure { () throws(StoreError) in
            // 1. Everything appended is durable and every segment closed (so no length
            //    recorded below can still grow).
            try syncDirtyLists()
            for files in lists.values { try closeActiveSegment(files) }
            // 2. Then the manifest, atomically: it may only exist once everything it
            //    lists is on disk.
            try writeCleanStopManifest()
            // On demand, the manifest may not vouch for lists this run never loaded
            // (after an unclean stop): then RUNNING stays, so the next start applies the
            // unclean rules to every list the manifest does not record (StartRecord).
            guard try finishOnDemandCleanStop() else { return }
            // 3. Only then is RUNNING removed. A crash between 2 and 3 leaves both files;
            //    the manifest wins, and it is exact (nothing was written after it).
            //    The other order would leave neither after a crash, and the next start
            //    could not tell this stop from an unclean one.
            if io.exists(runningMarker) {
                try io.remove(runningMarker)
                try io.syncDirectory(directory)
            }
        }
    }

    private func releaseLock() {
        if let lockFD {
            io.close(lockFD)
            self.lockFD = nil
        }
    }

    private func releaseDescriptors() {
        for files in openLogs.values {
            if let fd = files.activeFD { io.close(fd) }
            files.activeFD = nil
        }
        openLogs = [:]
        dirty = []
    }

    /// Releases every descriptor and the lock without syncing or marking a clean stop —
    /// what a killed process leaves behind (after a fatal storage error, and in crash
    /// tests).
    public func abandon() {
        releaseDescriptors()
        lists = [:]
        releaseLock()
    }

    // MARK: Files

    func files(for list: String) throws(StoreError) -> ListFiles {
        // Writing before recovery would write under a clean-stop manifest that still
        // describes the files (recovery consumes it first).
        precondition(recovered, "Internal inconsistency in FileStore: a list written before recover()")
        if let files = lists[list] {
            // Every writing path (append, new epoch, compaction) comes through here.
            files.changedSinceLoad = true
            return files
        }
        let path = listsDirectory + "/" + StoreFormat.directoryName(for: list)
        try io.makeDirectory(path)
        try io.syncDirectory(listsDirectory)
        let files = ListFiles(name: list, directory: path)
        files.changedSinceLoad = true
        lists[list] = files
        return files
    }

    /// Starts a segment: header written and synced, and its directory entry made
    /// durable, before any record goes in (so a record is never in a file that a crash
    /// could make vanish).
    private func openSegment(_ files: ListFiles, epoch: UInt64, firstVersion: UInt64) throws(StoreError) {
        try closeActiveSegment(files)
        try makeRoomForADescriptor()
        let generation = files.takeGeneration()
        let path = files.directory + "/" + StoreFormat.segmentName(generation)
        let fd = try io.openForAppend(path, create: true, truncate: true)
        files.activeFD = fd
        files.lastSegmentClosedForGood = false
        openLogs[ObjectIdentifier(files)] = files
        let header = StoreFormat.encode(
            StoreFormat.SegmentHeader(epoch: epoch, firstVersion: firstVersion, listName: files.name))
        files.segments.append(
            Segment(
                generation: generation, path: path, epoch: epoch, firstVersion: firstVersion,
                lastVersion: firstVersion - 1,
                length: header.count))
        try io.write(fd, header, path: path)
        try io.sync(fd, path: path)
        try io.syncDirectory(files.directory)
        bytesAppended += header.count
    }

    func closeActiveSegment(_ files: ListFiles) throws(StoreError) {
        guard let fd = files.activeFD else { return }
        if files.unsynced, let segment = files.segments.last {
            try io.sync(fd, path: segment.path)
            files.unsynced = false
            dirty.removeAll { $0 === files }
        }
        io.close(fd)
        files.activeFD = nil
        openLogs[ObjectIdentifier(files)] = nil
    }

    /// Reopens the last segment of a list to continue it (after a restart, or after its
    /// descriptor was closed to make room).
    private func reopenLastSegment(_ files: ListFiles) throws(StoreError) {
        guard let segment = files.segments.last else { return }
        try makeRoomForADescriptor()
        files.activeFD = try io.openForAppend(segment.path, create: false, truncate: false)
        openLogs[ObjectIdentifier(files)] = files
    }

    /// Closes the least recently written segment when ``Options/maxOpenLogs`` are open
    /// (syncing it first if it holds unsynced records). O(maxOpenLogs), only when full.
    private func makeRoomForADescriptor() throws(StoreError) {
        guard openLogs.count >= options.maxOpenLogs else { return }
        var victim: ListFiles?
        for files in openLogs.values {
            if victim == nil || files.lastUse < victim!.lastUse { victim = files }
        }
        if let victim { try closeActiveSegment(victim) }
    }

    func takeLock() throws(StoreError) {
        guard lockFD == nil else { return }
        try io.makeDirectory(listsDirectory)
        lockFD = try io.lock(directory + "/LOCK")
    }

    func writeRunningMarker() throws(StoreError) {
        let path = runningMarker
        let text = Array("fsync=\(options.fsync.rawValue)\n".utf8)
        let fd = try io.openForAppend(path, create: true, truncate: true)
        do throws(StoreError) {
            try io.write(fd, text, path: path)
            try io.sync(fd, path: path)
        } catch {
            io.close(fd)
            throw error
        }
        io.close(fd)
        try io.syncDirectory(directory)
    }
}

/// Each concurrent iteration writes only its own slot, and the buffer outlives
/// `concurrentPerform` (which returns after every iteration).
private struct UnsafeSendableSlots: @unchecked Sendable {
    let buffer: UnsafeMutableBufferPointer<StoreError?>
    init(_ buffer: UnsafeMutableBufferPointer<StoreError?>) { self.buffer = buffer }
}
