/// Compaction in stages (``StagedCompactionStore``): the snapshot file is written off
/// the loop thread, and only the renames and deletions run on it.
extension FileStore: StagedCompactionStore {
    public func stageCompaction(of list: String) throws(StoreError) -> SnapshotStager {
        let files = try files(for: list)
        let generation = files.takeGeneration()
        let path = files.directory + "/" + StoreFormat.snapshotName(generation)
        return SnapshotStager(
            listName: list, generation: generation, temporaryPath: path + ".tmp", path: path, io: io,
            batchesBefore: files.batchesSinceSnapshot, bytesBefore: files.bytesSinceSnapshot)
    }

    public func installCompaction(_ staged: StagedSnapshot) throws(StoreError) {
        // A failure here is the store's failure: no clean stop is recorded after it.
        try recordingFailure { () throws(StoreError) in try install(staged) }
    }

    private func install(_ staged: StagedSnapshot) throws(StoreError) {
        let stager = staged.stager
        // Abandoned meanwhile (a simulated crash), or a newer snapshot already exists
        // (cannot happen with one compaction in flight per list): keep what is there.
        guard let files = lists[stager.listName],
            !files.snapshots.contains(where: { $0.generation > stager.generation })
        else {
            discardCompaction(staged)
            return
        }
        // Rename, then make the new name durable before anything it covers is deleted.
        try io.rename(stager.temporaryPath, to: stager.path)
        try io.syncDirectory(files.directory)
        for old in files.snapshots { try io.remove(old.path) }
        files.snapshots = [SnapshotFile(generation: stager.generation, path: stager.path, length: staged.bytes)]
        // The clean-stop manifest records each list's position; a list whose only
        // history is this snapshot is at its version.
        if files.position == nil { files.position = staged.position }
        // Roll the log: the next batch starts a new segment, so every older segment is
        // eventually wholly before some snapshot and can be deleted whole. Batches
        // appended while the snapshot was written are in segments that end after its
        // version, so they stay.
        try closeActiveSegment(files)
        files.lastSegmentClosedForGood = true
        let base = staged.position
        var kept: [Segment] = []
        for segment in files.segments {
            if segment.epoch != base.epoch || segment.lastVersion <= base.version {
                try io.remove(segment.path)
            } else {
                kept.append(segment)
            }
        }
        files.segments = kept
        try io.syncDirectory(files.directory)
        // What was appended after staging still counts towards the next snapshot.
        files.batchesSinceSnapshot = max(0, files.batchesSinceSnapshot - stager.batchesBefore)
        files.bytesSinceSnapshot = max(0, files.bytesSinceSnapshot - stager.bytesBefore)
    }

    public func discardCompaction(_ staged: StagedSnapshot) {
        try? io.remove(staged.stager.temporaryPath)
    }
}
