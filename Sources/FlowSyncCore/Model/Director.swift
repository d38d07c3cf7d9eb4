/// The authoritative state of one list: ordered sections of ordered rows, as FlowKit's
/// `TableDirector` holds them — but as a pure value that can live on a server.
///
/// Invariants (checked by ``checkInvariants()`` in tests):
/// - section IDs are unique; row IDs are unique across the whole director;
/// - ``digest`` equals ``StateDigest/compute(_:)`` of ``sections``;
/// - ``rowCount`` is the number of rows.
///
/// Edit it with ``apply(_:)`` (an atomic group of ``Operation``s that also returns the
/// UIKit-ready ``Changeset``) or the FlowKit-style conveniences in
/// `Director+Editing.swift`.
///
/// Cost model: edits mutate the storage in place (copy-on-write is never triggered by
/// the director itself). A section's rows are a ``RowList`` (chunks of ≤ 256 rows with
/// an ID index), so inserting, removing or moving one row in a section of n rows costs
/// O(log n) plus a move inside one chunk, whatever the position. Looking a section up
/// by ID is a linear scan over *sections* (there are few); looking a row up by ID is a
/// hash lookup for its section, then the section's ID index: O(256 + log n).
public struct Director: Sendable {
    /// The sections, in display order.
    public internal(set) var sections: [Section]
    /// The limits every mutation is checked against.
    public var limits: DirectorLimits
    /// The digest of the current state, kept current by every edit.
    public internal(set) var digest: StateDigest
    /// The number of rows over all sections.
    public internal(set) var rowCount: Int

    /// Row ID → ID of the section that holds it: uniqueness checks and lookups by ID.
    /// Sharded, so that an edit made while a copy of this director is held (a client's
    /// last delivered snapshot, a data source) copies one shard, not the whole map.
    internal var rowSectionIDs: ShardedDictionary<String, String>
    /// Section IDs present, for O(1) uniqueness checks.
    @usableFromInline internal var sectionIDs: Set<String>

    /// An empty director.
    public init(limits: DirectorLimits = .default) {
        self.sections = []
        self.limits = limits
        self.digest = StateDigest.compute([])
        self.rowCount = 0
        self.rowSectionIDs = [:]
        self.sectionIDs = []
    }

    /// A director holding `sections`, validated like a `setSections` mutation.
    /// - Throws: ``MutationError`` when IDs repeat or limits are exceeded.
    /// - Complexity: O(total rows).
    public init(sections: [Section], limits: DirectorLimits = .default) throws(MutationError) {
        self.init(limits: limits)
        if !sections.isEmpty {
            _ = try apply([.setSections(sections)])
        }
    }

    /// The index of the section with `id`, if any.
    /// - Complexity: O(number of sections).
    public func sectionIndex(id: String) -> Int? {
        guard sectionIDs.contains(id) else { return nil }
        return sections.firstIndex { $0.id == id }
    }

    /// The section with `id`, if any.
    public func section(id: String) -> Section? {
        sectionIndex(id: id).map { sections[$0] }
    }

    /// Where the row with `id` is, if anywhere.
    /// - Complexity: O(sections) to find its section, then O(256 + log n) in the
    ///   section's ID index (``RowList/firstIndex(ofID:)``).
    public func rowPath(id: String) -> RowPath? {
        guard let sid = rowSectionIDs[id], let s = sectionIndex(id: sid) else { return nil }
        guard let r = sections[s].rows.firstIndex(ofID: id) else { return nil }
        return RowPath(section: s, row: r)
    }

    /// The index a section reference names in this state, or `nil` when it names none.
    /// - Complexity: O(number of sections).
    public func index(of ref: SectionRef) -> Int? {
        try? resolve(ref, op: 0)
    }

    /// The path a row reference names in this state, or `nil` when it names none.
    /// - Complexity: that of ``rowPath(id:)`` or ``index(of:)``.
    public func path(of ref: RowRef) -> RowPath? {
        try? resolve(ref, op: 0)
    }

    /// The row at `path`.
    /// - Precondition: `path` is valid.
    public subscript(path: RowPath) -> Row {
        sections[path.section].rows[path.row]
    }

    /// True when a section with this ID exists.
    public func containsSection(id: String) -> Bool { sectionIDs.contains(id) }

    /// True when a row with this ID exists (in any section).
    public func containsRow(id: String) -> Bool { rowSectionIDs[id] != nil }

    /// Rows per section, in order: what a UIKit data source reports.
    // A closure, not the key path `\.rows.count`: a two-component key path is projected
    // generically per element, and this runs for every changeset stage applied.
    public var rowCounts: [Int] { sections.map { $0.rows.count } }

    /// Verifies every invariant from scratch and traps on a violation. For tests and
    /// debug checks; O(total rows).
    public func checkInvariants() {
        var seenSections = Set<String>()
        var seenRows = [String: String]()
        var rows = 0
        for section in sections {
            precondition(
                seenSections.insert(section.id).inserted,
                "Internal inconsistency in Director: duplicate section \(section.id)")
            precondition(
                section.rows.hasIDIndex, "Internal inconsistency in Director: section \(section.id) has no row ID index"
            )
            section.rows.checkInvariants()
            for row in section.rows {
                precondition(
                    seenRows.updateValue(section.id, forKey: row.id) == nil,
                    "Internal inconsistency in Director: duplicate row \(row.id)")
                rows += 1
            }
        }
        precondition(seenSections == sectionIDs, "Internal inconsistency in Director: section ID set out of date")
        precondition(
            seenRows.count == rowSectionIDs.count,
            "Internal inconsistency in Director: row index holds \(rowSectionIDs.count) IDs for \(seenRows.count) rows")
        for (row, section) in seenRows {
            precondition(
                rowSectionIDs[row] == section,
                "Internal inconsistency in Director: row index out of date for row \(row)")
        }
        precondition(rows == rowCount, "Internal inconsistency in Director: row count \(rowCount) != \(rows)")
        precondition(StateDigest.compute(sections) == digest, "Internal inconsistency in Director: digest out of date")
    }
}

extension Director: Equatable {
    /// Two directors are equal when their sections (IDs, headers, footers, rows and
    /// order) are equal. Limits are configuration, not state, and are not compared.
    public static func == (lhs: Director, rhs: Director) -> Bool {
        lhs.digest == rhs.digest && lhs.sections == rhs.sections
    }
}

extension Director: CustomStringConvertible {
    public var description: String {
        "Director(\(sections.count) sections, \(rowCount) rows, digest \(digest))"
    }
}
