import FlowSyncCore
import FlowSyncProtocol

/// What the server tells about itself: the StatsReply's entries and the read-only
/// accessors tests and tools use.
extension Server {
    func statsEntries(list name: String?, grant: AccessGrant = .unrestricted) -> [StatsReply.Entry] {
        // Names as docs/PROTOCOL.md lists them (dotted; the set may grow). Epochs and
        // digests are u64 values carried in the i64 field (two's complement).
        var entries: [(String, Int64)] = [
            ("uptime.ms", Int64(loop.now - lifecycle.startedAt)),
            ("connections", Int64(connections.count)),
            ("connections.accepted", Int64(statistics.connectionsAccepted)),
            ("connections.refused", Int64(statistics.connectionsRefused)),
            ("lists", Int64(lists.hostedCount)),
            ("subscriptions", Int64(subscriptionCount)),
            ("batches", Int64(statistics.batchesCommitted)),
            ("mutations.committed", Int64(statistics.mutationsCommitted)),
            ("mutations.rejected", Int64(statistics.mutationsRejected)),
            ("frames.sent", Int64(statistics.framesSent)),
            ("bytes.sent", Int64(statistics.bytesSent)),
            ("flushes.sliced", Int64(statistics.flushesSliced)),
            ("subscribers.paused", Int64(statistics.slowConsumerEvents)),
            ("catchup.diffs", Int64(statistics.catchUpDiffs)),
            ("catchup.snapshots", Int64(statistics.catchUpSnapshots)),
            ("store.syncs", Int64(statistics.storeSyncs)),
            ("store.snapshots", Int64(statistics.storeSnapshots)),
            ("snapshots.encoded", Int64(statistics.snapshotsEncoded)),
            ("frames.offloaded", Int64(statistics.framesBuiltOffLoop)),
            ("lists.loads", Int64(statistics.listLoads)),
            ("lists.unloads", Int64(statistics.listUnloads)),
            ("lists.loading", Int64(lists.loadingCount)),
            ("lists.refused", Int64(lists.refusedCount)),
            ("catchup.from_log", Int64(statistics.catchUpsFromLog)),
            ("memory.trims", Int64(statistics.memoryTrims)),
            ("stored.checked", Int64(housekeeping.storedListCheck?.checked ?? 0)),
            ("stored.check_done", (housekeeping.storedListCheck?.finished ?? false) ? 1 : 0),
            ("stored.damaged", Int64(statistics.storedListsDamaged)),
        ]
        // Each hosted list by name with its version (`flowsync lists`), the first
        // `maxListedInStats` by name: a bounded reply whatever the server holds.
        // Only the lists the token may read are named (auth off: all of them).
        for name in lists.hostedNames.sorted().lazy.filter({ grant.mayRead($0) }).prefix(Self.maxListedInStats) {
            entries.append(("list:" + name, Int64(lists[name]!.position.version)))
        }
        if let name, let list = lists[name] {
            entries += [
                ("list.epoch", Int64(bitPattern: list.position.epoch)),
                ("list.version", Int64(list.position.version)),
                ("list.sections", Int64(list.sequencer.director.sections.count)),
                ("list.rows", Int64(list.sequencer.director.rowCount)),
                ("list.subscribers", Int64(list.subscribers.count)),
                ("list.digest", Int64(bitPattern: list.sequencer.director.digest.rawValue)),
            ]
        }
        return entries.map { StatsReply.Entry(name: $0.0, value: $0.1) }
    }

    /// How many lists a server-wide StatsReply names (`list:NAME` entries).
    static let maxListedInStats = 1_000

    /// The names of the lists currently hosted (for tests and the CLI).
    public var listNames: [String] { lists.hostedNames.sorted() }

    /// With lists on demand: the lists being loaded, loads and unloads so far, the
    /// lists refused as damaged (for tests and tools).
    public var listsLoading: Int { lists.loadingCount }
    public var refusedListNames: [String] { lists.refusedNames }

    /// The history bytes `list` holds in memory (`nil` when it is not loaded).
    public func historyBytes(of list: String) -> Int? { lists[list]?.sequencer.historyByteCount }

    /// The connections subscribed to `list` (0 when it is not hosted).
    public func subscriberCount(of list: String) -> Int { lists[list]?.subscribers.count ?? 0 }

    /// The current director and position of a list (for tests and tools).
    public func state(of list: String) -> (director: Director, position: ListVersion)? {
        lists[list].map { ($0.sequencer.director, $0.position) }
    }

    /// The number of open connections.
    public var connectionCount: Int { connections.count }

    /// Snapshot builds and compactions running on worker threads (their completion has
    /// not run yet). A shutdown completes only when this is 0.
    public var offloadsInFlight: Int { offloadsOutstanding }

    /// The most bytes queued for any one connection (this turn's frames plus what libuv
    /// holds): the figure back-pressure keeps bounded.
    public var largestQueue: Int { connections.values.map(\.queuedBytes).max() ?? 0 }
}
