/// Names a section: by its stable ID, or by its index in the director's current state.
///
/// IDs are preferred for concurrent editing (an ID needs no transform when other
/// writers insert or remove sections); indices exist for FlowKit parity.
public enum SectionRef: Hashable, Sendable, CustomStringConvertible {
    case id(String)
    case index(Int)

    public var description: String {
        switch self {
        case .id(let id): return "section \(id)"
        case .index(let i): return "section #\(i)"
        }
    }
}

/// Names a row: by its stable ID (unique in the director), or by its index within a
/// section in the current state.
public enum RowRef: Hashable, Sendable, CustomStringConvertible {
    case id(String)
    case index(Int, in: SectionRef)

    public var description: String {
        switch self {
        case .id(let id): return "row \(id)"
        case .index(let i, let section): return "row #\(i) of \(section)"
        }
    }
}

/// One edit of a director, as a value (so it can be encoded, sent, transformed and
/// replayed). The cases mirror FlowKit / Owl's director and section API; the
/// convenience methods in `Director+Editing.swift` build them.
///
/// All indices are resolved against the state *just before* the operation, and a
/// destination index means the position *after* the element was taken out (Swift
/// `Array` remove-then-insert semantics, the same as UIKit's `moveRow(at:to:)`).
public enum Operation: Hashable, Sendable {
    // MARK: Sections

    /// Replaces every section (FlowKit `set(sections:)`). Changes are found by diffing.
    case setSections([Section])
    /// Inserts sections at `index` (0…count), in order (`add(section:at:)`, `add(sections:at:)`).
    case insertSections([Section], at: Int)
    /// Removes sections; every reference is resolved before any is removed
    /// (`remove(sectionAt:)`, `remove(sectionsAt:)`).
    case removeSections([SectionRef])
    /// Removes every section (`removeAll()`).
    case removeAllSections
    /// Moves a section to index `to` (0..<count) (`move(sectionAt:to:)`).
    case moveSection(SectionRef, to: Int)
    /// Exchanges two sections (`move(swappingAt:with:)`).
    case swapSections(SectionRef, SectionRef)
    /// Sets (or, with `nil`, clears) a section's header.
    case setHeader(SectionRef, [UInt8]?)
    /// Sets (or, with `nil`, clears) a section's footer.
    case setFooter(SectionRef, [UInt8]?)

    // MARK: Rows

    /// Replaces every row of a section (`section.set(models:)`). Changes are found by diffing.
    case setRows([Row], in: SectionRef)
    /// Inserts rows at `index` (0…count) in a section (`add(model:at:)`, `add(models:at:)`).
    case insertRows([Row], in: SectionRef, at: Int)
    /// Replaces a row in place (an update/reload when the ID is kept).
    case replaceRow(RowRef, with: Row)
    /// Removes rows, possibly from several sections; every reference is resolved
    /// before any is removed (`remove(at:)`, `remove(at: IndexSet)`).
    case removeRows([RowRef])
    /// Removes every row of a section (`section.removeAll()`).
    case removeAllRows(in: SectionRef)
    /// Moves a row to index `at` of a section — the same section (`move(from:to:)`) or
    /// another one (a cross-section move). `at` is the index after removal.
    case moveRow(RowRef, toSection: SectionRef, at: Int)
    /// Exchanges two rows, in one section or across sections.
    case swapRows(RowRef, RowRef)

    /// True for the operations that replace a whole list and are therefore turned into a
    /// changeset by the O(n) diff rather than incrementally.
    public var isWholeReplacement: Bool {
        switch self {
        case .setSections, .removeAllSections, .setRows, .removeAllRows: return true
        default: return false
        }
    }

    /// A rough count of the elements the operation touches; the batch applier uses it to
    /// choose between incremental change tracking and a diff (see `Director+Batch.swift`).
    public var touchEstimate: Int {
        switch self {
        case .setSections(let s): return s.count
        case .insertSections(let s, _): return s.count
        case .removeSections(let r): return r.count
        case .setRows(let r, _): return r.count
        case .insertRows(let r, _, _): return r.count
        case .removeRows(let r): return r.count
        case .swapSections, .swapRows: return 2
        default: return 1
        }
    }
}
