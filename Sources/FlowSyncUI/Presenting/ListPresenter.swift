import Dispatch
import FlowSyncClient
import FlowSyncCore

/// The platform-neutral heart of ``TableDirector`` and ``CollectionDirector``: every
/// decision they make, with no UIKit in it, so all of it is tested on Linux.
///
/// - **What the view shows** is the ``applier``'s snapshot: counts, rows and headers are
///   read from it, never from the replica, which may be ahead (a change is queued for
///   the main thread). Inside a batch it is the batch's stage.
/// - **Routing by kind**: a row goes to the adapter registered for its ``Row/kind``
///   (``AdapterRegistry``); a kind nobody registered gets no adapter, and the director
///   shows its fallback.
/// - **Decode once per row version**: ``item(at:)`` decodes a row's model the first
///   time and again only when the row's content changes (``ModelCache``).
/// - **Which row an event means**: ``item(at:)`` at the moment of the event; a
///   ``RowHandle`` for an action that runs later (a swipe action), resolved again with
///   ``path(of:)`` when it runs.
/// - **Writes from touches** go through the list by identity: ``remove(_:)`` by row
///   ID, ``viewDidMoveRow(from:to:)`` (a drag the view already shows) as a view edit
///   plus a write built on what the view showed (see `ListUpdateApplier+ViewEdits.swift`).
///
/// Not thread-safe: create it and call it on one thread — for UIKit, the main thread —
/// the same one its list is observed on (``follow(on:)``).
public final class ListPresenter<Target: ListUpdateTarget, Adapter> {
    /// The list written to by touches; `nil` for a presenter fed by hand (previews, tests).
    public let list: ListDirector?
    /// Applies each change to the view; its snapshot is what the view shows.
    public let applier: ListUpdateApplier<Target>
    /// The adapters, by row kind.
    public private(set) var adapters = AdapterRegistry<Adapter>()
    /// Decoded row models.
    public let models: ModelCache
    /// Decoded header and footer values (keys `"h:" + sectionID`, `"f:" + sectionID`).
    public let supplementaryValues: ModelCache
    /// Called once per row version that does not decode (the row shows the fallback).
    public var onDecodingFailure: ((ModelDecodingFailure) -> Void)?
    private var observation: ObservationToken?

    /// A presenter of `list` (or of changes fed by hand when `nil`) on `target`.
    ///
    /// - Parameter cacheCapacity: Decoded models kept per cache generation
    ///   (``ModelCache``).
    public init(list: ListDirector?, target: Target, maximumAnimatedChanges: Int = 2_000, cacheCapacity: Int = 1_024) {
        self.list = list
        applier = ListUpdateApplier(
            target: target, snapshot: ListSnapshot(name: list?.name ?? ""),
            maximumAnimatedChanges: maximumAnimatedChanges)
        models = ModelCache(capacity: cacheCapacity)
        supplementaryValues = ModelCache(capacity: 256)
    }

    deinit {
        observation?.cancel()
    }

    // MARK: Following the list

    /// Follows ``list`` from its current state: every change is applied on `queue`, the
    /// thread this presenter is used on (`.main` for UIKit). The first change brings
    /// the view from empty to the list as it is now. Idempotent.
    public func follow(on queue: DispatchQueue) {
        guard observation == nil, let list else { return }
        let sink = ChangeSink()
        sink.apply = { [weak self] change in self?.apply(change) }
        observation = list.observe(on: queue, includingCurrent: true) { change in
            sink.apply?(change)
        }
    }

    /// Stops following the list (the view keeps what it shows).
    public func stopFollowing() {
        observation?.cancel()
        observation = nil
    }

    /// Shows `change` (what ``follow(on:)`` does with each change).
    @discardableResult
    public func apply(_ change: ListChange) -> ListUpdateApplier<Target>.Outcome {
        applier.apply(change)
    }

    // MARK: Adapters

