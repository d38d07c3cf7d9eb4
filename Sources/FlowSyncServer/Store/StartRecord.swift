import FlowSyncCore

/// What the files at start say about every list directory: the clean-stop manifest
/// (`STOPPED`), whether `RUNNING` was there too, and whether acknowledged batches may be
/// missing from lists the manifest does not cover. Both recovery modes decide each
/// list's ``FileStore/ListExpectation`` from it — the eager ``FileStore/recover(_:)`` for
/// every directory at once, the on-demand store one list at a time when it is loaded.
///
/// The rules (docs/STORAGE.md, "Clean stop" and "Lists on demand"):
/// - **`STOPPED` alone** (a complete clean stop): a recorded list must be exactly as
///   recorded; a directory the manifest does not record is corruption.
/// - **`STOPPED` and `RUNNING`**: the manifest binds only the lists it records whose
///   directory holds no `OPENED` marker. A marked list was loaded (and maybe written)
///   since; an unrecorded one was created since, or never checked since an unclean stop.
///   Both are recovered under the unclean-stop rules. (An eager run leaves this pair only
///   in the crash windows of a stop or a start, when nothing was written and no marker
///   exists; an on-demand run leaves it all the time it runs, and after a clean stop that
///   could not vouch for every list.)
/// - **`RUNNING` alone**: a crash; every list under the unclean-stop rules.
/// - **neither**: a new directory, or one from a flowsyncd that wrote no manifest.
struct StartRecord: Sendable {
    /// The manifest's lists by directory entry (an eager start decodes them all) …
    var recorded: [String: CleanStopManifest.List] = [:]
    /// … or the manifest indexed, each list decoded at its load (on demand).
    var index: CleanStopManifestIndex?
    var hasManifest = false
    var runningAtStart = false
    /// Lists under the unclean-stop rules start a new epoch: the previous run's policy
    /// was not `always` (`RUNNING` says so), or a damaged manifest was set aside.
    var lossy = false

    /// `OPENED` markers only mean something next to a manifest and `RUNNING`.
    var marksMatter: Bool { hasManifest && runningAtStart }

    /// Whether the manifest vouches for every list directory (so a clean stop of this
    /// run may too, for the lists it did not load).
    var isComplete: Bool { hasManifest && !runningAtStart }

    /// What recovery may accept of the directory `entry`, and whether the list starts a
    /// new epoch.
    /// - Throws: the manifest's entry for `entry` does not decode (on demand, where
    ///   entries are decoded only when their list loads).
    func expectation(
        forDirectory entry: String, marked: Bool
    ) throws(StoreFormat.HeaderProblem) -> (FileStore.ListExpectation, newEpoch: Bool) {
        let record = hasManifest ? try self.record(forDirectory: entry) : nil
        if !marked, let record { return (.recorded(record), false) }
        if isComplete && record == nil { return (.notRecorded, false) }
        return (.afterUncleanStop, lossy)
    }

    /// The manifest's record of the list in directory `entry`.
    func record(forDirectory entry: String) throws(StoreFormat.HeaderProblem) -> CleanStopManifest.List? {
        if let index { return try index.list(inDirectory: entry) }
        return recorded[entry]
    }

    /// Every record of the manifest.
    var allRecords: [CleanStopManifest.List] { index?.allLists() ?? Array(recorded.values) }
}

extension FileStore {
    /// The marker an on-demand store writes in a list's directory when it loads a list
    /// the manifest records: from then on the record no longer binds it.
    static let openedMarker = "OPENED"

    /// Reads `STOPPED` and `RUNNING` (see ``StartRecord``); a damaged manifest is refused
    /// (or set aside under `repair`) as by ``previousStop(repair:report:)``.
    /// `indexed`: keep the manifest as a ``CleanStopManifestIndex`` (on demand) instead
    /// of decoding every record.
    func readStartRecord(
        repair: Bool, indexed: Bool = false, report: inout RecoveryReport
    ) throws(StoreError) -> StartRecord {
        var start = StartRecord()
        start.runningAtStart = io.exists(runningMarker)
        switch try previousStop(repair: repair, indexed: indexed, report: &report) {
        case .clean(let manifest):
            start.hasManifest = true
            // One lookup per directory; directories are unique in a manifest that decoded.
            for list in manifest.lists { start.recorded[list.directory] = list }
        case .cleanIndexed(let index):
            start.hasManifest = true
            start.index = index
        case .unclean(let all):
            start.lossy = all
        case .unrecorded:
            break
        }
        if start.hasManifest && start.runningAtStart {
            let text = String(decoding: try io.readFile(runningMarker), as: UTF8.self)
            start.lossy = !text.contains("fsync=always")
        }
        return start
    }
}
