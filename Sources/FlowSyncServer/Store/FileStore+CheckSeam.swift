import FlowSyncCore

/// The two places where `flowsyncd --check-store` (StoreCheck.swift) enters recovery,
/// kept in one file so a change to recovery's internals changes only this file:
/// 1. ``readCheckStart()`` — how the previous run stopped, and what recovery accepts of
///    each list directory (the same decision `recover(_:)` makes);
/// 2. ``checkReadList(at:expecting:options:report:)`` — one list directory through
///    recovery's own per-list code (read-only when the store's `io` is a
///    ``ReadOnlyFileIO``).
extension FileStore {
    /// What the files at start say, for a check.
    struct CheckStart {
        /// In words, for the report.
        var previousStop: String
        /// The clean-stop manifest is damaged (reported; the lists are then read under the
        /// unclean-stop rules, as `--repair` would read them).
        var manifestDamage: String?
        /// The lists a clean stop recorded, by directory (empty without a manifest).
        var recorded: [String: CleanStopManifest.List] = [:]
        var hasManifest: Bool
        /// Notes recovery made while reading them (a lossy unclean stop).
        var notes: [String]
        /// `RUNNING` was there beside `STOPPED` (a crash window, or lists on demand): the
        /// manifest binds only the lists it records whose directory has no `OPENED`
        /// marker (StartRecord.swift).
        var runningAtStart = false
        /// Directories holding an `OPENED` marker (only looked for when it matters).
        var marked: Set<String> = []

        /// The same decision as ``StartRecord/expectation(forDirectory:marked:)``.
        func expectation(forDirectory entry: String) -> ListExpectation {
            guard hasManifest else { return .afterUncleanStop }
            if !marked.contains(entry), let list = recorded[entry] { return .recorded(list) }
            if !runningAtStart && recorded[entry] == nil { return .notRecorded }
            return .afterUncleanStop
        }
    }

    func readCheckStart() throws(StoreError) -> CheckStart {
        var report = RecoveryReport()
        let stop: PreviousStop
        var damage: String?
        do throws(StoreError) {
            stop = try previousStop(repair: false, report: &report)
        } catch {
            guard error.isCorruption else { throw error }
            damage = "\(error)"
            stop = .unclean(newEpochForAll: true)
        }
        switch stop {
        case .cleanIndexed:
            preconditionFailure("Internal inconsistency in FileStore: a check reads the manifest decoded")
        case .clean(let manifest):
            var start = CheckStart(
                previousStop: "clean (STOPPED records \(manifest.lists.count) lists)", manifestDamage: nil,
                hasManifest: true, notes: report.notes)
            for list in manifest.lists { start.recorded[list.directory] = list }
            start.runningAtStart = io.exists(runningMarker)
            if start.runningAtStart {
                start.previousStop +=
                    "; RUNNING too: lists marked OPENED or not recorded are read under the unclean-stop rules"
                for entry in (try? io.listDirectory(listsDirectory)) ?? []
                where io.exists(listsDirectory + "/" + entry + "/" + Self.openedMarker) {
                    start.marked.insert(entry)
                }
            }
            return start
        case .unclean:
            return CheckStart(
                previousStop: damage == nil
                    ? "unclean (RUNNING without STOPPED): torn tails are possible" : "unknown (STOPPED is damaged)",
                manifestDamage: damage, hasManifest: false, notes: report.notes)
        case .unrecorded:
            return CheckStart(
                previousStop: "not recorded (neither STOPPED nor RUNNING): read as an unclean stop",
                manifestDamage: nil, hasManifest: false,
                notes: report.notes)
        }
    }

    func checkReadList(
        at path: String, expecting expectation: ListExpectation, options: RecoveryOptions,
        report: inout RecoveryReport
    ) throws(StoreError) -> RecoveredList? {
        // Recovery's per-list procedure (FileStore+ListRecovery.swift), through the
        // store's io (read-only for a check); the files are adopted as a load would.
        guard let files = try Self.readList(at: path, expecting: expectation, options: options, io: io, report: &report)
        else { return nil }
        adopt(files)
        return files.list
    }
}
