/// An ordered group of rows with an optional header and footer, as in FlowKit's
/// `TableSection`.
///
/// A section's `id` is unique within its director and never changes; header and
/// footer are opaque payloads (`nil` means "none"). A header or footer change is its
/// own change kind in a ``Changeset`` (a supplementary update), not a section reload,
/// so a UI can refresh a header without reloading every row.
public struct Section: Hashable, Sendable, CustomStringConvertible {
    /// Stable identity, unique within the director.
    public let id: String
    /// Header payload, or `nil` for no header.
    public var header: [UInt8]?
    /// Footer payload, or `nil` for no footer.
    public var footer: [UInt8]?
    /// The rows, in display order. Mutate them through ``Director`` so row IDs stay
    /// unique and the digest stays current. A ``RowList``: edits at any position cost
    /// O(log n), not a move of the tail (see its documentation for the exact bounds).
    public internal(set) var rows: RowList

    /// Creates a section.
    /// - Complexity: O(rows).
    public init(id: String, header: [UInt8]? = nil, footer: [UInt8]? = nil, rows: [Row] = []) {
        self.id = id
        self.header = header
        self.footer = footer
        self.rows = RowList(rows)
    }

    /// Creates a section sharing the storage of `rows` (no copy).
    public init(id: String, header: [UInt8]? = nil, footer: [UInt8]? = nil, rows: RowList) {
        self.id = id
        self.header = header
        self.footer = footer
        self.rows = rows
    }

    /// The number of rows.
    @inlinable public var count: Int { rows.count }

    public var description: String {
        "Section(\(id), \(rows.count) rows\(header == nil ? "" : ", header")\(footer == nil ? "" : ", footer"))"
    }
}
