import FlowSyncCore

/// One section of a live list, addressed by its ID: read its models, edit its rows.
///
/// Reads look at the list as it is at the moment of the call; edits are writes of the
/// list (each one its own ``WriteTicket``; group several with ``ListDirector/perform(_:)``).
public struct LiveSection: Sendable, Identifiable {
    /// The list.
    public let director: ListDirector
    /// The section's ID.
    public let id: String

    /// The section now, `nil` once it was removed.
    public var snapshot: SectionSnapshot? { director.snapshot.section(id: id) }
    /// The number of models now.
    public var count: Int { snapshot?.count ?? 0 }

    /// The models of kind `M`, decoded, in order.
    public func models<M: FlowModel>(as type: M.Type) throws(FlowSyncError) -> [M] {
        try snapshot?.models(as: type) ?? []
    }

    /// The header decoded from JSON, `nil` when none.
    public func header<T: Decodable>(as type: T.Type) throws(FlowSyncError) -> T? {
        try snapshot?.header(as: type)
    }

    private func edit(_ body: (BatchSection) throws(FlowSyncError) -> Void) throws(FlowSyncError) -> WriteTicket {
        let id = self.id
        return try director.edit { batch throws(FlowSyncError) in try body(batch.section(id)) }
    }

    /// Inserts a model at `index` (default: at the end).
    @discardableResult
    public func add(model: some FlowModel, at index: Int? = nil) throws(FlowSyncError) -> WriteTicket {
        try edit { section throws(FlowSyncError) in try section.add(model: model, at: index) }
    }

    /// Inserts models, in order, at `index` (default: at the end). Kinds may be mixed.
    @discardableResult
    public func add(models: [any FlowModel], at index: Int? = nil) throws(FlowSyncError) -> WriteTicket {
        try edit { section throws(FlowSyncError) in try section.add(models: models, at: index) }
    }

    /// Removes the model at `index`.
    @discardableResult
    public func remove(at index: Int) throws(FlowSyncError) -> WriteTicket {
        try edit { section throws(FlowSyncError) in try section.remove(at: index) }
    }

    /// Removes the models at `indexes` (of the section before the removal).
    @discardableResult
    public func remove(atIndexes indexes: [Int]) throws(FlowSyncError) -> WriteTicket {
        try edit { section throws(FlowSyncError) in try section.remove(at: indexes) }
    }

    /// Removes every model of the section (the section stays).
    @discardableResult
    public func removeAll() throws(FlowSyncError) -> WriteTicket {
        try edit { section throws(FlowSyncError) in try section.removeAll() }
    }

    /// Swaps two models of the section.
    @discardableResult
    public func swap(at a: Int, with b: Int) throws(FlowSyncError) -> WriteTicket {
        try edit { section throws(FlowSyncError) in try section.swap(at: a, with: b) }
    }

    /// Moves a model within the section; `to` is its index afterwards.
    @discardableResult
    public func move(from: Int, to: Int) throws(FlowSyncError) -> WriteTicket {
        try edit { section throws(FlowSyncError) in try section.move(from: from, to: to) }
    }

    /// Moves the model at `from` to another section, at `index` there.
    @discardableResult
    public func move(from: Int, toSection destination: String, at index: Int) throws(FlowSyncError) -> WriteTicket {
        try edit { section throws(FlowSyncError) in try section.move(from: from, toSection: destination, at: index) }
    }

    /// Replaces every model; the UI gets the minimal change (moves, updates).
    @discardableResult
    public func set(models: [any FlowModel]) throws(FlowSyncError) -> WriteTicket {
        try edit { section throws(FlowSyncError) in try section.set(models: models) }
    }

    /// Replaces the model with the same ID.
    @discardableResult
    public func update(model: some FlowModel) throws(FlowSyncError) -> WriteTicket {
        try edit { section throws(FlowSyncError) in try section.update(model: model) }
    }

    /// Sets the header (JSON), or removes it with `nil`.
    @discardableResult
    public func set(header: (any Encodable & Sendable)?) throws(FlowSyncError) -> WriteTicket {
        try edit { section throws(FlowSyncError) in try section.set(header: header) }
    }

    /// Sets the footer (JSON), or removes it with `nil`.
    @discardableResult
    public func set(footer: (any Encodable & Sendable)?) throws(FlowSyncError) -> WriteTicket {
        try edit { section throws(FlowSyncError) in try section.set(footer: footer) }
    }
}
