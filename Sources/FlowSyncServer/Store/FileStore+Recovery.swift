// Past ~400 lines on purpose: recovery's steps (snapshot, replay, torn tail, repair)
// are one ordered procedure over the same files, read best top to bottom.
import FlowSyncCore
import FlowSyncProtocol

extension FileStore {
    /// Recovery at start, per list (docs/STORAGE.md, "Recovery"):
    /// 1. the newest snapshot that passes its checksum (a damaged newer one is
    ///    corruption: refused, or set aside under `repair`);
    /// 2. the log segments in order, records after the snapshot's version replayed
    ///    (each checked: checksum, contiguous version, list name, and the digest after
    ///    applying it);
    /// 3. a bad record at the end of the last segment with nothing valid after it is a
    ///    **torn tail** (a write the crash interrupted): truncated, and the bytes logged;
    /// 4. a bad record anywhere else is **corruption**: the store refuses (an error that
    ///    names file and offset) unless `repair`, which keeps the valid prefix, sets the
    ///    damaged files aside as `*.damaged` and asks for a new epoch.
    ///
    /// After a **clean stop** (a clean-stop manifest, `STOPPED`, is present) there is no
    /// torn tail: each list must have exactly the files the manifest records, with their
    /// recorded lengths, and recover to the recorded position. Anything else — a file
    /// missing, emptied, shorter, longer, damaged anywhere, or not recorded — is
    /// corruption (or, under `repair`, repaired as above). The manifest stays until
    /// recovery succeeds, so a refused start is refused again at the next attempt.
    /// Then the store is opened for writing: `RUNNING` written, the manifest removed.
    /// `OPENED` markers left by an on-demand run (docs/STORAGE.md, "Lists on demand")
    /// void the record of their list: it is recovered under the unclean-stop rules, like
    /// a list the manifest does not record when `RUNNING` is there too.
    public func recover(_ options: RecoveryOptions) throws(StoreError) -> RecoveryReport {
        try takeLock()
        var report = RecoveryReport()
        let start = try readStartRecord(repair: options.repair, report: &report)
        let entries = try io.listDirectory(listsDirectory).sorted()
        if start.hasManifest {
            // A list the clean stop recorded whose directory is gone.
            let present = Set(entries)
            for list in start.allRecords.sorted(by: { $0.directory < $1.directory })
            where !present.contains(list.directory) {
                let path = listsDirectory + "/" + list.directory
                guard options.repair else {
                    throw .corrupt(
                        path, offset: 0,
                        "missing: the clean stop recorded list \"\(list.name)\" through \(list.position) in it (start with --repair to start without it)"
                    )
                }
                report.notes.append(
                    "repair: \(path) is missing: list \"\(list.name)\", recorded through \(list.position) at the clean stop, is lost and starts empty"
                )
            }
        }
        var markers: [String] = []
        for entry in entries {
            let path = listsDirectory + "/" + entry
            let marked = start.marksMatter && io.exists(path + "/" + Self.openedMarker)
            if marked { markers.append(path + "/" + Self.openedMarker) }
            let (expectation, newEpoch) = try Self.manifestExpectation(
                start, forDirectory: entry, marked: marked, manifest: cleanStopManifest)
            if var files = try Self.readList(
                at: path, expecting: expectation, options: options, io: io, report: &report)
            {
                if newEpoch { files.list.needsNewEpoch = true }
                adopt(files)
                report.lists.append(files.list)
            }
        }
        if !start.hasManifest && !start.runningAtStart && !report.lists.isEmpty {
            report.notes.append(
                "no clean-stop manifest and no RUNNING marker (a store last stopped by a flowsyncd that wrote no manifest, or the manifest was deleted): recovered under the unclean-stop rules"
            )
        }
        try openForWriting()
        // The manifest is gone now (every list is under the unclean rules until the next
        // clean stop), so the markers mean nothing any more.
        for marker in markers { try io.remove(marker) }
        return report
    }

    /// ``StartRecord/expectation(forDirectory:marked:)``, a manifest entry that does not
    /// decode refused as corruption of the manifest.
    static func manifestExpectation(
        _ start: StartRecord, forDirectory entry: String, marked: Bool, manifest: String
    ) throws(StoreError)
        -> (ListExpectation, newEpoch: Bool)
    {
        do throws(StoreFormat.HeaderProblem) {
            return try start.expectation(forDirectory: entry, marked: marked)
        } catch {
            let (reason, offset) = error.reasonAndOffset
            throw .corrupt(manifest, offset: offset, reason + " (the entry of list directory \(entry))")
        }
    }

    /// Keeps a copy of a damaged file for a human to look at.
    func setAside(_ path: String, bytes: [UInt8]) throws(StoreError) {
        try Self.setAside(io: io, path, bytes: bytes)
    }

    /// Registers a list's files as recovery found them (loop thread): appends continue
    /// from here.
    func adopt(_ recovered: RecoveredListFiles) {
        let files = ListFiles(name: recovered.name, directory: recovered.directory)
        files.segments = recovered.segments
        files.snapshots = recovered.snapshots
        files.position = recovered.position
        files.nextGeneration = recovered.nextGeneration
        files.batchesSinceSnapshot = recovered.batchesSinceSnapshot
        files.bytesSinceSnapshot = recovered.bytesSinceSnapshot
        files.lastSegmentClosedForGood = recovered.lastSegmentClosedForGood
        lists[recovered.name] = files
    }
}

/// One list as recovery read it: the rebuilt list and the state of its files, as a value
/// (built on a worker thread when the list is loaded on demand, adopted on the loop).
struct RecoveredListFiles: Sendable {
    var name: String
    var directory: String
    var list: RecoveredList
    var segments: [FileStore.Segment] = []
    var snapshots: [FileStore.SnapshotFile] = []
    var position: ListVersion?
    var nextGeneration: UInt64 = 1
    var batchesSinceSnapshot = 0
    var bytesSinceSnapshot = 0
    var lastSegmentClosedForGood = false
}
