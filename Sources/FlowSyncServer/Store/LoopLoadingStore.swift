import FlowSyncCore

/// A store that loads lists on the loop thread, asynchronously, one at a time on first
/// use (cluster mode: a claim, then the log read from PostgreSQL).
public protocol LoopLoadingStore: ListStore {
    /// Loads `name` for this node; `completion` runs once on the loop thread with the
    /// list, `nil` when the store holds nothing under that name and `create` is false,
    /// or an error (the list is refused now and tried again at its next use).
    func load(_ name: String, create: Bool, completion: @escaping (Result<RecoveredList?, StoreError>) -> Void)

    /// Set by the server: called on the loop thread when the store fails for good
    /// (PostgreSQL unreachable for longer than the lease). The server takes the
    /// storage-failure path.
    var onFailure: ((StoreError) -> Void)? { get set }
}
