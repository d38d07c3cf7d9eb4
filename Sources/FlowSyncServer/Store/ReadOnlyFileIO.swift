import Synchronization

/// A ``FileIO`` that reads and locks through another one but changes nothing: every
/// call that would create, write, truncate, rename or remove a file is recorded and
/// skipped. `flowsyncd --check-store` runs recovery over it, so the check applies
/// exactly recovery's rules (the same code) and reports what recovery *would* do.
///
/// Recovery never reads back what it changed in the same pass (it truncates a torn
/// tail after parsing the bytes it already holds), so skipping the change does not
/// alter what it finds. The lock is real: a check refuses a store a daemon holds.
final class ReadOnlyFileIO: FileIO {
    /// One change recovery asked for and did not get.
    struct SkippedChange: Hashable, Sendable {
        var operation: String
        var path: String
        /// For a truncation, the length asked for.
        var length: Int?
    }

    private let base: FileIO
    private let skipped = Mutex<[SkippedChange]>([])

    init(over base: FileIO) {
        self.base = base
    }

    /// The changes skipped so far, and forgets them.
    func takeSkippedChanges() -> [SkippedChange] {
        skipped.withLock { changes in
            defer { changes = [] }
            return changes
        }
    }

    private func skip(_ operation: String, _ path: String, length: Int? = nil) {
        skipped.withLock { $0.append(SkippedChange(operation: operation, path: path, length: length)) }
    }

    func makeDirectory(_ path: String) throws(StoreError) {
        if !base.exists(path) { skip("mkdir", path) }
    }

    func listDirectory(_ path: String) throws(StoreError) -> [String] { try base.listDirectory(path) }

    func exists(_ path: String) -> Bool { base.exists(path) }

    func readFile(_ path: String) throws(StoreError) -> [UInt8] { try base.readFile(path) }

    func openForAppend(_ path: String, create: Bool, truncate: Bool) throws(StoreError) -> Int32 {
        // Only writing paths open for appending (segments, snapshots, set-aside copies):
        // none is reached by a check without repair. Refused rather than faked, so a
        // future caller cannot write through a "read-only" store by accident.
        throw .unusable("read-only check: \(path) would be opened for writing")
    }

    func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String) throws(StoreError) {
        throw .unusable("read-only check: \(path) would be written")
    }

    func sync(_ fd: Int32, path: String) throws(StoreError) {}

    func close(_ fd: Int32) {
        base.close(fd)
    }

    func truncate(_ path: String, to length: Int) throws(StoreError) {
        skip("truncate", path, length: length)
    }

    func rename(_ from: String, to: String) throws(StoreError) {
        skip("rename", "\(from) → \(to)")
    }

    func remove(_ path: String) throws(StoreError) {
        // Recovery removes a leftover it may not have (`STOPPED.tmp`): only a file
        // that is there would have been removed.
        if base.exists(path) { skip("remove", path) }
    }

    func syncDirectory(_ path: String) throws(StoreError) {}

    func syncFileSystem(_ path: String) throws(StoreError) {}

    func lock(_ path: String) throws(StoreError) -> Int32 {
        // The lock file exists in every data directory a daemon has used; creating it
        // in one that has none is the only change a check makes.
        try base.lock(path)
    }
}
