import Dispatch
import FlowSyncCore

/// The live replica of one list: read it like a FlowKit director, edit it like one, and
/// observe its changes.
///
/// Reads return the current ``ListSnapshot`` (a value). Edits apply to the replica at
/// once — the observers see them before the server answers — and return a
/// ``WriteTicket`` for the server's verdict. Indices in an edit refer to the replica as
/// it is when the edit is made; the server rebases the write by identity over whatever
/// others committed meanwhile.
public final class ListDirector: Sendable {
    /// The list's name.
    public let name: String
    /// The client this replica belongs to (kept alive by the handle).
    public let client: FlowSyncClient

    init(name: String, client: FlowSyncClient) {
        self.name = name
        self.client = client
    }

    private var core: ClientCore { client.core }

    // MARK: Reading

    /// The list now: the server's state plus this client's pending writes.
    public var snapshot: ListSnapshot {
        core.read { state in
            state.snapshot(of: name)
                ?? ListSnapshot(
                    name: name, director: Director(limits: ListReplica.limits),
                    version: nil, pendingWrites: 0, registry: state.registry)
        }
    }

    /// Why the list stopped, if it did (the server refused the subscription, or the
    /// client was closed).
    public var failure: FlowSyncError? { core.read { $0.failures[name] } }

    /// The number of sections.
    public var numberOfSections: Int { snapshot.numberOfSections }
    /// The number of models over all sections.
    public var numberOfModels: Int { snapshot.numberOfModels }
    /// The sections, in order.
    public var sections: [SectionSnapshot] { snapshot.sections }

    /// The section at `index`, for reading and editing (it is addressed by its ID from
    /// then on, so it stays the same section whatever moves); `nil` when `index` is out
    /// of range — the list may have changed under the caller.
    public func section(at index: Int) -> LiveSection? {
        let sections = snapshot.director.sections
        return sections.indices.contains(index) ? LiveSection(director: self, id: sections[index].id) : nil
    }

    /// The section with that ID, if the list has it.
    public func section(id: String) -> LiveSection? {
        snapshot.director.containsSection(id: id) ? LiveSection(director: self, id: id) : nil
    }

    /// The first section, if any.
    public var firstSection: LiveSection? {
        snapshot.director.sections.first.map { LiveSection(director: self, id: $0.id) }
    }
    /// The last section, if any.
    public var lastSection: LiveSection? {
        snapshot.director.sections.last.map { LiveSection(director: self, id: $0.id) }
    }

