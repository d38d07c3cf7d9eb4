import FlowSyncCore
import FlowSyncProtocol

/// Writes a backup: a new data directory in the file store's own format (version 1),
/// holding every list as one snapshot at a committed version with its idempotency
/// window, and a clean-stop manifest (`STOPPED`) that records exactly those files.
/// Restoring is starting a daemon on that directory: recovery reads it like any store
/// after a clean stop, so a file missing, short or damaged is refused, never
/// misread (docs/STORAGE.md, "Backup and restore").
///
/// ``writeLists(_:into:io:)`` and ``finish(_:in:io:)`` run on a worker thread. It takes values only: sequencers copied on
/// the loop (copy-on-write, O(1) each), so the loop keeps committing while the backup
/// encodes and syncs.
enum StoreBackup {
    /// What a backup took and wrote.
    struct Summary: Sendable {
        var lists: Int
        var bytes: Int
    }

    /// Why a directory cannot take a backup, or `nil` when it can (missing, or an empty
    /// directory). Cheap enough for the loop thread: a stat and, at most, one `opendir`.
    static func refusal(of directory: String, dataDirectory: String?, io: FileIO) -> String? {
        guard directory.hasPrefix("/") else {
            return "the backup directory must be an absolute path on the server's machine: \(directory)"
        }
        let normalized = directory.count > 1 && directory.hasSuffix("/") ? String(directory.dropLast()) : directory
        if let data = dataDirectory {
            let data = data.count > 1 && data.hasSuffix("/") ? String(data.dropLast()) : data
            // Inside the live data directory a backup could be taken for a list (a
            // directory under lists/) or clash with the store's own files.
            if normalized == data || normalized.hasPrefix(data + "/") || data.hasPrefix(normalized + "/") {
                return "the backup directory \(directory) overlaps the data directory \(data)"
            }
        }
        guard io.exists(normalized) else { return nil }
        do throws(StoreError) {
            let entries = try io.listDirectory(normalized)
            if !entries.isEmpty {
                return
                    "the backup directory \(directory) exists and is not empty (\(entries.count) entries): a backup goes into a new directory"
            }
        } catch {
            return "the backup directory \(directory) exists and is not a readable directory: \(error)"
        }
        return nil
    }

    /// What a backup has written so far: the manifest's records and the bytes.
    struct Written: Sendable {
        var records: [CleanStopManifest.List] = []
        var bytes = 0

        mutating func add(_ other: Written) {
            records += other.records
            bytes += other.bytes
        }
    }

    /// Writes each list into `directory` (created with its `lists/` when missing):
    /// `lists/<dir>/snap-0000000000000001.fss`. Not synced file by file: one
    /// `fdatasync` and one directory `fsync` per list cost two journal commits each —
    /// most of a backup of many small lists — so ``finish(_:in:io:)`` makes them all
    /// durable at once before the manifest. A backup taken in chunks calls this once
    /// per chunk.
    ///
    /// Lists at version 0 with nothing in them are skipped: the store holds nothing for
    /// them either (a restart creates them afresh).
    static func writeLists(_ taken: [BackupList], into directory: String, io: FileIO) throws(StoreError) -> Written {
        let directory = normalized(directory)
        let lists = directory + "/lists"
        if !io.exists(lists) { try io.makeDirectory(lists) }
        // One encoder per call, on this worker (a FrameEncoder is not Sendable).
        let encoder = FrameEncoder(configuration: StoreFormat.compression)
        var written = Written()
        let snapshotName = StoreFormat.snapshotName(1)
        for list in taken {
            let sequencer = list.sequencer
            let director = sequencer.director
            if sequencer.position.version == 0 && director.sections.isEmpty { continue }
            let snapshot = StoredSnapshot(
                listName: list.name, position: sequencer.position, digest: director.digest, sections: director.sections,
                dedupe: sequencer.dedupeRecords())
            let bytes = StoreFormat.encode(snapshot, encoder: encoder)
            let entry = StoreFormat.directoryName(for: list.name)
            let listDirectory = lists + "/" + entry
            try io.makeDirectory(listDirectory)
            try write(bytes, to: listDirectory + "/" + snapshotName, io: io)
            written.records.append(
                .init(
                    directory: entry, name: list.name, position: sequencer.position,
                    files: [.init(name: snapshotName, length: bytes.count)]))
            written.bytes += bytes.count
        }
        return written
    }

    /// Completes a backup: every file written so far made durable in one `syncfs(2)` of
    /// the backup's file system (data, new files and their directory entries), then
    /// `STOPPED` written atomically (temporary file, sync, rename, sync of `directory`),
    /// recording exactly the lists written — so `STOPPED` is never durable before a
    /// file it records. A backup without
    /// `STOPPED` is incomplete: a crash or a failure before this leaves one, and a daemon
    /// started on it reads the lists it finds under the unclean-stop rules.
    static func finish(_ written: Written, in directory: String, io: FileIO) throws(StoreError) -> Summary {
        let directory = normalized(directory)
        let lists = directory + "/lists"
        // A backup of no list at all still is a store: with its lists/ directory.
        if !io.exists(lists) { try io.makeDirectory(lists) }
        try io.syncFileSystem(directory)
        let manifest = CleanStopManifest(lists: written.records).encoded()
        let path = directory + "/" + CleanStopManifest.fileName
        try writeDurably(manifest, to: path + ".tmp", io: io)
        try io.rename(path + ".tmp", to: path)
        try io.syncDirectory(directory)
        return Summary(lists: written.records.count, bytes: written.bytes + manifest.count)
    }

    private static func normalized(_ directory: String) -> String {
        directory.count > 1 && directory.hasSuffix("/") ? String(directory.dropLast()) : directory
    }

    private static func writeDurably(_ bytes: [UInt8], to path: String, io: FileIO) throws(StoreError) {
        let fd = try io.openForAppend(path, create: true, truncate: true)
        defer { io.close(fd) }
        try io.write(fd, bytes, path: path)
        try io.sync(fd, path: path)
    }

    /// Writes a file without syncing it (``finish(_:in:io:)`` syncs them all).
    private static func write(_ bytes: [UInt8], to path: String, io: FileIO) throws(StoreError) {
        let fd = try io.openForAppend(path, create: true, truncate: true)
        defer { io.close(fd) }
        try io.write(fd, bytes, path: path)
    }
}
