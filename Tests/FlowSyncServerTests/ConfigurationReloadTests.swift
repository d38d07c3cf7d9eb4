import Testing

@testable import FlowSyncServer

/// A reload keeps the groups bound at start — listen, storage, metrics — whole, and
/// takes everything else from the new file; it names what it could not change.
@Suite(.timeLimit(.minutes(2))) struct ConfigurationReloadTests {
    static func running() -> ServerConfiguration {
        var c = ServerConfiguration()
        c.listen.host = "10.0.0.1"
        c.listen.port = 7400
        c.listen.unixSocketPath = "/run/flowsyncd.sock"
        c.storage.dataDirectory = "/var/lib/a"
        c.storage.fsyncPolicy = .always
        c.storage.listLoading = .atStart
        c.metrics.port = 7401
        c.limits.maxConnections = 100
        c.historyMaxBatches = 10
        return c
    }

    @Test func restartOnlyGroupsAreKeptWholeAndTheRestApplies() {
        let current = Self.running()
        var new = current
        new.listen.port = 9000
        new.listen.unixSocketPath = nil
        new.storage.dataDirectory = "/var/lib/b"
        new.storage.fsyncPolicy = .never
        new.storage.listLoading = .onDemand
        new.metrics.port = 9001
        new.limits.maxConnections = 200
        new.historyMaxBatches = 20
        let (applied, ignored) = current.reloaded(to: new)
        #expect(
            applied.listen == current.listen && applied.storage == current.storage && applied.metrics == current.metrics
        )
        #expect(applied.limits.maxConnections == 200 && applied.historyMaxBatches == 20, "reloadable keys apply")
        #expect(
            ignored == ["server.host/port", "server.data_dir", "storage", "lists.on_demand", "metrics"], "\(ignored)")
    }

    @Test func aReloadThatChangesNothingRestartOnlyIgnoresNothing() {
        let current = Self.running()
        var new = current
        new.limits.director.maxRows = 5
        let (applied, ignored) = current.reloaded(to: new)
        #expect(ignored.isEmpty && applied == new)
    }

    /// The flat names are paths into the groups, both ways.
    @Test func flatNamesAreThePathsIntoTheGroups() {
        var c = ServerConfiguration()
        c.port = 1234
        c.storageEngine = .memory
        c.metricsPort = 4321
        c.maxFrameBytes = 2_048
        #expect(
            c.listen.port == 1234 && c.storage.engine == .memory && c.metrics.port == 4321
                && c.limits.maxFrameBytes == 2_048)
        c.listen.host = "::1"
        #expect(c.host == "::1")
    }
}
