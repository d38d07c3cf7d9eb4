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

        func expectation(forDirectory entry: String) -> ListExpectation {
            guard hasManifest else { return .afterUncleanStop }
            return recorded[entry].map { .recorded($0) } ?? .notRecorded
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
        case .clean(let manifest):
            var start = CheckStart(previousStop: "clean (STOPPED records \(manifest.lists.count) lists)", manifestDamage: nil, hasManifest: true, notes: report.notes)
            for list in manifest.lists { start.recorded[list.directory] = list }
            return start
        case .unclean:
            return CheckStart(previousStop: damage == nil ? "unclean (RUNNING without STOPPED): torn tails are possible" : "unknown (STOPPED is damaged)",
                              manifestDamage: damage, hasManifest: false, notes: report.notes)
        case .unrecorded:
            return CheckStart(previousStop: "not recorded (neither STOPPED nor RUNNING): read as an unclean stop", manifestDamage: nil, hasManifest: false,
                              notes: report.notes)
        }
    }

    func checkReadList(at path: String, expecting expectation: ListExpectation, options: RecoveryOptions,
                       report: inout RecoveryReport) throws(StoreError) -> RecoveredList? {
        try recoverList(at: path, expecting: expectation, options: options, report: &report)
    }
}
