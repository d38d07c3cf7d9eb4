import FlowSyncCore

/// The file store's lists on demand (``OnDemandStore``; docs/STORAGE.md, "Lists on
/// demand"): opened without reading a list, each list recovered by today's rules when it
/// is first loaded, and forgotten again when the server unloads it.
extension FileStore: OnDemandStore {
    /// The on-demand part of the store's state (loop thread).
    struct OnDemandState {
        /// How the previous run stopped: each list's expectation is decided from it.
        var start: StartRecord
        var options: RecoveryOptions
        /// Lists written this run and unloaded, by directory entry: exactly what they
        /// left, for the next clean-stop manifest and for their next load (held to it
        /// exactly). About 150 bytes per list written this run; a list only read keeps
        /// nothing here (the start manifest's record, or none, still describes it).
        var unloaded: [String: CleanStopManifest.List] = [:]
        /// Directory entries whose `OPENED` marker this run wrote.
        var marked: Set<String> = []
    }

    /// Opens without reading any list. `RUNNING` is written — unless a `RUNNING` from a
    /// run with a lossy fsync policy is there: lists that run wrote and this one does not
    /// load stay at its mercy, so its marker stays until a clean stop vouches for every
    /// list. The clean-stop manifest stays too: it binds every list it records until that
    /// list is loaded (``StartRecord``).
    public func openOnDemand(_ options: RecoveryOptions) throws(StoreError) -> RecoveryReport {
        precondition(!recovered, "Internal inconsistency in FileStore: opened twice")
        try takeLock()
        var report = RecoveryReport()
        let start = try readStartRecord(repair: options.repair, indexed: true, report: &report)
        let keepLossyMarker =
            start.runningAtStart
            && !String(decoding: (try? io.readFile(runningMarker)) ?? [], as: UTF8.self).contains("fsync=always")
        if !keepLossyMarker { try writeRunningMarker() }
        onDemand = OnDemandState(start: start, options: options)
        recovered = true
        return report
    }

    public func prepareLoad(of name: String) -> ListLoadJob {
        guard let state = onDemand else {
            preconditionFailure("Internal inconsistency in FileStore: a load before openOnDemand()")
        }
        precondition(lists[name] == nil, "Internal inconsistency in FileStore: list \"\(name)\" loaded twice")
        let entry = StoreFormat.directoryName(for: name)
        let directory = listsDirectory + "/" + entry
        let io = self.io
        let unloadedRecord = state.unloaded[entry]
        // Marked earlier this run and unloaded unchanged: its start record still holds
        // exactly (its marker is this run's, not a crashed run's).
        let unchangedSinceMarked = unloadedRecord == nil && state.marked.contains(entry)
        let start = state.start
        let options = state.options
        let manifest = cleanStopManifest
        return ListLoadJob(name: name) {
            let began = MonotonicClock.nanoseconds()
            let result: Result<LoadedList?, StoreError>
            do throws(StoreError) {
                result = .success(
                    try Self.loadList(
                        name, entry: entry, directory: directory, start: start, unloadedRecord: unloadedRecord,
                        unchangedSinceMarked: unchangedSinceMarked, manifest: manifest, options: options, io: io))
            } catch {
                result = .failure(error)
            }
            return ListLoadOutcome(name: name, result: result, nanoseconds: MonotonicClock.nanoseconds() - began)
        }
    }

    public func finishLoad(_ outcome: ListLoadOutcome) throws(StoreError) -> RecoveredList? {
        guard let loaded = try outcome.result.get() else { return nil }
        precondition(
            lists[loaded.files.name] == nil,
            "Internal inconsistency in FileStore: list \"\(loaded.files.name)\" loaded twice")
        // Its record in `unloaded` (if any) stays: an unload without a write since keeps
        // describing the files exactly.
        adopt(loaded.files)
        if let entry = loaded.markedEntry { onDemand?.marked.insert(entry) }
        return loaded.files.list
    }

    /// Recovers the one list `name` now, on the calling thread, by exactly the rules a
    /// start applies (torn tail, corruption, the clean-stop manifest, `repair` from the
    /// options given to ``openOnDemand(_:)``), and keeps it loaded. For tools that walk
    /// the store (`flowsyncd --check-store`) and tests; the server loads on a worker
    /// through ``prepareLoad(of:)`` instead. Returns `nil` when nothing is stored under
    /// the name.
    /// - Throws: the list's corruption (naming file and offset) or an I/O error.
    public func recoverList(named name: String) throws(StoreError) -> RecoveredList? {
        if lists[name] != nil { try unload(name) }
        return try finishLoad(prepareLoad(of: name).run())
    }

    public func unload(_ name: String) throws(StoreError) {
        guard let files = lists[name] else { return }
        try recordingFailure { () throws(StoreError) in try closeActiveSegment(files) }
        if files.changedSinceLoad, let record = record(of: files) {
            onDemand?.unloaded[Self.lastComponent(files.directory)] = record
        }
        lists[name] = nil
    }

