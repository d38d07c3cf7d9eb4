import FlowSyncCore

/// One list's entry in the server's registry (``ListTable``): where the list is in its
/// life on this server, with the data that only means something in that phase.
///
/// ```
///            requestArrived (queued)
///               ┌──────┐
///               ▼      │
///   ──start──▶ loading ─┴─loadFinished(.hosted)──▶ hosted ──(drop | unload | lose)──▶ gone
///                 │ └──loadFinished(.absent | .failed)──▶ gone (the waiting requests go on)
///                 └────loadFinished(.damaged)──▶ refused (until a restart)
/// ```
///
/// Why one entry (issue #30): a list used to be spread over eight collections of the
/// server keyed by its name (`lists`, `loads`, `refusedLists`, `dirtyLists`,
/// `compactionsDue`, `compactionsInFlight`, `takeOvers`, `lastForwardedAgain`), and each
/// removal site had to remember every one of them. Now a list is in exactly one phase,
/// and the per-list flags of the turn and of the cluster live in the hosted entry
/// (``ListHost``): removing the entry forgets all of it at once.
///
/// Pure (no socket, no clock): tested event by event and by a seeded simulation
/// (`ListSlotTests`). Not guaranteed: a ``ListLoad``'s waiting requests are replayed by
/// the shell, which re-checks each one (its connection may have gone meanwhile).
struct ListSlot {
    private enum State {
        /// Read from the store on a worker (or claimed, in cluster mode); the requests
        /// naming it wait in the load, in arrival order.
        case loading(ListLoad)
        /// Its stored data is damaged: every request is refused with this error.
        case refused(StoreError)
        /// Served here: the sequencer, the subscribers and the per-list flags.
        case hosted(ListHost)
    }

    private var state: State

    /// A list being loaded.
    init(loading load: ListLoad) { state = .loading(load) }
    /// A list served here.
    init(hosting host: ListHost) { state = .hosted(host) }
    /// A list refused as damaged.
    init(refusing error: StoreError) { state = .refused(error) }

    /// The hosted list, if the slot is hosted.
    var host: ListHost? {
        if case .hosted(let host) = state { return host }
        return nil
    }

    /// The load in flight, if the slot is loading.
    var load: ListLoad? {
        if case .loading(let load) = state { return load }
        return nil
    }

    /// The refusal, if the slot is refused.
    var refusal: StoreError? {
        if case .refused(let error) = state { return error }
        return nil
    }

    /// What the shell does with a request about this list.
    enum Arrival {
        /// The list is here: carry the request out.
        case serve(ListHost)
        /// Queued in the load; the shell does nothing more with it now.
        case queued
        /// The load's queue is full (`lists.max_waiting_per_list`): answer `overloaded`.
        case overloaded
        /// Answer with this refusal.
        case refused(StoreError)
    }

    /// A request (`action` of connection `connection`) names this list.
    func requestArrived(connection: Int, _ action: ConnectionStateMachine.Action, limit: Int) -> Arrival {
        switch state {
        case .hosted(let host):
            return .serve(host)
        case .refused(let error):
            return .refused(error)
        case .loading(let load):
            return load.wait(connection, action, limit: limit) ? .queued : .overloaded
        }
    }

    /// How a load ended.
    enum LoadResult {
        /// The list is loaded: host it.
        case hosted(ListHost)
        /// The store holds nothing under the name: the slot is freed, and the waiting
        /// requests go on as for a name never stored (created, or `unknown list`).
        case absent
        /// Its stored data is damaged: refused until a restart.
        case damaged(StoreError)
        /// An I/O error (cluster mode: owned by another live node, PostgreSQL failed):
        /// the slot is freed, so the next request tries again.
        case failed(StoreError)
    }

    /// What the shell does once a load ended.
    enum LoadAction {
        /// Carry the waiting requests out, in order (the list is hosted, or absent).
        case replay([(connection: Int, action: ConnectionStateMachine.Action)])
        /// Refuse each waiting request with `error`.
        case refuse([(connection: Int, action: ConnectionStateMachine.Action)], StoreError)
    }

    /// The load ended with `result`. Returns what to do with the waiting requests and
    /// whether the slot stays (`false`: the registry forgets the name).
    mutating func loadFinished(_ result: LoadResult) -> (action: LoadAction, keep: Bool) {
        guard case .loading(let load) = state else {
            preconditionFailure("Internal inconsistency in ListSlot: a load finished for a list that is not loading")
        }
        switch result {
        case .hosted(let host):
            state = .hosted(host)
            return (.replay(load.waiting), true)
        case .absent:
            return (.replay(load.waiting), false)
        case .damaged(let error):
            state = .refused(error)
            return (.refuse(load.waiting, error), true)
        case .failed(let error):
            return (.refuse(load.waiting, error), false)
        }
    }
}
