/// A ready connection's subscriptions: each list's ``SubscriptionFlow`` in a **slot**
/// that keeps its index for the subscription's whole life, and the slot of each list by
/// name. Part of ``ConnectionStateMachine/Ready`` (the machine keeps holding its state).
///
/// Why slots (issue #20, "no dictionary lookup per subscriber per batch"): the fan-out
/// visits every subscriber of a list once per batch. The list keeps, per subscriber, the
/// connection and this slot (``ListHost/Subscriber``), so a batch reaches the flow by an
/// array index instead of hashing the list's name in every subscriber's dictionary. The
/// name index is for everything else (subscribe, unsubscribe, a catch-up, a refresh).
///
/// A freed slot is reused by the next subscription of the connection, so the shell must
/// drop a slot's holders (the list's subscriber entry) in the same step as the
/// subscription ends — which it does: an unsubscribe, a refresh's dropped lists and a
/// close all leave their lists before anything else runs. Debug builds check, on every
/// use of a slot, that it still holds the list the caller means.
struct SubscriptionTable {
    /// The slot of each subscribed list.
    private var slotByName: [String: Int] = [:]
    /// Flows by slot; `nil` in a free slot.
    private var flows: [SubscriptionFlow?] = []
    /// The list of each slot (`nil` when free): for ``names`` in slot order and the
    /// debug check of ``updateFlow(inSlot:of:_:)``.
    private var slotNames: [String?] = []
    /// Free slots, reused last-freed first.
    private var freeSlots: [Int] = []

    /// Subscriptions held.
    var count: Int { slotByName.count }

    var isEmpty: Bool { slotByName.isEmpty }

    /// The subscribed lists (no particular order).
    var names: [String] { Array(slotByName.keys) }

    /// The slot of `list`'s subscription, if subscribed.
    func slot(of list: String) -> Int? { slotByName[list] }

    /// The flow of `list`'s subscription; setting `nil` ends it and frees its slot,
    /// setting a flow for a list not subscribed starts a subscription in a free slot.
    subscript(list: String) -> SubscriptionFlow? {
        get { slotByName[list].flatMap { flows[$0] } }
        set {
            if let slot = slotByName[list] {
                if let newValue {
                    flows[slot] = newValue
                } else {
                    free(slot, of: list)
                }
            } else if let newValue {
                insert(newValue, for: list)
            }
        }
    }

    /// Starts the subscription to `list` with `flow`; returns its slot.
    /// - Precondition: `list` is not subscribed.
    @discardableResult
    mutating func insert(_ flow: SubscriptionFlow, for list: String) -> Int {
        precondition(slotByName[list] == nil, "Internal inconsistency in SubscriptionTable: \"\(list)\" inserted twice")
        let slot: Int
        if let reused = freeSlots.popLast() {
            slot = reused
            flows[slot] = flow
            slotNames[slot] = list
        } else {
            slot = flows.count
            flows.append(flow)
            slotNames.append(list)
        }
        slotByName[list] = slot
        return slot
    }

    /// Ends the subscription to `list`; returns its flow (`nil`: not subscribed).
    @discardableResult
    mutating func removeValue(forKey list: String) -> SubscriptionFlow? {
        guard let slot = slotByName[list] else { return nil }
        let flow = flows[slot]
        free(slot, of: list)
        return flow
    }

    /// Changes the flow in `slot` in place: the fan-out's path, an index and no hash.
    /// - Precondition: `slot` holds a subscription (checked); in debug builds, the one
    ///   to `list`.
    /// - Complexity: O(1).
    @inline(__always)
    mutating func updateFlow<R>(inSlot slot: Int, of list: String, _ body: (inout SubscriptionFlow) -> R) -> R {
        assert(
            slotNames[slot] == list,
            "Internal inconsistency in SubscriptionTable: slot \(slot) holds \(slotNames[slot] ?? "nothing"), not \"\(list)\""
        )
        guard flows[slot] != nil else {
            preconditionFailure("Internal inconsistency in SubscriptionTable: a free slot used (\(slot))")
        }
        return body(&flows[slot]!)
    }

    /// The lists whose flow satisfies `predicate`.
    func names(where predicate: (SubscriptionFlow) -> Bool) -> [String] {
        slotByName.compactMap { name, slot in flows[slot].map(predicate) == true ? name : nil }
    }

    private mutating func free(_ slot: Int, of list: String) {
        slotByName[list] = nil
        flows[slot] = nil
        slotNames[slot] = nil
        if slot == flows.count - 1 {
            // The last slot: shrink instead (an idle connection keeps no tail of holes).
            flows.removeLast()
            slotNames.removeLast()
            // Free slots now past the end go too.
            while let last = flows.indices.last, flows[last] == nil, let k = freeSlots.firstIndex(of: last) {
                freeSlots.remove(at: k)
                flows.removeLast()
                slotNames.removeLast()
            }
        } else {
            freeSlots.append(slot)
        }
    }

    #if DEBUG
    /// Debug-only: the three indexes agree.
    func checkInvariants() {
        precondition(flows.count == slotNames.count)
        precondition(Set(freeSlots).count == freeSlots.count)
        for (name, slot) in slotByName {
            precondition(slotNames[slot] == name && flows[slot] != nil)
        }
        for slot in freeSlots { precondition(slot < flows.count && flows[slot] == nil && slotNames[slot] == nil) }
        precondition(slotByName.count + freeSlots.count == flows.count)
    }
    #endif
}
