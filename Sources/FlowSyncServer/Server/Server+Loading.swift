import FlowSyncCore
import FlowSyncLoop
import FlowSyncProtocol
import Logging

/// Lists on demand (`lists.on_demand`; docs/STORAGE.md, "Lists on demand", and
/// docs/ARCHITECTURE.md, "Event loop", rule 15): a list is read from the store on its
/// first use, on a worker; what asks for it waits in a bounded queue while every other
/// list goes on; a damaged list refuses only itself; an idle list is unloaded.
extension Server {
    /// Opens an ``OnDemandStore`` without reading a list; declared lists load now (a
    /// declared list is created at start, and must never be created over stored data).
    func openOnDemand(_ store: OnDemandStore, _ options: RecoveryOptions) throws(StoreError) -> RecoveryReport {
        var report = try store.openOnDemand(options)
        for name in configuration.declaredLists {
            let outcome = store.prepareLoad(of: name).run()
            do throws(StoreError) {
                if let list = try store.finishLoad(outcome) {
                    try adopt(list)
                    report.lists.append(list)
                }
                report.notes += outcome.notes
            } catch  where error.isCorruption {
                refuse(name, error)
            }
        }
        return report
    }

    /// Whether `action` (about list `name`) must wait for the list to load: then it
    /// waits (or is refused) and the caller does nothing more with it.
    func waitsForLoad(_ name: String, _ action: ConnectionStateMachine.Action, on connection: Connection) -> Bool {
        guard storage.loadsOnDemand else { return false }
        let slot: ListSlot
        if let existing = lists.slot(name) {
            slot = existing
        } else {
            startLoad(name)
            guard let loading = lists.slot(name) else { return false }
            slot = loading
        }
        switch slot.requestArrived(connection: connection.id, action, limit: configuration.maxWaitingPerList) {
        case .serve:
            return false
        case .queued:
            break
        case .overloaded:
            answer(
                action, of: name, code: .overloaded,
                "more than \(configuration.maxWaitingPerList) requests wait for list \"\(name)\" to load",
                on: connection)
        case .refused(let error):
            answerRefused(action, of: name, error, on: connection)
        }
        return true
    }

    /// Loads `name` with no request waiting for it (cluster mode: writes were forwarded
    /// to a list this node owns but had not loaded), unless it is loading already.
    func loadWithoutRequest(_ name: String) {
        guard lists.slot(name) == nil else { return }
        startLoad(name)
    }

    private func startLoad(_ name: String) {
        lists.startLoading(ListLoad(name: name, startedNanoseconds: MonotonicClock.nanoseconds()))
        // A backup reading this list's files right now: the load (which may cut a torn
        // tail, and after which the list is appended to) starts when that chunk is
        // written. Its requests wait in the load's queue meanwhile, as for any load.
        if backupHoldsLoad(of: name) { return }
        runLoad(name)
    }

    /// Starts the load of `name` that a backup held (its slot is loading).
    func runBlockedLoad(_ name: String) {
        guard lists.isLoading(name) else { return }
        runLoad(name)
    }

    private func runLoad(_ name: String) {
        // Counted like offloaded work: a shutdown waits for the completion, which
        // touches the store.
        offloadsOutstanding += 1
        if let store = storage.cluster {
            // Cluster mode: the store claims and reads the list on the loop.
            store.load(name, create: configuration.autoCreateLists) { [weak self] result in
                guard let self else { return }
                offloadsOutstanding -= 1
                listLoaded(name, result, notes: [], workerNanoseconds: 0)
                finishShutdownIfDone()
            }
        } else if let (store, loader) = storage.onDemand {
            loader.load(store.prepareLoad(of: name), on: loop) { [weak self] outcome in
                guard let self else { return }
                offloadsOutstanding -= 1
                // finishLoad registers the list's files: on the loop, only if it is
                // still wanted (a failed store keeps its files as they are).
                if lists.isLoading(name) && storageFailure == nil {
                    let result: Result<RecoveredList?, StoreError>
                    do throws(StoreError) { result = .success(try store.finishLoad(outcome)) } catch {
                        result = .failure(error)
                    }
                    listLoaded(name, result, notes: outcome.notes, workerNanoseconds: outcome.nanoseconds)
                } else {
                    listLoaded(name, .success(nil), notes: [], workerNanoseconds: 0)
                }
                backupSawLoad()
                finishShutdownIfDone()
            }
        }
    }

