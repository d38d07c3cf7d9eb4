import Testing

@testable import FlowSyncServer

/// The reload's report names every key a reload applies (issue #30: it had missed
/// five), and nothing else.
@Suite(.timeLimit(.minutes(2))) struct ConfigurationReloadReportTests {
    /// Every reloadable key set away from its default.
    static let changed = """
        [server]
        auto_create_lists = false
        shutdown_grace_ms = 1234
        name = "other"
        flush_slice_us = 77
        seal_wait_us = 88
        [limits]
        max_frame_bytes = 2000000
        max_inflated_bytes = 9000000
        pre_auth_max_frame_bytes = 5000
        handshake_timeout_ms = 4321
        heartbeat_ms = 12345
        tcp_keepalive_s = 31
        max_lists_per_connection = 17
        max_list_name_bytes = 99
        max_connections = 321
        max_ops_per_mutation = 55
        max_id_bytes = 66
        max_kind_bytes = 44
        max_payload_bytes = 7777
        max_sections = 333
        max_rows = 4444
        [backpressure]
        low_watermark_bytes = 1000
        high_watermark_bytes = 100000
        hard_limit_bytes = 1000000
        write_deadline_ms = 4000
        [lists]
        idle_unload_ms = 60000
        max_waiting_per_list = 9
        [history]
        max_batches = 99
        max_bytes = 99999
        total_max_bytes = 999999
        [ordering]
        dedupe_per_client = 12
        dedupe_clients = 34
        [compression]
        level = 2
        threshold_bytes = 333
        offload_snapshot_rows = 4000
        [logging]
        level = "debug"
        """

    @Test func everyReloadableKeyIsReportedWhenItChanges() throws {
        let new = try ServerConfiguration(toml: Self.changed)
        let report = ServerConfiguration().reloadReport(to: new)
        let named = Set(report.map { String($0.prefix { $0 != ":" }) })
        let keys = ServerConfiguration.reloadableKeys.map(\.key)
        #expect(named == Set(keys), "missing: \(Set(keys).subtracting(named).sorted())")
        #expect(report.count == keys.count, "one line per key")
        for key in [
            "lists.idle_unload_ms", "lists.max_waiting_per_list", "server.flush_slice_us", "server.seal_wait_us",
            "limits.max_connections",
        ] {
            #expect(named.contains(key), "\(key) is reloadable and reported")
        }
    }

    @Test func anUnchangedConfigurationReportsNothing() throws {
        let same = try ServerConfiguration(toml: Self.changed)
        #expect(same.reloadReport(to: same).isEmpty)
        #expect(ServerConfiguration().reloadReport(to: ServerConfiguration()).isEmpty)
    }
}
