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
        otherStorage.listLoading = storage.listLoading
        otherStorage.eagerMaxLists = storage.eagerMaxLists
        otherStorage.checkStoredLists = storage.checkStoredLists
        if otherStorage != storage { ignored.append("storage") }
        if new.storage.listLoading != storage.listLoading { ignored.append("lists.on_demand") }
        if new.storage.eagerMaxLists != storage.eagerMaxLists { ignored.append("lists.eager_max_lists") }
        if new.storage.checkStoredLists != storage.checkStoredLists { ignored.append("lists.check_stored") }
        if new.metrics != metrics { ignored.append("metrics") }
        // The ring is created at start; switching paths under live sockets is not done.
        if new.writePath != writePath { ignored.append("server.write_path") }
        if new.cluster != cluster { ignored.append("cluster") }
        // What the TCP listener speaks is decided at start (the certificate itself is
        // reloadable: `Server.reloadTLS`).
        if new.tls.mode != tls.mode || new.tls.allowPlaintextBeyondLoopback != tls.allowPlaintextBeyondLoopback {
            ignored.append("tls.mode")
        }
        var applied = new
        applied.listen = listen
        applied.storage = storage
        applied.metrics = metrics
        applied.writePath = writePath
        applied.cluster = cluster
        applied.tls.mode = tls.mode
        applied.tls.allowPlaintextBeyondLoopback = tls.allowPlaintextBeyondLoopback
        return (applied, ignored)
    }
}

// MARK: The reload's report

extension ServerConfiguration {
    /// Every key a reload applies, by its name in the config file, with how to read it
    /// (issue #30: the report was a hand-written list that had missed five of them —
    /// `lists.idle_unload_ms`, `lists.max_waiting_per_list`, `server.flush_slice_us`,
    /// `server.seal_wait_us` and `limits.max_connections`).
    /// `ConfigurationReloadReportTests` changes each key and checks the report names
    /// it. Not here: the restart-only groups (``reloaded(to:)``), `server.lists`
    /// (declared lists are created at start) and `[auth]`, which the server reports
    /// itself (new keys make a new verifier, which may be refused).
    static let reloadableKeys: [(key: String, value: @Sendable (ServerConfiguration) -> String)] = [
        ("server.auto_create_lists", { "\($0.autoCreateLists)" }),
        ("server.shutdown_grace_ms", { "\($0.shutdownGraceMilliseconds)" }),
        ("server.name", { $0.serverName }),
        ("server.flush_slice_us", { "\($0.flushSliceMicroseconds)" }),
        ("server.seal_wait_us", { "\($0.sealWaitMicroseconds)" }),
        ("limits.max_frame_bytes", { "\($0.maxFrameBytes)" }),
        ("limits.max_inflated_bytes", { "\($0.maxInflatedBytes)" }),
        ("limits.pre_auth_max_frame_bytes", { "\($0.limits.preAuthMaxFrameBytes)" }),
        ("limits.handshake_timeout_ms", { "\($0.limits.handshakeTimeoutMilliseconds)" }),
        ("limits.heartbeat_ms", { "\($0.limits.heartbeatMilliseconds)" }),
        ("limits.tcp_keepalive_s", { "\($0.limits.tcpKeepaliveSeconds)" }),
        ("limits.max_lists_per_connection", { "\($0.maxListsPerConnection)" }),
        ("limits.max_list_name_bytes", { "\($0.limits.maxListNameBytes)" }),
        ("limits.max_connections", { "\($0.limits.maxConnections)" }),
        // The director's six limits (max_ops_per_mutation, max_id_bytes, max_kind_bytes,
        // max_payload_bytes, max_sections, max_rows) as one entry, as the report always
        // named them.
        ("limits.director", { "\($0.director)" }),
        ("backpressure.low_watermark_bytes", { "\($0.lowWatermarkBytes)" }),
        ("backpressure.high_watermark_bytes", { "\($0.highWatermarkBytes)" }),
        ("backpressure.hard_limit_bytes", { "\($0.hardLimitBytes)" }),
        ("backpressure.write_deadline_ms", { "\($0.writeDeadlineMilliseconds)" }),
        ("lists.idle_unload_ms", { "\($0.idleUnloadMilliseconds)" }),
        ("lists.max_waiting_per_list", { "\($0.maxWaitingPerList)" }),
        ("history.max_batches", { "\($0.historyMaxBatches)" }),
        ("history.max_bytes", { "\($0.historyMaxBytes)" }),
        ("history.total_max_bytes", { "\($0.historyTotalMaxBytes)" }),
        ("ordering.dedupe_per_client", { "\($0.dedupePerClient)" }),
        ("ordering.dedupe_clients", { "\($0.dedupeClients)" }),
        ("compression.level", { "\($0.compressionLevel)" }),
        ("compression.threshold_bytes", { "\($0.compressionThresholdBytes)" }),
        ("compression.offload_snapshot_rows", { "\($0.offloadSnapshotRows)" }),
        ("logging.level", { $0.logLevel }),
    ]

    /// What a reload to `new` changes, one `key: old → new` line per reloadable key that
    /// differs, in the order of ``reloadableKeys``.
    func reloadReport(to new: ServerConfiguration) -> [String] {
        Self.reloadableKeys.compactMap { key, value in
            let (old, now) = (value(self), value(new))
            return old == now ? nil : "\(key): \(old) → \(now)"
        }
    }
}