    /// Loop thread: the load is done. The list is adopted, then every waiting request
    /// is carried out in order — the connection may have gone, or its machine moved on,
    /// so each is checked again.
    private func listLoaded(
        _ name: String, _ result: Result<RecoveredList?, StoreError>, notes: [String], workerNanoseconds: UInt64
    ) {
        guard storageFailure == nil else {
            if let load = lists.abandonLoad(name) { recordColdLoad(load) }
            return
        }
        // The slot's outcome: hosted (adopted, maybe in a new epoch), absent, damaged
        // (refused until a restart) or an I/O error (tried again at the next request).
        let slotResult: ListSlot.LoadResult
        do throws(StoreError) {
            if let recovered = try result.get() {
                slotResult = .hosted(try host(recovered))
            } else {
                slotResult = .absent
            }
        } catch {
            slotResult = error.isCorruption ? .damaged(error) : .failed(error)
        }
        guard let (load, action) = lists.loadFinished(name, slotResult) else { return }
        let latency = recordColdLoad(load)
        switch action {
        case .refuse(let waiting, let error):
            metrics.listLoadFailures.increment()
            if error.isCorruption {
                logRefusal(name, error)
            } else {
                // An I/O error reading it (cluster mode: owned by another live node, or
                // PostgreSQL failed): refused now, tried again at the next request.
                logger.error("list not loaded", metadata: ["flowsync.list": "\(name)", "error": "\(error)"])
            }
            for (id, action) in waiting {
                guard let connection = connections[id], !connection.isClosing else { continue }
                answerRefused(action, of: name, error, on: connection)
            }
        case .replay(let waiting):
            for note in notes { logger.warning("store: \(note)", metadata: ["flowsync.list": "\(name)"]) }
            events.listLoaded()
            logger.debug(
                "list loaded",
                metadata: [
                    "flowsync.list": "\(name)", "worker_us": "\(workerNanoseconds / 1_000)",
                    "waited_us": "\(latency / 1_000)", "requests": "\(waiting.count)",
                ])
            for (id, action) in waiting {
                guard let connection = connections[id], !connection.isClosing else { continue }
                perform(action, on: connection, listLoaded: true)
            }
            recordListGauges()
        }
    }

    /// The cold-load latency of `load` (first request → served), recorded; returns it.
    @discardableResult
    private func recordColdLoad(_ load: ListLoad) -> UInt64 {
        let latency = MonotonicClock.nanoseconds() - load.startedNanoseconds
        metrics.coldLoad.recordNanoseconds(Int64(latency))
        return latency
    }

    /// Hosts a list the store recovered; one whose stored history may not be what
    /// clients saw starts a new epoch, so its subscribers resync from a snapshot.
    func adopt(_ recovered: RecoveredList) throws(StoreError) {
        lists.host(try host(recovered))
    }

    /// The host of a list the store recovered, in a new epoch when it needs one (not
    /// registered yet: a load's slot hosts it, ``adopt(_:)`` otherwise).
    private func host(_ recovered: RecoveredList) throws(StoreError) -> ListHost {
        var list = recovered
        if list.needsNewEpoch {
            let old = list.sequencer.position
            list.sequencer.startEpoch(UInt64.random(in: 1...UInt64.max))
            let sequencer = list.sequencer
            try store.startEpoch(
                StoredSnapshot(
                    listName: list.name, position: sequencer.position, digest: sequencer.director.digest,
                    sections: sequencer.director.sections, dedupe: sequencer.dedupeRecords()))
            logger.warning(
                "list starts a new epoch: clients resync from a snapshot",
                metadata: ["flowsync.list": "\(list.name)", "was": "\(old)", "now": "\(sequencer.position)"])
        }
        let host = ListHost(name: list.name, sequencer: list.sequencer, declared: false)
        host.lastActive = loop.now
        return host
    }

    /// Remembers a damaged list: refused with its error until a restart (after
    /// `--repair`, or `flowsyncd --check-store` to see every damaged list at once).
    func refuse(_ name: String, _ error: StoreError) {
        lists.refuse(name, error)
        logRefusal(name, error)
    }

    private func logRefusal(_ name: String, _ error: StoreError) {
        logger.error(
            "list refused: its stored data is damaged (the other lists are served)",
            metadata: ["flowsync.list": "\(name)", "error": "\(error)"])
    }

    private func answerRefused(
        _ action: ConnectionStateMachine.Action, of name: String, _ error: StoreError, on connection: Connection
    ) {
        answer(action, of: name, code: .internalError, "list \"\(name)\" cannot be loaded: \(error)", on: connection)
    }

    /// Refuses a waiting request with `code`: a Reject for a write, a non-fatal Error
    /// otherwise.
    private func answer(
        _ action: ConnectionStateMachine.Action, of name: String, code: ErrorCode, _ message: String,
        on connection: Connection
    ) {
        if case .mutate(let mutate) = action {
            send(.reject(Reject(listName: name, seq: mutate.seq, code: code, message: message)), to: connection)
            events.mutationRejected(code: code.rawValue)
        } else {
            send(
                .error(ErrorMessage(code: code, message: message, listName: name, closesConnection: false)),
                to: connection)
        }
    }

    // MARK: Unloading

