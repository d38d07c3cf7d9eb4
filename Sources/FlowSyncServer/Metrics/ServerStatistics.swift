import FlowSyncProtocol

/// Counters the server keeps (exported through `StatsReply`, later Prometheus).
public struct ServerStatistics: Sendable {
    public var connectionsAccepted = 0
    public var connectionsRefused = 0
    public var connectionsCurrent = 0
    /// Connections the server closed, by wire error code.
    public var closedByReason: [UInt16: Int] = [:]
    public var batchesCommitted = 0
    public var mutationsCommitted = 0
    public var mutationsRejected = 0
    public var framesSent = 0
    public var bytesSent = 0
    /// Flushes that reached their time slice (`server.flush_slice_us`) with connections
    /// left, written in the next turns.
    public var flushesSliced = 0
    public var slowConsumerEvents = 0
    public var catchUpDiffs = 0
    public var catchUpSnapshots = 0
    public var snapshotsSent = 0
    /// Snapshot frames encoded (on the loop or off it). Joiners at one version share one
    /// encoding, so this stays below the snapshots sent.
    public var snapshotsEncoded = 0
    /// First frames (snapshots, catch-ups of large lists) built on a worker thread.
    public var framesBuiltOffLoop = 0
    /// Store syncs (fsync rounds: one per loop turn with writes under `always`).
    public var storeSyncs = 0
    /// Store snapshots written by compaction.
    public var storeSnapshots = 0
    /// Lists loaded from the store on demand, and unloaded when idle.
    public var listLoads = 0
    public var listUnloads = 0
    /// Loads that waited for a backup's read of their list (lists on demand).
    public var loadsHeldByBackup = 0
    /// Catch-ups older than the history in memory, rebuilt from the log on a worker.
    public var catchUpsFromLog = 0
    /// Times the sweep gave freed memory back to the system after a burst of queued
    /// bytes or of TLS handshakes (`malloc_trim`, ``AllocatorTrimPolicy``).
    public var memoryTrims = 0
    /// Stored lists the background check found damaged or unreadable (issue #33).
    public var storedListsDamaged = 0
    /// Cluster mode: batches replayed from another node's list, and writes forwarded
    /// to a list's owner.
    public var batchesReplicated = 0
    public var mutationsForwarded = 0
    /// Sends through the io_uring write path (`server.write_path`), the submissions
    /// that carried them, and the sends that did not take every queued byte (short,
    /// `EAGAIN`, frames past one send's limit: the rest went to libuv; or an error).
    public var ringSends = 0
    public var ringSubmissions = 0
    public var ringRemaindersToLibuv = 0

    public init() {}
}