    public func storedListCounter() -> @Sendable () -> Int {
        let directory = listsDirectory
        // Counted as the entries stream by, not listed: at a million lists a list of
        // names was tens of MB, every time the gauge was sampled (issue #33).
        return { StoredListCheck.countEntries(in: directory) }
    }

    /// The lists currently loaded (tests).
    public var loadedListNames: [String] { lists.keys.sorted() }

    /// Worker thread: decides what the list's directory may hold, recovers it, and marks
    /// it `OPENED` when the manifest recorded it — only after it passed, so a list
    /// refused now is refused again at the next start.
    private static func loadList(
        _ name: String, entry: String, directory: String, start: StartRecord, unloadedRecord: CleanStopManifest.List?,
        unchangedSinceMarked: Bool, manifest: String, options: RecoveryOptions, io: FileIO
    ) throws(StoreError) -> LoadedList? {
        let (expectation, newEpoch, mark) = try Self.expectation(
            forEntry: entry, directory: directory, start: start, unloadedRecord: unloadedRecord,
            unchangedSinceMarked: unchangedSinceMarked, manifest: manifest, io: io)
        guard io.exists(directory) else {
            if case .recorded(let list) = expectation, !options.repair {
                throw .corrupt(
                    directory, offset: 0,
                    "missing: the clean stop recorded list \"\(list.name)\" through \(list.position) in it (start with --repair to start without it)"
                )
            }
            return nil
        }
        var report = RecoveryReport()
        guard var files = try readList(at: directory, expecting: expectation, options: options, io: io, report: &report)
        else { return nil }
        guard files.name == name else {
            throw .corrupt(directory, offset: 0, "the directory of list \"\(name)\" holds list \"\(files.name)\"")
        }
        if newEpoch { files.list.needsNewEpoch = true }
        if mark {
            // Durable before anything can be appended: a crash from here on must not
            // find the list held to a record it no longer matches.
            let marker = directory + "/" + openedMarker
            io.close(try io.openForAppend(marker, create: true, truncate: true))
            try io.syncDirectory(directory)
        }
        return LoadedList(files: files, markedEntry: mark ? entry : nil, notes: report.notes)
    }

    /// What a list directory not loaded now may hold (worker-safe: reads at most the
    /// `OPENED` marker), and whether a load must mark it: shared by a load and a
    /// backup's read, so both hold a list to the same record.
    static func expectation(
        forEntry entry: String, directory: String, start: StartRecord, unloadedRecord: CleanStopManifest.List?,
        unchangedSinceMarked: Bool, manifest: String, io: FileIO
    ) throws(StoreError)
        -> (ListExpectation, newEpoch: Bool, mark: Bool)
    {
        if let unloadedRecord {
            // Written and unloaded earlier in this run: exactly as it was left.
            return (.recorded(unloadedRecord), false, false)
        }
        if unchangedSinceMarked,
            case .recorded(let record)? = try? manifestExpectation(
                start, forDirectory: entry, marked: false, manifest: manifest
            ).0
        {
            // Loaded, checked and marked earlier in this run, unloaded unwritten.
            return (.recorded(record), false, false)
        }
        let marked = start.marksMatter && io.exists(directory + "/" + openedMarker)
        let (expectation, newEpoch) = try manifestExpectation(
            start, forDirectory: entry, marked: marked, manifest: manifest)
        if case .recorded = expectation { return (expectation, newEpoch, true) }
        return (expectation, newEpoch, false)
    }

    // MARK: At a clean stop

    /// What an on-demand clean stop records beyond the loaded lists: the lists unloaded
    /// this run, then the manifest's records of lists not loaded at all.
    func recordsOfListsNotLoaded(loadedEntries: Set<String>) -> [CleanStopManifest.List] {
        guard let state = onDemand else { return [] }
        var records = Array(state.unloaded.filter { !loadedEntries.contains($0.key) }.values)
        for list in state.start.allRecords
        where !loadedEntries.contains(list.directory) && state.unloaded[list.directory] == nil {
            records.append(list)
        }
        return records
    }

    /// After the manifest is written: the markers of the lists it recorded afresh go,
    /// and whether it vouches for every list directory (then `RUNNING` may go too).
    /// Markers removed without a directory sync: one that comes back after a power loss
    /// only makes the next start apply the unclean rules to its list.
    func finishOnDemandCleanStop() throws(StoreError) -> Bool {
        guard let state = onDemand else { return true }
        for entry in state.marked { try io.remove(listsDirectory + "/" + entry + "/" + Self.openedMarker) }
        onDemand?.marked = []
        if state.start.isComplete { return true }
        var known = state.unloaded.keys.reduce(into: Set<String>()) { $0.insert($1) }
        for files in lists.values { known.insert(Self.lastComponent(files.directory)) }
        return try io.listDirectory(listsDirectory).allSatisfy { known.contains($0) }
    }
}

extension ListLoadOutcome {
    /// What recovery noted while loading (torn tails, repairs).
    public var notes: [String] { (try? result.get())??.notes ?? [] }
}
