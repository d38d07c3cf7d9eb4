import FlowSyncCore
import FlowSyncProtocol

/// A store whose compaction splits into a cheap loop half and an expensive half that
/// may run on any thread, so a large list's snapshot never stalls the event loop
/// (docs/ARCHITECTURE.md, "Storage", rule 3):
///
/// 1. ``stageCompaction(of:)`` — loop thread, cheap: names the snapshot file to write;
/// 2. ``SnapshotStager/write(_:)`` — any thread: encodes, writes and syncs a temporary
///    file (the state may be computed there too: it is a value);
/// 3. ``installCompaction(_:)`` — loop thread, cheap: renames the file into place and
///    drops what it covers (older snapshots, log segments wholly before it).
///
/// `compact(_:)` is the same three steps in a row. Batches appended between steps 1 and
/// 3 are safe: the log is rolled only at step 3, and only segments whose last version
/// is at or before the snapshot's are deleted. A crash between them leaves a `.tmp`
/// file that recovery removes (docs/STORAGE.md). At most one staged compaction per
/// list may be in flight (the server's rule).
public protocol StagedCompactionStore: DirectorStore {
    /// Step 1: reserves the snapshot file of `list`'s next compaction.
    func stageCompaction(of list: String) throws(StoreError) -> SnapshotStager
    /// Step 3: installs a snapshot written by step 2.
    func installCompaction(_ staged: StagedSnapshot) throws(StoreError)
    /// Drops a written snapshot that will not be installed (the server stopped after a
    /// storage failure). Best effort: recovery removes `.tmp` files anyway.
    func discardCompaction(_ staged: StagedSnapshot)
}

/// Step 2 of a staged compaction: everything it needs, and nothing loop-confined, so it
/// may run on a worker thread.
public struct SnapshotStager: Sendable {
    public let listName: String
    let generation: UInt64
    let temporaryPath: String
    let path: String
    let io: FileIO
    /// The list's log counters when the compaction was staged (what it covers).
    let batchesBefore: Int
    let bytesBefore: Int

    /// Encodes `snapshot` (with an encoder of its own: a `FrameEncoder` is not
    /// `Sendable`), writes it to the temporary file and syncs it. Any thread; touches
    /// only that file, which nothing else uses.
    public func write(_ snapshot: StoredSnapshot) throws(StoreError) -> StagedSnapshot {
        precondition(
            snapshot.listName == listName,
            "Internal inconsistency in SnapshotStager: list \(snapshot.listName), staged for \(listName)")
        let bytes = StoreFormat.encode(snapshot, encoder: FrameEncoder(configuration: StoreFormat.compression))
        let fd = try io.openForAppend(temporaryPath, create: true, truncate: true)
        do throws(StoreError) {
            try io.write(fd, bytes, path: temporaryPath)
            try io.sync(fd, path: temporaryPath)
        } catch {
            io.close(fd)
            try? io.remove(temporaryPath)
            throw error
        }
        io.close(fd)
        return StagedSnapshot(stager: self, position: snapshot.position, bytes: bytes.count)
    }
}

/// A snapshot written by ``SnapshotStager/write(_:)``, waiting to be installed.
public struct StagedSnapshot: Sendable {
    let stager: SnapshotStager
    /// The version the snapshot holds.
    public let position: ListVersion
    /// The file's size.
    public let bytes: Int
    public var listName: String { stager.listName }
}