    /// Waits until the server's first snapshot is in the replica.
    ///
    /// - Throws: The list's failure, or ``FlowSyncError/closed``.
    public func waitUntilLoaded() async throws(FlowSyncError) {
        let result = await withCheckedContinuation {
            (continuation: CheckedContinuation<Result<Void, FlowSyncError>, Never>) in
            let ready = core.update { state -> Result<Void, FlowSyncError>? in
                if let failure = state.failures[name] { return .failure(failure) }
                if state.session.lists[name]?.position != nil { return .success(()) }
                if state.shutDown { return .failure(.closed) }
                state.loadWaiters[name, default: []].append(continuation)
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
        try result.get()
    }

    // MARK: Editing

    /// Runs `body` and sends everything it did as one write (applied atomically; one
    /// visible change) — FlowKit's `reloadData(after:)`.
    ///
    /// - Throws: The first edit that does not apply (a ``FlowSyncError``), or whatever
    ///   `body` throws; nothing is shown or sent then.
    @discardableResult
    public func perform(_ body: (DirectorBatch) throws -> Void) throws -> WriteTicket {
        // Untyped on purpose: a closure literal's thrown type is not inferred from a
        // typed-throws parameter, so a typed signature would make every caller spell
        // out `batch throws(FlowSyncError) in`.
        let base = snapshot.director
        return try submit(Self.operations(on: base, body), withoutNotifying: [], basedOn: base)
    }

    /// What `body` does to a batch working on `base`, as operations.
    private static func operations(on base: Director, _ body: (DirectorBatch) throws -> Void) throws -> [Operation] {
        let batch = DirectorBatch(working: base)
        try body(batch)
        return batch.operations
    }

    /// ``perform(_:)`` whose change is not delivered to `observers`: see
    /// ``submit(_:withoutNotifying:)``.
    @discardableResult
    public func perform(
        withoutNotifying observers: [ObservationToken], _ body: (DirectorBatch) throws -> Void
    ) throws -> WriteTicket {
        let base = snapshot.director
        return try submit(Self.operations(on: base, body), withoutNotifying: observers, basedOn: base)
    }

    /// ``perform(_:)`` for edits the app built on `shown`: the list as its UI shows it,
    /// which may be behind the replica (a change can be queued for the main thread when
    /// the user touches a row). Indices in `body` mean `shown`; the edits are anchored
    /// there by identity and re-expressed in the replica as it is, so "move row 2"
    /// moves the row the user saw at 2, whatever arrived meanwhile. FlowSyncUI's table
    /// and collection directors write every touch this way.
    ///
    /// - Throws: The first edit that does not apply to `shown`, or a conflict with what
    ///   the replica holds now (the row was deleted meanwhile); nothing is shown or sent.
    @discardableResult
    public func perform(on shown: ListSnapshot, _ body: (DirectorBatch) throws -> Void) throws -> WriteTicket {
        let base = shown.director
        return try submit(Self.operations(on: base, body), withoutNotifying: [], basedOn: base)
    }

    /// Sends `operations`, written against `shown` (see ``perform(on:_:)``), as one write.
    @discardableResult
    public func submit(_ operations: [Operation], on shown: ListSnapshot) throws(FlowSyncError) -> WriteTicket {
        try submit(operations, withoutNotifying: [], basedOn: shown.director)
    }

    /// Stops following the list: the server is told (Unsubscribe), observers and
    /// change streams end, unanswered writes fail with ``FlowSyncError/closed`` — with
    /// ``FlowSyncClient/Configuration/persistence`` they stay on disk and are resent when
    /// the list is opened again. ``FlowSyncClient/director(_:)`` opens it again afresh.
    public func unsubscribe() {
        core.unsubscribe(name)
    }

    /// ``perform(_:)`` with a typed error, for the edits below.
    func edit(_ body: (DirectorBatch) throws(FlowSyncError) -> Void) throws(FlowSyncError) -> WriteTicket {
        // The batch (and its view of the list) is gone before the write applies, so the
        // replica is edited in place, not copied.
        let base = snapshot.director
        let operations = try { () throws(FlowSyncError) -> [Operation] in
            let batch = DirectorBatch(working: base)
            try body(batch)
            return batch.operations
        }()
        return try submit(operations, withoutNotifying: [], basedOn: base)
    }

    /// Sends raw operations as one write.
    @discardableResult
    public func submit(_ operations: [Operation]) throws(FlowSyncError) -> WriteTicket {
        try submit(operations, withoutNotifying: [])
    }

    /// Sends raw operations as one write whose local change is not delivered to
    /// `observers` — for an edit the UI made itself and already shows (a drag, a swipe
    /// to delete), as Realm's `withoutNotifying`. The observers' next change starts
    /// from the list with the edit. Later changes caused by it (a rollback if the server
    /// refuses it) are delivered as usual. `changes` streams cannot be skipped.
    @discardableResult
    public func submit(
        _ operations: [Operation], withoutNotifying observers: [ObservationToken]
    ) throws(FlowSyncError) -> WriteTicket {
        try submit(operations, withoutNotifying: observers, basedOn: nil)
    }

    /// Sends `operations`, built by the app on `base` (the list as it read it), as one
    /// write.
    ///
    /// Why `base`: the app reads the list, builds index-based edits, then submits — two
    /// steps, and a batch may arrive between them (a remote insert at the top shifts
    /// every index). The replica then re-expresses the edits by identity, from `base`
    /// to the list as it is (``ListReplica/edit(_:seq:limits:basedOn:)``), so "remove
    /// row 0" still removes the row the app saw there, as the server does with a stale
    /// base version. `nil`: the operations are meant for the list as it is.
    func submit(
        _ operations: [Operation], withoutNotifying observers: [ObservationToken], basedOn base: Director?
    ) throws(FlowSyncError) -> WriteTicket {
        let name = self.name
        let skipped = Set(observers.map(\.id))
        let outcome: Result<WriteTicket, FlowSyncError> = core.input { state in
            do throws(FlowSyncError) {
                let (seq, actions) = try state.session.submit(operations, to: name, basedOn: base)
                let ticket = WriteTicket(listName: name, seq: seq)
                if !skipped.isEmpty { state.silenced[name, default: [:]][seq] = skipped }
                // Registered before the actions run: one of them may already answer it.
                state.tickets[name, default: [:]][seq] = ticket
                return (.success(ticket), actions)
            } catch {
                return (.failure(error), [])
            }
        }
        let ticket = try outcome.get()
        core.waitForDiskIfConfigured()
        return ticket
    }

    /// Inserts a section at `index` (default: at the end).
    @discardableResult
    public func add(section: NewSection, at index: Int? = nil) throws(FlowSyncError) -> WriteTicket {
        try edit { batch throws(FlowSyncError) in try batch.add(section: section, at: index) }
    }

    /// Inserts sections, in order, at `index` (default: at the end).
    @discardableResult
    public func add(sections: [NewSection], at index: Int? = nil) throws(FlowSyncError) -> WriteTicket {
        try edit { batch throws(FlowSyncError) in try batch.add(sections: sections, at: index) }
    }

    /// Adds models at the end of the last section, first creating a section with ID
    /// `newSectionID` when the list has none. (FlowKit's `add(models:)` always makes a new
    /// section: use `add(section:at:)` for that.)
    @discardableResult
    public func add(models: [any FlowModel], newSectionID: String = "default") throws(FlowSyncError) -> WriteTicket {
        try edit { batch throws(FlowSyncError) in try batch.add(models: models, newSectionID: newSectionID) }
    }

    /// Removes the sections at `indexes` (of the list before the removal) with their models.
    @discardableResult
    public func remove(sectionsAt indexes: [Int]) throws(FlowSyncError) -> WriteTicket {
        try edit { batch throws(FlowSyncError) in try batch.remove(sectionsAt: indexes) }
    }

    /// Swaps two sections.
    @discardableResult
    public func swap(sectionAt a: Int, with b: Int) throws(FlowSyncError) -> WriteTicket {
        try edit { batch throws(FlowSyncError) in try batch.swap(sectionAt: a, with: b) }
    }

    /// Removes the section at `index` with its models.
    @discardableResult
    public func remove(sectionAt index: Int) throws(FlowSyncError) -> WriteTicket {
        try edit { batch throws(FlowSyncError) in try batch.remove(sectionAt: index) }
    }

    /// Removes the section with that ID with its models.
    @discardableResult
    public func remove(sectionID: String) throws(FlowSyncError) -> WriteTicket {
        try edit { batch throws(FlowSyncError) in try batch.remove(sectionID: sectionID) }
    }

    /// Moves a section; `to` is its index afterwards.
    @discardableResult
    public func move(sectionAt from: Int, to: Int) throws(FlowSyncError) -> WriteTicket {
        try edit { batch throws(FlowSyncError) in try batch.move(sectionAt: from, to: to) }
    }

    /// Replaces every section; the UI gets the minimal change, not a reload.
    @discardableResult
    public func set(sections: [NewSection]) throws(FlowSyncError) -> WriteTicket {
        try edit { batch throws(FlowSyncError) in try batch.set(sections: sections) }
    }

    /// Removes every section.
    @discardableResult
    public func removeAll() throws(FlowSyncError) -> WriteTicket {
        try edit { batch throws(FlowSyncError) in try batch.removeAll() }
    }

    /// Removes the model with that ID, wherever it is.
    @discardableResult
    public func remove(modelID: String) throws(FlowSyncError) -> WriteTicket {
        try edit { batch throws(FlowSyncError) in try batch.remove(modelID: modelID) }
    }

    /// Replaces the model with the same ID, wherever it is.
    @discardableResult
    public func update(model: some FlowModel) throws(FlowSyncError) -> WriteTicket {
        try edit { batch throws(FlowSyncError) in try batch.update(model: model) }
    }

    // MARK: Observing

    /// Calls `handler` on `queue` (default: the client's callback queue) for every
    /// visible change, in order.
    ///
    /// With `includingCurrent` (the default) the first call brings the observer from an
    /// empty list to the list as it is now (cause ``ListChange/Cause/initial``; none
    /// while the list is unloaded and empty, as the server's first snapshot is then the
    /// first change), and every later change starts where the one before ended. No
    /// change is missed or shown twice in between: the current state is taken and
    /// queued under the same lock every change is delivered under. Without it, calls
    /// start with the next change and the observer must read ``snapshot`` itself, which
    /// races with that change.
    @discardableResult
    public func observe(
        on queue: DispatchQueue? = nil, includingCurrent: Bool = true,
        _ handler: @escaping @Sendable (ListChange) -> Void
    ) -> ObservationToken {
        let queue = queue ?? core.configuration.callbackQueue
        let name = self.name
        let id = core.update { state -> UInt64 in
            let id = state.nextObserverID
            state.nextObserverID += 1
            state.observers[name, default: [:]][id] = ClientCore.Observer(queue: queue, handler: handler)
            if let current = state.startObserving(name, includingCurrent: includingCurrent) {
                queue.async { handler(current) }
            }
            return id
        }
        return ObservationToken(id: id) { [weak core] in
            _ = core?.update { state in
                state.observers[name]?.removeValue(forKey: id)
                state.stopObservingIfUnobserved(name)
            }
        }
    }

    /// Every visible change, in order, starting from the list as it is now:
    /// ``changes(includingCurrent:)`` with `true`.
    public var changes: AsyncThrowingStream<ListChange, any Error> { changes(includingCurrent: true) }

    /// Every visible change, in order. With `includingCurrent` (the default) the first
    /// element brings the reader from an empty list to the list as it is now, as for
    /// ``observe(on:includingCurrent:_:)``. The sequence ends when the client closes,
    /// and throws the list's failure if the server stops it.
    ///
    /// The stream buffers without limit: a reader that stops reading keeps every change.
    public func changes(includingCurrent: Bool = true) -> AsyncThrowingStream<ListChange, any Error> {
        let (stream, continuation) = AsyncThrowingStream<ListChange, any Error>.makeStream()
        let name = self.name
        let id = core.update { state -> UInt64? in
            if let failure = state.failures[name] {
                state.afterUnlock.append {
                    if failure == .closed { continuation.finish() } else { continuation.finish(throwing: failure) }
                }
                return nil
            }
            if state.shutDown {
                state.afterUnlock.append { continuation.finish() }
                return nil
            }
            let id = state.nextObserverID
            state.nextObserverID += 1
            state.streams[name, default: [:]][id] = continuation
            if let current = state.startObserving(name, includingCurrent: includingCurrent) {
                continuation.yield(current)
            }
            return id
        }
        if let id {
            continuation.onTermination = { [weak core] _ in
                _ = core?.update { state in
                    state.streams[name]?.removeValue(forKey: id)
                    state.stopObservingIfUnobserved(name)
                }
            }
        }
        return stream
    }
}
