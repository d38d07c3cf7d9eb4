/// The keys a reload cannot change, as one group: where the server listens and how it
/// stores. A reload replaces the configuration and puts this group back whole, so a
/// key added to the group is kept by construction (before, each was restored by hand).
extension ServerConfiguration {
    /// The restart-only keys (`server.host`, `server.port`, `server.data_dir`,
    /// `[storage]`, `lists.on_demand`). The Unix socket stays as it was bound too (its listener is not
    /// re-created), but its keys are not reported: they never were.
    struct RestartOnly: Equatable {
        var host: String
        var port: Int
        var dataDirectory: String
        var storageEngine: StorageEngine
        var fsyncPolicy: FsyncPolicy
        var fsyncIntervalMilliseconds: Int
        var snapshotEveryBatches: Int
        var snapshotEveryBytes: Int
        var parallelSync: Bool
        var maxOpenLogs: Int
        var listsOnDemand: Bool

        /// The config names of the groups that differ in `new` (for the reload's warning).
        func differences(from new: RestartOnly) -> [String] {
            var changed: [String] = []
            if new.host != host || new.port != port { changed.append("server.host/port") }
            if new.dataDirectory != dataDirectory { changed.append("server.data_dir") }
            if new.storageEngine != storageEngine || new.fsyncPolicy != fsyncPolicy || new.fsyncIntervalMilliseconds != fsyncIntervalMilliseconds
                || new.snapshotEveryBatches != snapshotEveryBatches || new.snapshotEveryBytes != snapshotEveryBytes
                || new.parallelSync != parallelSync || new.maxOpenLogs != maxOpenLogs {
                changed.append("storage")
            }
            if new.listsOnDemand != listsOnDemand { changed.append("lists.on_demand") }
            return changed
        }
    }

    /// The restart-only group, read or put back whole.
    var restartOnly: RestartOnly {
        get {
            RestartOnly(host: host, port: port, dataDirectory: dataDirectory, storageEngine: storageEngine, fsyncPolicy: fsyncPolicy,
                        fsyncIntervalMilliseconds: fsyncIntervalMilliseconds, snapshotEveryBatches: snapshotEveryBatches,
                        snapshotEveryBytes: snapshotEveryBytes, parallelSync: parallelSync, maxOpenLogs: maxOpenLogs,
                        listsOnDemand: listsOnDemand)
        }
        set {
            (host, port, dataDirectory, storageEngine, fsyncPolicy) = (newValue.host, newValue.port, newValue.dataDirectory, newValue.storageEngine, newValue.fsyncPolicy)
            (fsyncIntervalMilliseconds, snapshotEveryBatches, snapshotEveryBytes) = (newValue.fsyncIntervalMilliseconds, newValue.snapshotEveryBatches, newValue.snapshotEveryBytes)
            (parallelSync, maxOpenLogs, listsOnDemand) = (newValue.parallelSync, newValue.maxOpenLogs, newValue.listsOnDemand)
        }
    }
}
