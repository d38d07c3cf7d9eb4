import FlowSyncCore

/// A list being read from the store on a worker, and the requests waiting for it, in
/// arrival order (bounded by `lists.max_waiting_per_list`). Loop-confined.
final class ListLoad {
    let name: String
    /// When the load started (``MonotonicClock``), for the cold-load latency.
    let startedNanoseconds: UInt64
    /// The connection and the action its machine decided, replayed once the list is
    /// loaded — so everything a client sent for one list is carried out in its order.
    private(set) var waiting: [(connection: Int, action: ConnectionStateMachine.Action)] = []

    init(name: String, startedNanoseconds: UInt64) {
        self.name = name
        self.startedNanoseconds = startedNanoseconds
    }

    /// Queues a request; false when the queue is full.
    func wait(_ connection: Int, _ action: ConnectionStateMachine.Action, limit: Int) -> Bool {
        guard waiting.count < limit else { return false }
        waiting.append((connection, action))
        return true
    }
}
