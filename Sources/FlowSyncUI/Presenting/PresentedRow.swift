import FlowSyncCore

/// A row as the view shows it at one index path: the row, its adapter (by its kind),
/// and its model, decoded once per row version (``ModelCache``).
///
/// What every data source and delegate call of ``TableDirector`` and
/// ``CollectionDirector`` hands to an adapter: resolved from what the view shows at
/// that moment (``ListUpdateApplier/snapshot``, switched stage by stage inside
/// batches), never from the replica, which may be ahead.
public struct PresentedRow<Adapter> {
    /// The row.
    public let row: Row
    /// Where the view shows it.
    public let path: RowPath
    /// The ID of its section.
    public let sectionID: String
    /// The adapter registered for its kind; `nil` when none is (the fallback shows it).
    public let adapter: Adapter?
    /// Its model, decoded by the adapter's registration; `nil` when there is no adapter.
    public let model: Result<Any, ModelDecodingFailure>?

    /// The model as `M`, when there is one of that type.
    public func model<M>(as type: M.Type) -> M? {
        guard case .success(let value)? = model else { return nil }
        return value as? M
    }

    /// The row's identity, for an action that runs later (``RowHandle``).
    public var handle: RowHandle {
        RowHandle(rowID: row.id, sectionID: sectionID, contentHash: row.contentHash, pathWhenTouched: path)
    }
}
