import FlowSyncCore

/// How the previous run ended, as the files at start tell it (docs/STORAGE.md,
/// "Clean stop").
enum PreviousStop {
    /// A clean stop recorded this manifest: recovery accepts exactly what it lists.
    case clean(CleanStopManifest)
    /// The same, indexed rather than decoded (an on-demand start).
    case cleanIndexed(CleanStopManifestIndex)
    /// `RUNNING` without a manifest: a crash (or a kill, or a failed store). The
    /// torn-tail rule applies; `newEpochForAll` when batches acknowledged before it may
    /// be missing from the disk (a policy other than `always`, or a damaged manifest
    /// set aside by `--repair`).
    case unclean(newEpochForAll: Bool)
    /// Neither file: a new data directory, or one last stopped by a flowsyncd that wrote
    /// no manifest. Recovered under the unclean-stop rules (nothing else is known).
    case unrecorded
}

extension FileStore {
    // MARK: At a clean stop

    /// What the store holds now, list by list. Every segment is closed and synced when
    /// this is called, so the lengths are final.
    func cleanStopRecord() -> CleanStopManifest {
        var recorded: [CleanStopManifest.List] = []
        var entries = Set<String>()
        for files in lists.values {
            guard let record = record(of: files) else { continue }
            recorded.append(record)
            entries.insert(record.directory)
        }
        // On demand: the lists not loaded now, as they were left or recorded.
        recorded += recordsOfListsNotLoaded(loadedEntries: entries)
        return CleanStopManifest(lists: recorded)
    }

    /// One list's files as a clean stop records them (its segment closed and synced);
    /// `nil` for a list without files.
    func record(of files: ListFiles) -> CleanStopManifest.List? {
        var entries: [CleanStopManifest.File] = []
        for snapshot in files.snapshots {
            entries.append(.init(name: fileName(snapshot.path), length: snapshot.length))
        }
        for segment in files.segments { entries.append(.init(name: fileName(segment.path), length: segment.length)) }
        // A list without files (none is kept so today) has nothing to check.
        guard !entries.isEmpty else { return nil }
        guard let position = files.position else {
            preconditionFailure("Internal inconsistency in FileStore: list \"\(files.name)\" has files but no position")
        }
        return .init(directory: fileName(files.directory), name: files.name, position: position, files: entries)
    }

    /// Writes `STOPPED` atomically: a temporary file, `fdatasync`, `rename`, `fsync` of
    /// the data directory — so a crash leaves either no manifest (the stop counts as
    /// unclean) or a complete one, never a partial manifest that could be trusted.
    func writeCleanStopManifest() throws(StoreError) {
        let bytes = cleanStopRecord().encoded()
        let path = cleanStopManifest
        // The rename itself is durable before RUNNING goes (the caller removes it next).
        try writeAtomically(bytes, to: path, temporary: path + ".tmp", directory: directory)
    }

    // MARK: At start

    /// Reads how the previous run stopped. A manifest that does not decode is refused as
    /// corruption, naming the file and offset (it may stand for damage elsewhere that
    /// only it could reveal); under `repair` it is set aside, and every list is
    /// recovered under the unclean-stop rules and starts a new epoch.
    func previousStop(
        repair: Bool, indexed: Bool = false, report: inout RecoveryReport
    ) throws(StoreError) -> PreviousStop {
        // An interrupted manifest write: never renamed, so never trusted.
        try io.remove(cleanStopManifest + ".tmp")
        if io.exists(cleanStopManifest) {
            // A large manifest, on demand: checked through a mapping that never holds
            // more than a window of it (issue #33: reading 80 MB at a million lists was
            // most of the start's peak RSS). Damage takes the path below, which reads it
            // whole and reports (or sets aside) exactly as before.
            if indexed, let index = CleanStopManifestIndex(mappingValid: cleanStopManifest) {
                return .cleanIndexed(index)
            }
            let bytes = try io.readFile(cleanStopManifest)
            do throws(StoreFormat.HeaderProblem) {
                // `RUNNING` may be there too: a crash after the manifest was written at
                // the stop (before RUNNING was removed) or at the start (after RUNNING
                // was written, before the manifest was removed). Nothing was written
                // after the manifest in either case, so it is exact, and the stop clean.
                return indexed
                    ? .cleanIndexed(try CleanStopManifestIndex(validating: bytes, path: cleanStopManifest))
                    : .clean(try CleanStopManifest.decode(bytes))
            } catch {
                let (reason, offset) = error.reasonAndOffset
                guard repair else {
                    throw .corrupt(
                        cleanStopManifest, offset: offset,
                        reason + " (start with --repair to recover without it; every list then starts a new epoch)")
                }
                try setAside(cleanStopManifest, bytes: bytes)
                report.notes.append(
                    "repair: the clean-stop manifest \(cleanStopManifest) is damaged (\(reason) at byte \(offset)); set aside as \(cleanStopManifest).damaged: every list is recovered under the unclean-stop rules and starts a new epoch"
                )
                return .unclean(newEpochForAll: true)
            }
        }
        if io.exists(runningMarker) {
            // A run that did not stop cleanly under a policy other than `always` may have
            // acknowledged batches that never reached the disk: every list starts a new
            // epoch.
            let text = String(decoding: try io.readFile(runningMarker), as: UTF8.self)
            if !text.contains("fsync=always") {
                report.notes.append(
                    "the previous run stopped uncleanly with \(text.trimmingCharacters(in: .whitespacesAndNewlines)): acknowledged batches may be lost, every list starts a new epoch"
                )
                return .unclean(newEpochForAll: true)
            }
            return .unclean(newEpochForAll: false)
        }
        return .unrecorded
    }

    /// Opens the store for writing, in this order:
    /// 1. `RUNNING` is written and synced: from now on, a stop without a new manifest
    ///    is an unclean one;
    /// 2. then the manifest is removed and the removal synced, before anything is
    ///    appended: a later crash must not find a manifest that no longer describes
    ///    the files (it would refuse a store that only has a torn tail).
    /// A crash between 1 and 2 leaves both files, which reads as a clean stop — true, as
    /// nothing was written yet. The other order would leave neither file, which reads
    /// as a store with no record of its last stop.
    func openForWriting() throws(StoreError) {
        try writeRunningMarker()
        if io.exists(cleanStopManifest) {
            try io.remove(cleanStopManifest)
            try io.syncDirectory(directory)
        }
        recovered = true
    }

    /// The last component of a path.
    func fileName(_ path: String) -> String { Self.lastComponent(path) }

    /// The last component of a path (any thread).
    static func lastComponent(_ path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }
}
