import FlowSyncPostgres
import FlowSyncTestSupport
import Testing

/// The fixture the failover, fenced-list, outage and write-ceiling tests share: a
/// primary with a synchronous standby (`synchronous_commit = on`,
/// `synchronous_standby_names = 'FIRST 1 (standby1)'`), stopped whatever the body does.
extension ClusterLogTests {
    /// Starts the pair, runs `body`, stops both; an error of `body` is recorded, not
    /// thrown, so the servers always stop.
    static func withSynchronousStandby(
        extraSettings: [String] = ["-c", "full_page_writes=on"],
        _ body: (_ primary: PostgresServer, _ standby: PostgresServer) async throws -> Void
    ) async throws {
        let primary = try await PostgresServer.start(
            settings: ["-c", "synchronous_commit=on", "-c", "synchronous_standby_names=FIRST 1 (standby1)"]
                + extraSettings)
        var standby: PostgresServer?
        do {
            standby = try await PostgresServer.start(standbyOf: primary)
            try await body(primary, standby!)
        } catch {
            Issue.record("\(error)")
        }
        await standby?.stop()
        await primary.stop()
    }

    /// Expects the standby to report itself synchronous on `session` (the primary).
    static func expectSynchronousStandby(_ session: SQLSession) async throws {
        #expect(
            try await Self.poll(
                session,
                "SELECT count(*) FROM pg_stat_replication WHERE application_name = 'standby1' AND sync_state = 'sync'"
            ) { $0.int(0, 0) == 1 },
            "the standby is synchronous")
    }
}
