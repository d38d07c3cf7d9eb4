/// The one door for what the server counts (issue #30: 20 places updated
/// ``ServerStatistics`` and ``ServerMetrics`` side by side, and one forgotten half was a
/// stat the StatsReply and Prometheus disagreed on). Each method is an event, named as
/// it happened; it updates the statistics (the `StatsReply`, tests) and the metrics
/// (swift-metrics; no-ops without a backend) together. Gauges sampled by the sweep
/// are recorded on ``metrics`` directly: they have no statistic. Loop-confined.
struct ServerEvents {
    /// What the `StatsReply` and the tests read.
    private(set) var statistics = ServerStatistics()
    /// The swift-metrics handles (a class: the counters are shared references).
    let metrics = ServerMetrics()

    // MARK: Connections

    /// A connection was accepted; `open` are open now.
    mutating func connectionAccepted(open: Int) {
        statistics.connectionsAccepted += 1
        statistics.connectionsCurrent = open
        metrics.connectionsAccepted.increment()
        metrics.connectionsOpen.record(open)
    }

    /// A connection was refused at accept; `budgetExhausted`: by the handshake budget.
    mutating func connectionRefused(budgetExhausted: Bool) {
        statistics.connectionsRefused += 1
        metrics.connectionsRefused.increment()
        if budgetExhausted { metrics.handshakeBudgetExhausted.increment() }
    }

    /// The server decided to close a connection with `code` (its error frame is queued).
    mutating func closing(code: UInt16) {
        statistics.closedByReason[code, default: 0] += 1
    }

    /// A connection left the table (`code`: the server's reason; `nil`: the peer's).
    mutating func connectionClosed(open: Int, code: UInt16?) {
        statistics.connectionsCurrent = open
        metrics.connectionsOpen.record(open)
        metrics.connectionClosed(code: code)
    }

    /// A subscription started lagging, or a queue passed the hard limit.
    mutating func slowConsumer() {
        statistics.slowConsumerEvents += 1
        metrics.slowConsumerEvents.increment()
    }

    // MARK: Writes

    /// A list sealed a batch.
    mutating func batchCommitted() {
        statistics.batchesCommitted += 1
        metrics.batches.increment()
    }

    /// A replica applied its owner's batch (cluster mode).
    mutating func batchReplicated() {
        statistics.batchesReplicated += 1
        metrics.batchesReplicated.increment()
    }

    /// A write was acknowledged.
    mutating func mutationCommitted() {
        statistics.mutationsCommitted += 1
        metrics.mutationsCommitted.increment()
    }

    /// A write was rejected with wire code `code`.
    mutating func mutationRejected(code: UInt16) {
        statistics.mutationsRejected += 1
        metrics.mutationRejected(code: code)
    }

    /// A write to a replica was forwarded to its owner (cluster mode).
    mutating func mutationForwarded() {
        statistics.mutationsForwarded += 1
        metrics.mutationsForwarded.increment()
    }

    // MARK: The flush

    /// A connection's frames were handed to its socket. The metrics follow once per
    /// flush (``flushed(_:frames:bytes:)``): two counter updates per connection cost
    /// more than the statistic.
    mutating func written(frames: Int, bytes: Int) {
        statistics.framesSent += frames
        statistics.bytesSent += bytes
    }

    /// A flush ended; `frames` and `bytes` it wrote (counted by ``written(frames:bytes:)``)
    /// go to the metrics when it was the outermost one.
    mutating func flushed(_ report: Outbox.FlushReport, frames: Int, bytes: Int) {
        statistics.ringSubmissions += report.ringSubmissions
        statistics.ringSends += report.ringSends
        statistics.ringRemaindersToLibuv += report.ringRemaindersToLibuv
        if report.sliced {
            statistics.flushesSliced += 1
            metrics.flushesSliced.increment()
        }
        if report.outermost {
            metrics.framesSent.increment(by: Int64(frames))
            metrics.bytesSent.increment(by: Int64(bytes))
        }
    }

    // MARK: First frames and catch-ups

    /// `count` snapshot frames were encoded.
    mutating func snapshotsEncoded(_ count: Int = 1) {
        statistics.snapshotsEncoded += count
    }

    /// A subscriber's first frame is a snapshot.
    mutating func snapshotSent() {
        statistics.snapshotsSent += 1
    }

    /// A catch-up (after a `resume` or a `lag`) was sent as a snapshot or a diff.
    mutating func caughtUp(snapshot: Bool, cause: String) {
        if snapshot { statistics.catchUpSnapshots += 1 } else { statistics.catchUpDiffs += 1 }
        metrics.catchUp(outcome: snapshot ? "snapshot" : "diff", cause: cause)
    }

    /// A catch-up older than the history in memory is read from the log.
    mutating func catchUpFromLog() {
        statistics.catchUpsFromLog += 1
        metrics.catchUpsFromLog.increment()
    }

    /// The background check found a stored list damaged (or unreadable).
    mutating func storedListDamaged() {
        statistics.storedListsDamaged += 1
        metrics.storedListsDamaged.increment()
    }

    /// Freed memory was given back after a burst (``Server/returnFreedMemory(queuedBytes:now:)``).
    mutating func memoryTrimmed() {
        statistics.memoryTrims += 1
    }

    /// A first frame is built on a worker.
    mutating func frameBuiltOffLoop() {
        statistics.framesBuiltOffLoop += 1
    }

    // MARK: The store and the lists

    /// One store sync (group commit) took `nanoseconds` on the loop.
    mutating func storeSynced(nanoseconds: UInt64) {
        statistics.storeSyncs += 1
        metrics.storeSync.recordNanoseconds(Int64(nanoseconds))
    }

    /// A compaction snapshot was stored, `nanoseconds` of work in all.
    mutating func snapshotStored(nanoseconds: UInt64) {
        statistics.storeSnapshots += 1
        metrics.storeSnapshot.recordNanoseconds(Int64(nanoseconds))
    }

    /// A list was loaded from the store.
    mutating func listLoaded() {
        statistics.listLoads += 1
        metrics.listLoads.increment()
    }

    /// `count` idle lists were unloaded.
    mutating func listsUnloaded(_ count: Int) {
        statistics.listUnloads += count
        metrics.listUnloads.increment(by: Int64(count))
    }

    /// A load waited for a backup's read of its list.
    mutating func loadHeldByBackup() {
        statistics.loadsHeldByBackup += 1
    }
}