    /// From the sweep: unloads every list idle for `lists.idle_unload_ms` — no
    /// subscriber, no write, nothing in flight for it. Its state, history and idempotency
    /// window come back from the log at its next load. A scan costs O(lists loaded), so
    /// it runs at most every quarter of the idle time (and at most once per sweep).
    func unloadIdleLists() {
        guard storage.loadsOnDemand, configuration.idleUnloadMilliseconds > 0, storageFailure == nil,
            !lifecycle.isShuttingDown
        else { return }
        let now = loop.now
        let idle = UInt64(configuration.idleUnloadMilliseconds)
        guard now >= housekeeping.lastIdleScan + max(100, idle / 4) else { return }
        housekeeping.lastIdleScan = now
        var unloaded = 0
        for list in lists.hosts where isUnloadable(list, now: now, idle: idle) {
            if let store = onDemandStore {
                do {
                    try store.unload(list.name)
                } catch {
                    storageFailed(error)
                    return
                }
            } else if let cluster = clusterNode {
                // Cluster mode: a replica stops following; an owned list stays this
                // node's in PostgreSQL and loads again (claimed back at once) at its
                // next use, or when a write is forwarded to it.
                guard cluster.unload(list.name) else { continue }
            }
            lists.unload(list)
            unloaded += 1
        }
        guard unloaded > 0 else { return }
        events.listsUnloaded(unloaded)
        // One line per scan that unloaded anything (at most every quarter idle time).
        logger.info("unloaded idle lists", metadata: ["count": "\(unloaded)", "loaded": "\(lists.hostedCount)"])
        recordListGauges()
    }

    /// The list's own answer (``ListHost/isIdle(now:idleFor:busyElsewhere:)``), with what
    /// the other rooms hold for it in cluster mode: a batch committing, a forwarded
    /// write waiting for its owner.
    private func isUnloadable(_ list: ListHost, now: UInt64, idle: UInt64) -> Bool {
        list.isIdle(
            now: now, idleFor: idle,
            busyElsewhere: commits.gate.hasPendingCommit(of: list.name) || relay.forwarded.hasWaiting(for: list.name))
    }

    /// Every second, from the sweep: enforces `[history] total_max_bytes`, samples the
    /// history bytes in memory and the subscriptions and, on a worker, counts the lists
    /// on disk.
    func sampleListGauges() {
        let now = loop.now
        guard now >= housekeeping.lastListSample + 1_000 else { return }
        housekeeping.lastListSample = now
        // One pass over the lists for both sums (O(lists loaded), once a second).
        var historyBytes = 0
        var subscriptions = 0
        let hosts = lists.hosts
        for list in hosts {
            historyBytes += list.sequencer.historyByteCount
            subscriptions += list.subscribers.count
        }
        metrics.subscriptions.record(subscriptions)
        let budget = configuration.historyTotalMaxBytes
        if budget > 0 && historyBytes > budget {
            // Least recently active first: their subscribers are the least likely to
            // resume soon, and a resume older than memory holds is read from the log.
            // O(lists log lists), only when over the budget.
            var excess = historyBytes - budget
            for list in hosts.sorted(by: { $0.lastActive < $1.lastActive }) where excess > 0 {
                let held = list.sequencer.historyByteCount
                guard held > 0 else { continue }
                let dropped = list.trimHistory(toBytes: max(0, held - excess))
                excess -= dropped
                historyBytes -= dropped
                metrics.historyBudgetTrims.increment(by: Int64(dropped))
            }
        }
        metrics.historyBytes.record(historyBytes)
        metrics.listsLoading.record(lists.loadingCount)
        guard let (store, loader) = storage.onDemand, !housekeeping.countingStoredLists, !lifecycle.isShuttingDown
        else { return }
        housekeeping.countingStoredLists = true
        offloadsOutstanding += 1
        loader.run(store.storedListCounter(), on: loop) { [weak self] count in
            guard let self else { return }
            offloadsOutstanding -= 1
            housekeeping.countingStoredLists = false
            housekeeping.storedListCount = count
            metrics.listsStored.record(count)
            finishShutdownIfDone()
        }
    }
}

extension Server {
    /// A subscribe that waited for its list: the machine was asked before the wait, so
    /// what it checked then is checked again (another subscribe to the list may have
    /// started, a refreshed token may no longer grant it, the connection may be full).
    func recheckDeferredSubscribe(_ name: String, _ connection: Connection) -> ErrorMessage? {
        if connection.machine.flow(of: name) != nil {
            return ErrorMessage(
                code: .alreadySubscribed, message: "already subscribed to \"\(name)\"", listName: name,
                closesConnection: false)
        }
        if connection.machine.session?.grant.mayRead(name) == false {
            return ErrorMessage(
                code: .forbidden, message: "the token does not grant reading \"\(name)\"", listName: name,
                closesConnection: false)
        }
        if connection.machine.subscribedLists.count >= configuration.maxListsPerConnection {
            return ErrorMessage(
                code: .tooManyLists, message: "at most \(configuration.maxListsPerConnection) lists per connection",
                listName: name, closesConnection: false)
        }
        return nil
    }
}

extension ConnectionStateMachine.Action {
    /// The list this action needs loaded first, if any: a subscribe, a write, a stats
    /// request by name.
    var listToLoad: String? {
        switch self {
        case .subscribe(let request): return request.listName
        case .mutate(let mutate): return mutate.listName
        case .stats(let request, _): return request.listName
        default: return nil
        }
    }
}
