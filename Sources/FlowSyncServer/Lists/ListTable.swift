import FlowSyncCore

/// The server's registry of lists: one ``ListSlot`` per name, and the few questions the
/// server asks of all of them. Loop-confined (it holds ``ListHost``s).
///
/// Every way a list leaves is one method — ``drop(_:)`` (nobody needs it),
/// ``unload(_:)`` (idle, back to the store) and ``lose(_:)`` (fenced, or its replica
/// broke) — and each removes the slot, which is all there is of the list: its turn
/// flags, compaction phase, take-over and the writes other nodes forwarded to it live
/// in its ``ListHost``. The turn's work lists (``compactionsDue``, the outbox's dirty
/// lists) hold names only as hints: each is checked against the slot when it is used,
/// so a list that left meanwhile is skipped.
///
/// - Complexity: lookups O(1); ``hosts`` and the name lists O(slots). The counts are
///   kept at each transition: the lists gauge is recorded on every subscribe.
struct ListTable {
    private var slots: [String: ListSlot] = [:]
    /// Hosted lists (the `lists` stat and gauge).
    private(set) var hostedCount = 0
    /// Lists being loaded.
    private(set) var loadingCount = 0
    /// Lists refused as damaged.
    private(set) var refusedCount = 0
    /// Lists that asked for a snapshot (compaction) this turn, each once (its
    /// ``ListHost/compaction`` is `.due`); done after the flush, so no ack waits for it.
    var compactionsDue: [String] = []

    /// The hosted list named `name` (`nil` while it loads, when refused or absent).
    subscript(name: String) -> ListHost? { slots[name]?.host }

    /// The slot of `name`, whatever its phase.
    func slot(_ name: String) -> ListSlot? { slots[name] }

    /// Every hosted list, in no order. O(slots).
    var hosts: [ListHost] { slots.values.compactMap(\.host) }

    /// The names of the hosted lists, in no order. O(slots).
    var hostedNames: [String] { slots.compactMap { $0.value.host == nil ? nil : $0.key } }

    /// The names of the lists being loaded. O(slots).
    var loadingNames: [String] { slots.compactMap { $0.value.load == nil ? nil : $0.key } }

    /// The names of the refused lists, sorted. O(slots).
    var refusedNames: [String] { slots.compactMap { $0.value.refusal == nil ? nil : $0.key }.sorted() }

    /// Whether `name` is being loaded.
    func isLoading(_ name: String) -> Bool { slots[name]?.load != nil }

    /// The refusal of `name`, if it is refused.
    func refusal(of name: String) -> StoreError? { slots[name]?.refusal }

    // MARK: Arrivals

    /// Hosts `host` under its name. The name must be free: a load ends through
    /// ``loadFinished(_:_:)``, never by hosting over it.
    mutating func host(_ host: ListHost) {
        add(ListSlot(hosting: host), named: host.name)
        hostedCount += 1
    }

    /// Starts loading `name` (a free name).
    mutating func startLoading(_ load: ListLoad) {
        add(ListSlot(loading: load), named: load.name)
        loadingCount += 1
    }

    /// Refuses `name` (a free name) until a restart: its stored data is damaged.
    mutating func refuse(_ name: String, _ error: StoreError) {
        add(ListSlot(refusing: error), named: name)
        refusedCount += 1
    }

    /// A new slot under a free name: a slot never replaces another (a load ends through
    /// ``loadFinished(_:_:)``, a list leaves through its departure).
    private mutating func add(_ slot: ListSlot, named name: String) {
        precondition(slots[name] == nil, "Internal inconsistency in ListTable: a second slot for \"\(name)\"")
        slots[name] = slot
    }

    /// The load of `name` ended; `nil` when no load of it is in flight (the shell's
    /// completion for a list no longer wanted).
    mutating func loadFinished(
        _ name: String, _ result: ListSlot.LoadResult
    ) -> (load: ListLoad, action: ListSlot.LoadAction)? {
        guard var slot = slots[name], let load = slot.load else { return nil }
        let (action, keep) = slot.loadFinished(result)
        loadingCount -= 1
        if keep {
            slots[name] = slot
            if slot.host != nil { hostedCount += 1 } else { refusedCount += 1 }
        } else {
            slots[name] = nil
        }
        return (load, action)
    }

    /// Forgets the load of `name` without an outcome (a storage failure: nothing is
    /// adopted any more, and its requests are never answered). Returns the load.
    mutating func abandonLoad(_ name: String) -> ListLoad? {
        guard let load = slots[name]?.load else { return nil }
        slots[name] = nil
        loadingCount -= 1
        return load
    }

    // MARK: Departures (one method each)

    /// Forgets `list` if nobody needs it any more (``ListHost/isDisposable``): never
    /// stored, never written, no subscriber, not declared. Returns whether it left.
    @discardableResult
    mutating func drop(_ list: ListHost) -> Bool {
        guard list.isDisposable else { return false }
        return remove(list)
    }

    /// Forgets `list`, which the caller found idle (``ListHost/isIdle(now:idleFor:busyElsewhere:)``)
    /// and the store let go of. Returns whether it left.
    @discardableResult
    mutating func unload(_ list: ListHost) -> Bool { remove(list) }

    /// Forgets `list` — only that host: a newer load of the same name stays — because
    /// the store fenced it or its replica broke. Returns whether it left.
    @discardableResult
    mutating func lose(_ list: ListHost) -> Bool { remove(list) }

    private mutating func remove(_ list: ListHost) -> Bool {
        guard slots[list.name]?.host === list else { return false }
        slots[list.name] = nil
        hostedCount -= 1
        return true
    }

    // MARK: Compactions

    /// `list` asked for a snapshot: queued for after this turn's flush, once (one in
    /// flight per list: a second would race the first's install).
    mutating func compactionDue(_ list: ListHost) {
        guard list.compaction == .idle else { return }
        list.compaction = .due
        compactionsDue.append(list.name)
    }

    /// The lists whose compaction starts now (due and still hosted), in name order;
    /// empties the queue.
    mutating func takeDueCompactions() -> [ListHost] {
        let names = compactionsDue
        compactionsDue = []
        return names.sorted().compactMap { name in
            guard let list = self[name], list.compaction == .due else { return nil }
            return list
        }
    }
}