    /// Shows rows of `kind` with `adapter`, their models decoded by `decode`. Forgets
    /// the models decoded so far (a new decoder may read them otherwise).
    public func register(_ adapter: Adapter, forKind kind: String, decode: @escaping (Row) throws -> Any) {
        adapters.register(adapter, forKind: kind, decode: decode)
        models.removeAll()
    }

    // MARK: What the view shows

    /// The list as the view shows it.
    public var snapshot: ListSnapshot { applier.snapshot }
    /// The number of sections the view shows.
    public var numberOfSections: Int { applier.snapshot.director.sections.count }

    /// The number of rows of section `index`; 0 for a section the view does not show
    /// (UIKit never asks for one, but a count is never a trap).
    public func numberOfRows(inSection index: Int) -> Int {
        let sections = applier.snapshot.director.sections
        return sections.indices.contains(index) ? sections[index].rows.count : 0
    }

    /// The section the view shows at `index`, if any.
    public func section(at index: Int) -> Section? {
        let sections = applier.snapshot.director.sections
        return sections.indices.contains(index) ? sections[index] : nil
    }

    /// The row the view shows at `path`, if any.
    public func row(at path: RowPath) -> Row? {
        guard let section = section(at: path.section), section.rows.indices.contains(path.row) else { return nil }
        return section.rows[path.row]
    }

    /// The row at `path` with its adapter and model: what an event at that index path
    /// means now. `nil` when the view shows no row there.
    ///
    /// - Complexity: O(1) plus, once per row version, a decode.
    public func item(at path: RowPath) -> PresentedRow<Adapter>? {
        guard let section = section(at: path.section), section.rows.indices.contains(path.row) else { return nil }
        let row = section.rows[path.row]
        guard let registration = adapters.registration(forKind: row.kind) else {
            return PresentedRow(row: row, path: path, sectionID: section.id, adapter: nil, model: nil)
        }
        let decoded = models.value(for: row, decode: registration.decode)
        // Reported once per row version (a cached failure is not reported again).
        if case .failure(let failure) = decoded, models.lastLookupDecoded { onDecodingFailure?(failure) }
        return PresentedRow(row: row, path: path, sectionID: section.id, adapter: registration.adapter, model: decoded)
    }

    /// Where the row `handle` names is now, in what the view shows; `nil` when it is
    /// gone.
    ///
    /// - Complexity: O(1) (the list's ID index).
    public func path(of handle: RowHandle) -> RowPath? {
        applier.snapshot.director.rowPath(id: handle.rowID)
    }

    /// The header (or footer) of section `index` decoded by `decode`, once per header
    /// version; `nil` when the section has none or is not shown.
    public func supplementaryValue(
        _ element: SupplementaryUpdate.Element, inSection index: Int,
        decode: @escaping ([UInt8]) throws -> Any
    ) -> Result<Any, ModelDecodingFailure>? {
        guard let section = section(at: index),
            let bytes = element == .header ? section.header : section.footer
        else { return nil }
        let prefix = element == .header ? "h:" : "f:"
        // A row stands in for the header so the cache keys it by its bytes' hash.
        let stand = Row(id: section.id, kind: prefix, payload: bytes)
        return supplementaryValues.value(for: stand, key: prefix + section.id) { row in try decode(row.payload) }
    }

    /// A section's header or footer as a plain title: a JSON string (`"Friends"`), or a
    /// JSON object's `"title"` string (`{"title":"Friends"}`); `nil` otherwise. What
    /// the directors show when no header/footer adapter is registered.
    public func title(_ element: SupplementaryUpdate.Element, inSection index: Int) -> String? {
        guard
            case .success(let value)? = supplementaryValue(element, inSection: index, decode: SupplementaryTitle.decode)
        else {
            return nil
        }
        return (value as? SupplementaryTitle)?.text
    }
}

/// What the (Sendable) observer closure holds: a closure to the presenter, weakly. The
/// presenter is touched only on the queue it follows on, the thread it is used on, and
/// that is where the observer runs; the box only carries it there.
private final class ChangeSink: @unchecked Sendable {
    var apply: ((ListChange) -> Void)?
}
