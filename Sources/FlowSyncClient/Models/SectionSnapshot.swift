import FlowSyncCore

/// One section of a list at one moment: its ID, header, footer and rows, with typed
/// access to the models. A value: it never changes under the reader.
public struct SectionSnapshot: Sendable, Identifiable, CustomStringConvertible {
    /// The section as stored.
    public let section: Section
    let registry: ModelRegistry

    init(section: Section, registry: ModelRegistry) {
        self.section = section
        self.registry = registry
    }

    /// The section's ID.
    public var id: String { section.id }
    /// The rows, in order (the section's own storage, not a copy; `Array(rows)` for
    /// an array).
    public var rows: RowList { section.rows }
    /// The number of rows (models of every kind).
    public var count: Int { section.rows.count }
    /// The raw header bytes, `nil` when none.
    public var header: [UInt8]? { section.header }
    /// The raw footer bytes, `nil` when none.
    public var footer: [UInt8]? { section.footer }

    /// The rows of kind `M.flowKind`, decoded, in order; rows of other kinds are skipped.
    ///
    /// - Throws: ``FlowSyncError/modelCoding(_:)`` when a row of that kind does not decode.
    /// - Complexity: O(n) decodes.
    public func models<M: FlowModel>(as type: M.Type) throws(FlowSyncError) -> [M] {
        var result: [M] = []
        for row in section.rows where row.kind == M.flowKind {
            result.append(try ModelCoding.decode(M.self, from: row.payload))
        }
        return result
    }

    /// The model at `index` as `M`, or `nil` when that row is of another kind.
    public func model<M: FlowModel>(at index: Int, as type: M.Type) throws(FlowSyncError) -> M? {
        let row = section.rows[index]
        guard row.kind == M.flowKind else { return nil }
        return try ModelCoding.decode(M.self, from: row.payload)
    }

    /// Every row as its registered type (``FlowSyncClient/register(_:)``), in order — for
    /// sections that mix kinds. A row whose kind is not registered is `nil`.
    public var models: [(any FlowModel)?] {
        get throws(FlowSyncError) {
            var result: [(any FlowModel)?] = []
            result.reserveCapacity(section.rows.count)
            for row in section.rows { result.append(try registry.model(of: row)) }
            return result
        }
    }

    /// The header decoded from JSON as `T`, `nil` when there is none.
    public func header<T: Decodable>(as type: T.Type) throws(FlowSyncError) -> T? {
        guard let header = section.header else { return nil }
        return try ModelCoding.decode(T.self, from: header)
    }

    /// The footer decoded from JSON as `T`, `nil` when there is none.
    public func footer<T: Decodable>(as type: T.Type) throws(FlowSyncError) -> T? {
        guard let footer = section.footer else { return nil }
        return try ModelCoding.decode(T.self, from: footer)
    }

    public var description: String { section.description }
}
