import FlowSyncCore

/// What `flowsyncd --check-store` found: per list directory, whether the daemon would
/// start on it as it is, would first repair a torn tail, or would refuse it
/// (docs/STORAGE.md, "Checking a store").
public struct StoreCheckReport: Sendable {
    /// How one list (or the store as a whole) fares, worst last.
    public enum Verdict: Int, Comparable, Sendable {
        /// Recovery accepts it as it is.
        case ok = 0
        /// Recovery accepts it after cutting a torn tail (an unclean stop's unfinished
        /// write, never acknowledged under `fsync = "always"`); the next start does it.
        case repairable = 1
        /// Recovery refuses it: the daemon would exit 65 (74 for a file it cannot read)
        /// until `--repair` keeps its valid prefix.
        case damaged = 2

        public static func < (a: Verdict, b: Verdict) -> Bool { a.rawValue < b.rawValue }
    }

    /// One directory under `lists/`.
    public struct ListResult: Sendable {
        /// The entry under `lists/` (the list name, escaped where needed).
        public var directory: String
        /// The list's name as its files record it (`nil` when it could not be read).
        public var listName: String?
        /// Where the list recovers to (`nil` when damaged or empty).
        public var position: ListVersion?
        public var verdict: Verdict
        /// Why it is not `ok`, or what recovery would also tidy (a leftover `.tmp`).
        public var details: [String]
        /// For a damaged list: the exit code the daemon would give at start (65 damaged
        /// data, 74 a file it cannot read).
        public var exitCode: Int32?
    }

    /// How the previous run ended, in words (from `STOPPED` and `RUNNING`).
    public var previousStop = ""
    /// About the store as a whole (a damaged manifest, a lossy unclean stop).
    public var storeDetails: [String] = []
    /// Damage outside any list: a damaged clean-stop manifest.
    public var storeVerdict = Verdict.ok
    /// Ordered by directory.
    public var lists: [ListResult] = []

    /// The worst verdict of the store and its lists.
    public var verdict: Verdict { lists.map(\.verdict).reduce(storeVerdict, max) }

    public init() {}
}

extension FileStore {
    /// Checks every list of the store in `directory` with exactly recovery's rules
    /// (the same code, over a ``ReadOnlyFileIO``), one list at a time, and changes
    /// nothing. Takes the store's lock for the duration, so it refuses a store a
    /// running daemon holds.
    ///
    /// Unlike a start, which stops at the first damaged list, it goes on: every list
    /// gets its own verdict. Memory is that of the largest list, not of the store.
    /// - Throws: ``StoreError`` when the directory is missing, locked or unreadable;
    ///   damage is reported, not thrown.
    public static func check(
        directory: String, options: RecoveryOptions = RecoveryOptions()
    ) throws(StoreError) -> StoreCheckReport {
        var options = options
        options.repair = false
        let io = ReadOnlyFileIO(over: PosixFileIO())
        guard io.exists(directory) else { throw .unusable("no data directory at \(directory)") }
        let store = FileStore(directory: directory, io: io)
        try store.takeLock()
        // Releases the lock; nothing was opened for writing.
        defer { store.abandon() }
        var result = StoreCheckReport()
        let start = try store.readCheckStart()
        result.previousStop = start.previousStop
        if let damage = start.manifestDamage {
            result.storeVerdict = .damaged
            result.storeDetails.append(damage)
        }
        result.storeDetails += start.notes
        // (`mkdir lists/` of a directory no daemon has used yet is not worth a line.)
        for change in io.takeSkippedChanges() where change.operation != "mkdir" {
            result.storeDetails.append("would \(change.operation) \(change.path)")
        }

        let entries = io.exists(store.listsDirectory) ? try io.listDirectory(store.listsDirectory).sorted() : []
        let present = Set(entries)
        for list in start.recorded.values where !present.contains(list.directory) {
            result.lists.append(
                .init(
                    directory: list.directory, listName: list.name, position: nil, verdict: .damaged,
                    details: [
                        "missing: the clean stop recorded list \"\(list.name)\" through \(list.position) in lists/\(list.directory)"
                    ],
                    exitCode: 65))
        }
        for entry in entries {
            result.lists.append(
                store.checkList(entry, expecting: start.expectation(forDirectory: entry), options: options, io: io))
            // Keep memory flat: nothing of a checked list is needed any more.
            store.lists = [:]
        }
        result.lists.sort { $0.directory < $1.directory }
        return result
    }

    /// One list directory through recovery (read-only), turned into a verdict.
    private func checkList(
        _ entry: String, expecting expectation: ListExpectation, options: RecoveryOptions, io: ReadOnlyFileIO
    ) -> StoreCheckReport.ListResult {
        let path = listsDirectory + "/" + entry
        var notes = RecoveryReport()
        var result = StoreCheckReport.ListResult(
            directory: entry, listName: nil, position: nil, verdict: .ok, details: [], exitCode: nil)
        do throws(StoreError) {
            if let list = try checkReadList(at: path, expecting: expectation, options: options, report: &notes) {
                result.listName = list.name
                result.position = list.sequencer.position
            } else {
                result.details.append("no list files (an empty directory): nothing to recover")
            }
        } catch {
            _ = io.takeSkippedChanges()
            result.verdict = .damaged
            result.exitCode = error.isCorruption ? 65 : 74
            result.details.append("\(error)")
            return result
        }
        // Recovery's notes say what it did; here it did not.
        for note in notes.notes {
            if note.hasPrefix("torn tail: ") { result.verdict = .repairable }
            result.details.append(
                note.replacing("torn tail: truncated", with: "torn tail: would truncate")
                    .replacing("torn tail: removed", with: "torn tail: would remove"))
        }
        for change in io.takeSkippedChanges()
        where change.operation == "remove" && !notes.notes.contains(where: { $0.contains(change.path) }) {
            // Housekeeping recovery does silently: a leftover `.tmp`, an older snapshot,
            // a segment from before a new epoch. Not damage.
            result.details.append("would remove \(change.path) (left over, never read)")
        }
        return result
    }

    /// `flowsyncd --check-store --repair`: recovers the store with `repair` (exactly what
    /// `flowsyncd --repair` does at start: the valid prefix kept, damaged files set
    /// aside as `*.damaged`), starts a new epoch for every list that needs one — as
    /// `Server.recover` does, so clients resync instead of trusting a gap — and stops
    /// cleanly (a clean-stop manifest), without serving.
    /// - Returns: recovery's report (its notes say what was dropped).
    public static func repairOffline(
        directory: String, options: Options, recovery: RecoveryOptions
    ) throws(StoreError) -> RecoveryReport {
        var recovery = recovery
        recovery.repair = true
        let store = FileStore(directory: directory, options: options)
        let report: RecoveryReport
        do throws(StoreError) {
            report = try store.recover(recovery)
            for var list in report.lists where list.needsNewEpoch {
                list.sequencer.startEpoch(UInt64.random(in: 1...UInt64.max))
                let sequencer = list.sequencer
                try store.startEpoch(
                    StoredSnapshot(
                        listName: list.name, position: sequencer.position, digest: sequencer.director.digest,
                        sections: sequencer.director.sections, dedupe: sequencer.dedupeRecords()))
            }
        } catch {
            store.abandon()
            throw error
        }
        try store.close()
        return report
    }
}

extension ServerConfiguration {
    /// The options recovery runs with under this configuration (what a check and an
    /// offline repair use, so they rebuild lists as the daemon would).
    public var recoveryOptions: RecoveryOptions {
        RecoveryOptions(directorLimits: director, historyLimits: historyLimits, dedupeLimits: dedupeLimits)
    }
}
