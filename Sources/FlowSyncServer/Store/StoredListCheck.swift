import FlowSyncCore

#if canImport(Glibc)
import Glibc
#endif

/// The background check of every stored list while lists load on demand (issue #33,
/// item 9; docs/STORAGE.md, "The background check").
///
/// With lists on demand a start reads no list, so damage in a list nobody uses would
/// stay unknown until its first subscriber. This walks every list directory after the
/// start, in chunks on a worker, through exactly the per-list procedure a load runs
/// (``FileStore/expectation(forEntry:directory:start:unloadedRecord:unchangedSinceMarked:manifest:io:)``
/// then ``FileStore/readList(at:expecting:options:io:report:)``) over a
/// ``ReadOnlyFileIO``, so it changes nothing: no torn tail is cut, no marker written.
///
/// Promises:
/// 1. It never blocks the loop or a load: the directory is read with `readdir` a chunk
///    at a time (memory: one chunk of names and one list, not the store), on a queue of
///    its own (utility class).
/// 2. It reports only lists this run has not touched. A list loaded, loading, or
///    loaded earlier in this run was checked by its own load, and its files may have
///    grown since this read: the server drops such a verdict (``Server``'s side).
/// 3. Damage is what a load would refuse (``StoreError/isCorruption``). A torn tail
///    is not damage (a load repairs it); an I/O error is reported as such and the list
///    is not refused (its load retries).
///
/// Not guaranteed: a list created after the walk passed its place in the directory is
/// not checked (its load is); a list damaged after it was checked is found at its load.
public final class StoredListCheck: @unchecked Sendable {
    /// One damaged (or unreadable) list directory.
    public struct Finding: Sendable {
        /// The entry under `lists/`.
        public var directory: String
        /// The list's name: from the manifest's record, else the directory entry
        /// unescaped (`nil` for a hashed entry whose files cannot be read).
        public var listName: String?
        public var error: StoreError
    }

    /// What one chunk found.
    public struct Progress: Sendable {
        public var checked = 0
        public var findings: [Finding] = []
        /// The walk reached the end of the directory.
        public var finished = false
    }

    private let listsDirectory: String
    private let start: StartRecord
    private let options: RecoveryOptions
    private let io: FileIO
    private let manifest: String
    /// The open directory stream; only one chunk runs at a time (the server chains them).
    private var stream: OpaquePointer?
    private var opened = false

    init(listsDirectory: String, start: StartRecord, options: RecoveryOptions, io: FileIO, manifest: String) {
        self.listsDirectory = listsDirectory
        self.start = start
        var options = options
        options.repair = false
        self.options = options
        self.io = io
        self.manifest = manifest
    }

    deinit {
        if let stream { closedir(stream) }
    }

    /// Checks up to `count` more list directories (blocking file I/O: a worker only).
    public func checkNext(_ count: Int) -> Progress {
        var progress = Progress()
        if !opened {
            opened = true
            stream = opendir(listsDirectory)
        }
        guard let stream else {
            progress.finished = true
            return progress
        }
        let readOnly = ReadOnlyFileIO(over: io)
        while progress.checked < count {
            guard let entry = readdir(stream) else {
                closedir(stream)
                self.stream = nil
                progress.finished = true
                break
            }
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard name != ".", name != "..", !name.hasSuffix(".tmp") else { continue }
            progress.checked += 1
            if let finding = check(entry: name, io: readOnly) { progress.findings.append(finding) }
            _ = readOnly.takeSkippedChanges()
        }
        return progress
    }

    private func check(entry: String, io readOnly: ReadOnlyFileIO) -> Finding? {
        let directory = listsDirectory + "/" + entry
        let recordedName = (try? start.record(forDirectory: entry))??.name
        do throws(StoreError) {
            let (expectation, _, _) = try FileStore.expectation(
                forEntry: entry, directory: directory, start: start, unloadedRecord: nil, unchangedSinceMarked: false,
                manifest: manifest, io: readOnly)
            var report = RecoveryReport()
            let files = try FileStore.readList(
                at: directory, expecting: expectation, options: options, io: readOnly, report: &report)
            if let files, files.name != recordedName ?? files.name {
                throw StoreError.corrupt(
                    directory, offset: 0, "the directory of list \"\(recordedName!)\" holds list \"\(files.name)\"")
            }
            return nil
        } catch {
            return Finding(directory: entry, listName: recordedName ?? Self.listName(forDirectory: entry), error: error)
        }
    }

    /// The entries of `directory` other than `.` and `..`, counted with `readdir` (no list
    /// of names is built); 0 when it cannot be read.
    static func countEntries(in directory: String, upTo limit: Int = .max) -> Int {
        guard let stream = opendir(directory) else { return 0 }
        defer { closedir(stream) }
        var seen = 0
        while seen < limit, let entry = readdir(stream) {
            let dot = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                raw[0] == UInt8(ascii: ".") && (raw[1] == 0 || (raw[1] == UInt8(ascii: ".") && raw[2] == 0))
            }
            if !dot { seen += 1 }
        }
        return seen
    }

    /// The list name a directory entry stands for (``StoreFormat/directoryName(for:)``
    /// reversed), or `nil` for a hashed entry.
    static func listName(forDirectory entry: String) -> String? {
        guard !entry.hasPrefix("~") else { return nil }
        var bytes: [UInt8] = []
        var utf8 = Array(entry.utf8)[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "%"), utf8.count >= 2,
                let value = UInt8(String(decoding: utf8.prefix(2), as: UTF8.self), radix: 16)
            {
                bytes.append(value)
                utf8 = utf8.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension FileStore {
    /// The background check of every stored list (``StoredListCheck``), for a store
    /// opened on demand; `nil` otherwise.
    public func makeStoredListCheck() -> StoredListCheck? {
        guard let state = onDemand else { return nil }
        return StoredListCheck(
            listsDirectory: listsDirectory, start: state.start, options: state.options, io: io,
            manifest: cleanStopManifest)
    }

    public func holdsMoreLists(than count: Int) -> Bool {
        StoredListCheck.countEntries(in: listsDirectory, upTo: count + 1) > count
    }

    public func wasTouchedThisRun(key: String) -> Bool {
        guard let state = onDemand else { return false }
        if state.unloaded[key] != nil || state.marked.contains(key) { return true }
        return lists.values.contains { Self.lastComponent($0.directory) == key }
    }
}
