import Metrics

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The daemon's metrics, through swift-metrics: the library only records; the
/// executable chooses the backend (Prometheus in `flowsyncd`). Without a bootstrapped
/// backend every call is a no-op. Names follow Prometheus conventions
/// (`_total` for counters, base units).
///
/// Handles with labels are cached, so a hot path (a frame, a rejected mutation) does
/// not look its counter up in the factory each time.
final class ServerMetrics {
    let connectionsAccepted = Counter(label: "flowsync_connections_accepted_total")
    let connectionsRefused = Counter(label: "flowsync_connections_refused_total")
    let connectionsOpen = Gauge(label: "flowsync_connections")
    let lists = Gauge(label: "flowsync_lists")
    let subscriptions = Gauge(label: "flowsync_subscriptions")
    let batches = Counter(label: "flowsync_batches_total")
    let mutationsCommitted = Counter(label: "flowsync_mutations_committed_total")
    let framesSent = Counter(label: "flowsync_frames_sent_total")
    let bytesSent = Counter(label: "flowsync_bytes_sent_total")
    /// Flushes that reached `server.flush_slice_us` with connections left (written in
    /// the next turns): how often a fan-out is longer than a slice.
    let flushesSliced = Counter(label: "flowsync_flushes_sliced_total")
    let slowConsumerEvents = Counter(label: "flowsync_slow_consumer_events_total")
    let largestQueueBytes = Gauge(label: "flowsync_largest_queue_bytes")
    /// Connections with at least one paused (lagging) subscription, sampled every 100 ms
    /// with the largest queue (config/grafana/flowsyncd.json).
    let subscribersPaused = Gauge(label: "flowsync_subscribers_paused")
    /// Connections closed at accept because `auth.max_pending_handshakes` connections
    /// were already waiting for their handshake (the pre-auth budget; they are also in
    /// `flowsync_connections_refused_total`).
    let handshakeBudgetExhausted = Counter(label: "flowsync_handshake_budget_exhausted_total")
    /// 1 once a store write or fsync failed (``Server/storageFailed(_:)``). `flowsyncd`
    /// exits right after (status 74), so a scrape rarely sees it there; its restart shows
    /// in `flowsync_start_time_seconds` (config/prometheus/flowsyncd-rules.yml).
    let storeFailed = Gauge(label: "flowsync_store_failed")
    /// When this server was created, in seconds since the Unix epoch (Prometheus's
    /// `process_start_time_seconds` convention): a change means a restart.
    let startTime = Gauge(label: "flowsync_start_time_seconds")
    /// How late the 100 ms sweep timer fires: a busy or blocked loop shows here first.
    let loopLag = Timer(label: "flowsync_loop_lag_seconds")
    /// One store sync (a group commit: every list written this turn), on the loop thread.
    let storeSync = Timer(label: "flowsync_store_sync_seconds")
    /// Compaction: a snapshot written and the log before it dropped, on the loop thread.
    let storeSnapshot = Timer(label: "flowsync_store_snapshot_seconds")

    /// Lists on demand (docs/STORAGE.md, "Lists on demand"): loads and unloads, loads
    /// refused (damage or an I/O error), the time from the first request to the list
    /// being served (the worker's read plus the hand-back), lists being read now, lists
    /// in the store (sampled every second on a worker), and history bytes in memory.
    /// `flowsync_lists` counts the lists in memory.
    let listLoads = Counter(label: "flowsync_list_loads_total")
    let listUnloads = Counter(label: "flowsync_list_unloads_total")
    let listLoadFailures = Counter(label: "flowsync_list_load_failures_total")
    let coldLoad = Timer(label: "flowsync_list_cold_load_seconds")
    let listsLoading = Gauge(label: "flowsync_lists_loading")
    let listsStored = Gauge(label: "flowsync_lists_stored")
    let historyBytes = Gauge(label: "flowsync_history_bytes")
    /// Cluster mode: lists dropped because the store fenced a batch (another node
    /// claimed the list; docs/CLUSTER.md).
    let listsFenced = Counter(label: "flowsync_lists_fenced_total")
    /// Cluster mode: batches a replica received from its list's owner, and writes
    /// forwarded to an owner (docs/CLUSTER.md, "Replicas").
    let batchesReplicated = Counter(label: "flowsync_batches_replicated_total")
    let mutationsForwarded = Counter(label: "flowsync_mutations_forwarded_total")
    /// Catch-ups older than the history in memory, read from the log on a worker.
    let catchUpsFromLog = Counter(label: "flowsync_catchups_from_log_total")
    /// History dropped to keep `[history] total_max_bytes` (least recently active first).
    let historyBudgetTrims = Counter(label: "flowsync_history_budget_trimmed_bytes_total")
    /// Stored lists the background check found damaged or unreadable (lists on demand).
    let storedListsDamaged = Counter(label: "flowsync_stored_lists_damaged_total")

    init() {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        startTime.record(Double(now.tv_sec) + Double(now.tv_nsec) / 1e9)
        storeFailed.record(0)
        subscribersPaused.record(0)
    }

    private var closedByReason: [UInt16: Counter] = [:]
    private var rejectedByCode: [UInt16: Counter] = [:]
    private var resumes: [String: Counter] = [:]

    func connectionClosed(code: UInt16?) {
        let key = code ?? 0
        if closedByReason[key] == nil {
            closedByReason[key] = Counter(
                label: "flowsync_connections_closed_total", dimensions: [("reason", code.map { "\($0)" } ?? "peer")])
        }
        closedByReason[key]!.increment()
    }

    func mutationRejected(code: UInt16) {
        if rejectedByCode[code] == nil {
            rejectedByCode[code] = Counter(
                label: "flowsync_mutations_rejected_total", dimensions: [("code", "\(code)")])
        }
        rejectedByCode[code]!.increment()
    }

    /// A subscriber caught up: `outcome` is `diff` or `snapshot`; `cause` is `resume`
    /// (a reconnect) or `lag` (back-pressure).
    func catchUp(outcome: String, cause: String) {
        let key = "\(outcome)/\(cause)"
        if resumes[key] == nil {
            resumes[key] = Counter(
                label: "flowsync_catchups_total", dimensions: [("outcome", outcome), ("cause", cause)])
        }
        resumes[key]!.increment()
    }
}
