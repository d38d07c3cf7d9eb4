import FlowSyncCore

/// A list as the app sees it at one moment: the server's state at ``version`` with the
/// app's own pending writes applied on top (optimistically).
///
/// A value: reading it never races with the network. ``ListDirector/snapshot`` gives
/// the current one; every ``ListChange`` carries the one right after the change.
public struct ListSnapshot: Sendable, CustomStringConvertible {
    /// The list's name.
    public let name: String
    /// The whole state, including pending writes.
    public let director: Director
    /// The server version the state is based on; `nil` until the first snapshot arrived.
    public let version: ListVersion?
    /// Writes shown here that the server has not committed yet.
    public let pendingWrites: Int
    /// True while the list shows what a previous launch stored on disk
    /// (``PersistenceOptions``) and the server has not answered the resume yet: the
    /// list may be behind the server. A UI may say "last updated …" meanwhile.
    public let isFromDisk: Bool
    let registry: ModelRegistry

    init(
        name: String, director: Director, version: ListVersion?, pendingWrites: Int, isFromDisk: Bool = false,
        registry: ModelRegistry
    ) {
        self.name = name
        self.director = director
        self.version = version
        self.pendingWrites = pendingWrites
        self.isFromDisk = isFromDisk
        self.registry = registry
    }

    /// A snapshot that no client made, for tests, previews and SwiftUI placeholders.
    /// Typed reads (``model(id:as:)``) work; the untyped ``SectionSnapshot/models``
    /// gives `nil` for every row (no types are registered).
    public init(name: String, director: Director = Director(), version: ListVersion? = nil, pendingWrites: Int = 0) {
        self.init(
            name: name, director: director, version: version, pendingWrites: pendingWrites, registry: ModelRegistry())
    }

    /// This snapshot with another state of the list: the same name, version, pending
    /// count, origin and registered model types. For a UI that shows the list with an
    /// edit of its own on top (a row the user dragged, FlowSyncUI's
    /// `ListUpdateApplier.beginViewEdit`), so typed reads keep working on it.
    public func replacing(director: Director) -> ListSnapshot {
        ListSnapshot(
            name: name, director: director, version: version, pendingWrites: pendingWrites,
            isFromDisk: isFromDisk, registry: registry)
    }

    /// True once the server's first snapshot of the list arrived.
    public var isLoaded: Bool { version != nil }
    /// The number of sections.
    public var numberOfSections: Int { director.sections.count }
    /// The number of rows over all sections.
    public var numberOfModels: Int { director.rowCount }
    /// The sections, in order.
    public var sections: [SectionSnapshot] {
        director.sections.map { SectionSnapshot(section: $0, registry: registry) }
    }
    /// The section at `index` (which must be in range, as for an array).
    public func section(at index: Int) -> SectionSnapshot {
        SectionSnapshot(section: director.sections[index], registry: registry)
    }
    /// The section with that ID, if any.
    ///
    /// - Complexity: O(1).
    public func section(id: String) -> SectionSnapshot? {
        director.section(id: id).map { SectionSnapshot(section: $0, registry: registry) }
    }
    /// The first section, if any.
    public var firstSection: SectionSnapshot? {
        director.sections.first.map { SectionSnapshot(section: $0, registry: registry) }
    }
    /// The last section, if any.
    public var lastSection: SectionSnapshot? {
        director.sections.last.map { SectionSnapshot(section: $0, registry: registry) }
    }
    /// Where the row with that ID is, if anywhere.
    public func indexPath(ofModel id: String) -> RowPath? { director.rowPath(id: id) }

    /// The model with that row ID as `M`, or `nil` when absent or of another kind.
    public func model<M: FlowModel>(id: String, as type: M.Type) throws(FlowSyncError) -> M? {
        guard let path = director.rowPath(id: id) else { return nil }
        let row = director[path]
        guard row.kind == M.flowKind else { return nil }
        return try ModelCoding.decode(M.self, from: row.payload)
    }

    public var description: String { "\(name)@\(version.map(String.init(describing:)) ?? "unloaded") \(director)" }
}
