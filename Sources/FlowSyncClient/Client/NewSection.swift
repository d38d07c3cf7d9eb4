import FlowSyncCore

/// A section to add: its ID, optional header and footer, and its models — the
/// counterpart of a FlowKit `Section`. Encoded when the edit is made.
public struct NewSection: Sendable {
    /// The section's ID, unique in the list.
    public var id: String
    /// The header, encoded as JSON; `nil` for none.
    public var header: (any Encodable & Sendable)?
    /// The footer, encoded as JSON; `nil` for none.
    public var footer: (any Encodable & Sendable)?
    /// The models, in order; kinds may be mixed.
    public var models: [any FlowModel]

    /// Creates a section.
    public init(
        id: String, header: (any Encodable & Sendable)? = nil, footer: (any Encodable & Sendable)? = nil,
        models: [any FlowModel] = []
    ) {
        self.id = id
        self.header = header
        self.footer = footer
        self.models = models
    }

    /// The section as stored.
    func encoded() throws(FlowSyncError) -> Section {
        var rows: [Row] = []
        rows.reserveCapacity(models.count)
        for model in models { rows.append(try ModelCoding.row(any: model)) }
        return Section(id: id, header: try header.map(Self.encode), footer: try footer.map(Self.encode), rows: rows)
    }

    static func encode(_ value: any Encodable & Sendable) throws(FlowSyncError) -> [UInt8] {
        func open<T: Encodable>(_ v: T) throws(FlowSyncError) -> [UInt8] { try ModelCoding.encode(v) }
        return try open(value)
    }
}
