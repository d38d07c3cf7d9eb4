/// What a reload (SIGHUP) may change. The groups bound at start — ``Listen`` (the
/// listeners), ``Storage`` (the open store), ``Metrics`` (the admin listener) and
/// ``Cluster`` (the cluster store) — are
/// kept whole from the running configuration, so a key added to one of them is kept by
/// construction, and so is `server.write_path` (the ring is created at start);
/// everything else comes from the new file.
extension ServerConfiguration {
    /// `new` with this configuration's restart-only groups, and the config names of the
    /// groups that differ in `new` (for the reload's warning).
    func reloaded(to new: ServerConfiguration) -> (applied: ServerConfiguration, ignored: [String]) {
        var ignored: [String] = []
        // The Unix socket stays as it was bound too, but its keys are not reported:
        // they never were.
        if new.listen.host != listen.host || new.listen.port != listen.port { ignored.append("server.host/port") }
        if new.storage.dataDirectory != storage.dataDirectory { ignored.append("server.data_dir") }
        var otherStorage = new.storage
        otherStorage.dataDirectory = storage.dataDirectory
        otherStorage.listsOnDemand = storage.listsOnDemand
        if otherStorage != storage { ignored.append("storage") }
        if new.storage.listsOnDemand != storage.listsOnDemand { ignored.append("lists.on_demand") }
        if new.metrics != metrics { ignored.append("metrics") }
        // The ring is created at start; switching paths under live sockets is not done.
        if new.writePath != writePath { ignored.append("server.write_path") }
        if new.cluster != cluster { ignored.append("cluster") }
        var applied = new
        applied.listen = listen
        applied.storage = storage
        applied.metrics = metrics
        applied.writePath = writePath
        applied.cluster = cluster
        return (applied, ignored)
    }
}
