import FlowSyncCore
import FlowSyncProtocol

/// Writes a backup: a new data directory in the file store's own format (version 1),
/// holding every list as one snapshot at a committed version with its idempotency
/// window, and a clean-stop manifest (`STOPPED`) that records exactly those files.
/// Restoring is starting a daemon on that directory: recovery reads it like any store
/// after a clean stop, so a file missing, short or damaged is refused, never
/// misread (docs/STORAGE.md, "Backup and restore").
///
/// ``write(_:to:)`` runs on a worker thread. It takes values only: sequencers copied on
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
        guard directory.hasPrefix("/") else { return "the backup directory must be an absolute path on the server's machine: \(directory)" }
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
            if !entries.isEmpty { return "the backup directory \(directory) exists and is not empty (\(entries.count) entries): a backup goes into a new directory" }
        } catch {
            return "the backup directory \(directory) exists and is not a readable directory: \(error)"
        }
        return nil
    }

    /// Writes every list of `sequencers` (name → a copy taken on the loop) into
    /// `directory`, in this order, each step durable before the next:
    /// 1. per list, `lists/<dir>/snap-0000000000000001.fss` (written, `fdatasync`ed) and
    ///    its directory synced;
    /// 2. `lists/` synced;
    /// 3. `STOPPED` atomically (temporary file, sync, rename, sync of `directory`).
    /// A backup without `STOPPED` is incomplete: a crash or a failure mid-way leaves one,
    /// and a daemon started on it reads the lists it finds under the unclean-stop rules.
    ///
    /// Lists at version 0 with nothing in them are skipped: the store holds nothing for
    /// them either (a restart creates them afresh).
    static func write(_ sequencers: [(name: String, sequencer: Sequencer)], to directory: String, io: FileIO) throws(StoreError) -> Summary {
        let directory = directory.count > 1 && directory.hasSuffix("/") ? String(directory.dropLast()) : directory
        let lists = directory + "/lists"
        try io.makeDirectory(lists)
        // One encoder for this worker (a FrameEncoder is not Sendable).
        let encoder = FrameEncoder(configuration: StoreFormat.compression)
        var recorded: [CleanStopManifest.List] = []
        var bytesWritten = 0
        let snapshotName = StoreFormat.snapshotName(1)
        for (name, sequencer) in sequencers {
            let director = sequencer.director
            if sequencer.position.version == 0 && director.sections.isEmpty { continue }
            let snapshot = StoredSnapshot(listName: name, position: sequencer.position, digest: director.digest, sections: director.sections,
                                          dedupe: sequencer.dedupeRecords())
            let bytes = StoreFormat.encode(snapshot, encoder: encoder)
            let entry = StoreFormat.directoryName(for: name)
            let listDirectory = lists + "/" + entry
            try io.makeDirectory(listDirectory)
            try writeDurably(bytes, to: listDirectory + "/" + snapshotName, io: io)
            try io.syncDirectory(listDirectory)
            recorded.append(.init(directory: entry, name: name, position: sequencer.position, files: [.init(name: snapshotName, length: bytes.count)]))
            bytesWritten += bytes.count
        }
        try io.syncDirectory(lists)
        let manifest = CleanStopManifest(lists: recorded).encoded()
        let path = directory + "/" + CleanStopManifest.fileName
        try writeDurably(manifest, to: path + ".tmp", io: io)
        try io.rename(path + ".tmp", to: path)
        try io.syncDirectory(directory)
        return Summary(lists: recorded.count, bytes: bytesWritten + manifest.count)
    }

    private static func writeDurably(_ bytes: [UInt8], to path: String, io: FileIO) throws(StoreError) {
        let fd = try io.openForAppend(path, create: true, truncate: true)
        defer { io.close(fd) }
        try io.write(fd, bytes, path: path)
        try io.sync(fd, path: path)
    }
}
