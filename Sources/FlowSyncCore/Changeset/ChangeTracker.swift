/// Follows a batch's primitive edits and derives its changeset without looking at the
/// rest of the list: the cost grows with the number of touched elements k, not with the
/// list size n.
///
/// ## How
/// Only *touched* elements get an entry (a section or row that was removed, inserted,
/// moved, replaced, or that holds a touched row). Each entry knows its origin (old
/// index, or "inserted in this batch").
///
/// Rows: each touched section keeps its current row order in a ``RowOrderTracker`` —
/// runs of untouched rows (which keep their old relative order, so a row cut out of a
/// run at offset `o` has old index `run.oldStart + o`) and single touched entries. An
/// edit at a position is a split and a merge: O(log k) expected. Final positions are
/// read off the order once, when the changeset is built.
///
/// Sections: few, so their entries are shifted linearly (O(touched sections) per event,
/// as before); a section's old index is the `U`-th position not occupied by a touched
/// section in the old state (``oldIndex(untouchedBefore:excluding:)``).
///
/// Instances, not IDs, are tracked: a row removed and re-added with the same ID in one
/// batch is a delete plus an insert, which is what a UI needs.
///
/// - Complexity: per row event O(log k) expected plus O(touched sections); the result
///   O(k log k). No per-event cost grows with the rows a section holds.
struct ChangeTracker {
    enum SectionOrigin: Hashable {
        case original(Int)
        case inserted
    }

    enum RowOrigin: Hashable {
        case original(section: Int, row: Int)
        case inserted
    }

    struct SectionEntry {
        let origin: SectionOrigin
        /// Current index, or `nil` once removed (and not re-inserted).
        var index: Int?
        /// Taken out and put back by a move or swap.
        var moved = false
        /// Header and footer when first touched (the old ones for an original section).
        let oldHeader: [UInt8]?
        let oldFooter: [UInt8]?
        /// Root of this section's row order in ``ChangeTracker/rowOrder``, once a row of
        /// it is touched (`nil` before: no row of it has moved yet).
        var rowRoot: Int?
    }

    struct RowEntry {
        let origin: RowOrigin
        /// Handle of the section entry that holds it now, or `nil` once removed.
        var section: Int?
        /// Taken out and put back by a move or swap.
        var moved = false
        /// Content hash when first touched (the old one for an original row).
        let oldContentHash: UInt64
    }

    private(set) var sectionEntries: [SectionEntry] = []
    private(set) var rowEntries: [RowEntry] = []
    /// The row order of every touched section.
    private var rowOrder = RowOrderTracker()
    /// Old section index → handle, for every original section that has an entry.
    private var originalSections: [Int: Int] = [:]

    // MARK: Handles

    /// The old index of an untouched element that has `untouched` untouched elements
    /// before it, given the old indices of the touched elements of its container.
    private static func oldIndex(untouchedBefore untouched: Int, excluding touchedOld: [Int]) -> Int {
        var old = untouched
        for t in touchedOld.sorted() {
            if t <= old { old += 1 } else { break }
        }
        return old
    }

    /// The entry of the section now at `s`, creating one for an untouched section
    /// (whose header and footer are then still the old ones).
    private mutating func sectionHandle(at s: Int, header: [UInt8]?, footer: [UInt8]?) -> Int {
        var before = 0
        for (handle, entry) in sectionEntries.enumerated() {
            guard let index = entry.index else { continue }
            if index == s { return handle }
            if index < s { before += 1 }
        }
        var touchedOld: [Int] = []
        for entry in sectionEntries {
            if case .original(let o) = entry.origin { touchedOld.append(o) }
        }
        let old = Self.oldIndex(untouchedBefore: s - before, excluding: touchedOld)
        sectionEntries.append(SectionEntry(origin: .original(old), index: s, oldHeader: header, oldFooter: footer))
        originalSections[old] = sectionEntries.count - 1
        return sectionEntries.count - 1
    }

    /// The section entry of the section now at `s` with its row order started:
    /// `rowCount` is the section's row count now, before the event's edit (all its rows
    /// are still untouched when the order starts).
    private mutating func rowContainer(section s: Int, rowCount: Int, header: [UInt8]?, footer: [UInt8]?) -> Int {
        let container = sectionHandle(at: s, header: header, footer: footer)
        if sectionEntries[container].rowRoot == nil {
            let original: Bool
            if case .original = sectionEntries[container].origin { original = true } else { original = false }
            sectionEntries[container].rowRoot = rowOrder.makeSequence(count: rowCount, original: original)
        }
        return container
    }

    /// A new entry for an untouched row found in `container`.
    private mutating func newEntry(for slot: RowOrderTracker.Slot, in container: Int, contentHash: UInt64) -> Int {
        let origin: RowOrigin
        switch (slot, sectionEntries[container].origin) {
        case (.original(let row), .original(let oldSection)):
            origin = .original(section: oldSection, row: row)
        default:
            // Every untouched row of a section inserted in this batch is new too.
            origin = .inserted
        }
        rowEntries.append(RowEntry(origin: origin, section: container, oldContentHash: contentHash))
        return rowEntries.count - 1
    }

    // MARK: Events
    //
    // The primitives call these *before* they change the storage, passing the
    // section's current header, footer and row count (never the `Section` itself, whose
    // retained rows would force the following in-place edit to copy storage).

    mutating func rowInserted(
        section s: Int, at r: Int, handle: Int?, rowCount: Int, header: [UInt8]?, footer: [UInt8]?
    ) {
        let container = rowContainer(section: s, rowCount: rowCount, header: header, footer: footer)
        let h: Int
        if let handle {
            h = handle
            rowEntries[h].section = container
            rowEntries[h].moved = true
        } else {
            rowEntries.append(RowEntry(origin: .inserted, section: container, oldContentHash: 0))
            h = rowEntries.count - 1
        }
        rowOrder.insert(&sectionEntries[container].rowRoot!, entry: h, at: r)
    }

    mutating func rowRemoved(
        section s: Int, at r: Int, contentHash: UInt64, rowCount: Int, header: [UInt8]?, footer: [UInt8]?
    ) -> Int {
        let container = rowContainer(section: s, rowCount: rowCount, header: header, footer: footer)
        let handle: Int
        switch rowOrder.remove(&sectionEntries[container].rowRoot!, at: r) {
        case .entry(let existing): handle = existing
        case let untouched: handle = newEntry(for: untouched, in: container, contentHash: contentHash)
        }
        rowEntries[handle].section = nil
        return handle
    }

    mutating func rowReplaced(
        section s: Int, at r: Int, oldContentHash: UInt64, rowCount: Int, header: [UInt8]?, footer: [UInt8]?
    ) {
        let container = rowContainer(section: s, rowCount: rowCount, header: header, footer: footer)
        let (node, slot) = rowOrder.touch(&sectionEntries[container].rowRoot!, at: r)
        if case .entry = slot { return }
        rowOrder.assign(entry: newEntry(for: slot, in: container, contentHash: oldContentHash), to: node)
    }

    mutating func sectionInserted(at s: Int, handle: Int?) {
        for k in sectionEntries.indices {
            if let index = sectionEntries[k].index, index >= s { sectionEntries[k].index = index + 1 }
        }
        if let handle {
            sectionEntries[handle].index = s
            sectionEntries[handle].moved = true
        } else {
            sectionEntries.append(SectionEntry(origin: .inserted, index: s, oldHeader: nil, oldFooter: nil))
        }
    }

    mutating func sectionRemoved(at s: Int, header: [UInt8]?, footer: [UInt8]?) -> Int {
        let handle = sectionHandle(at: s, header: header, footer: footer)
        sectionEntries[handle].index = nil
        for k in sectionEntries.indices {
            if let index = sectionEntries[k].index, index > s { sectionEntries[k].index = index - 1 }
        }
        return handle
    }

    mutating func supplementaryWillChange(at s: Int, header: [UInt8]?, footer: [UInt8]?) {
        _ = sectionHandle(at: s, header: header, footer: footer)
    }

    // MARK: Result

    /// The changes of the batch in old/final coordinates.
    /// - Complexity: O(k) plus the lookups of final rows for content comparison
    ///   (O(log n) each).
    func rawChanges(final: Director) -> RawChanges {
        var raw = RawChanges()
        // Final row index of every touched row still present, read off the row orders.
        var finalRow = [Int](repeating: -1, count: rowEntries.count)
        for entry in sectionEntries {
            guard let root = entry.rowRoot else { continue }
            rowOrder.forEachEntry(root) { handle, position in finalRow[handle] = position }
        }
        for entry in sectionEntries {
            switch (entry.origin, entry.index) {
            case (.original(let old), nil):
                raw.sectionDeletes.append(old)
            case (.original(let old), let index?):
                if entry.moved { raw.sectionMoves.append(SectionMove(from: old, to: index)) }
                let section = final.sections[index]
                let header = section.header != entry.oldHeader
                let footer = section.footer != entry.oldFooter
                if header || footer { raw.supplementary.append((index, header, footer)) }
            case (.inserted, let index?):
                raw.sectionInserts.append(index)
            case (.inserted, nil):
                break
            }
        }
        for (handle, entry) in rowEntries.enumerated() {
            // Where the row is now: a live section entry, and whether it is original.
            var finalSection: Int?
            var inOriginalSection = false
            if let container = entry.section, let index = sectionEntries[container].index {
                finalSection = index
                if case .original = sectionEntries[container].origin { inOriginalSection = true }
            }
            switch entry.origin {
            case .inserted:
                // Rows of inserted sections arrive with their section.
                if let s = finalSection, inOriginalSection {
                    raw.rowInserts.append(RowPath(section: s, row: finalRow[handle]))
                }
            case .original(let oldSection, let oldRow):
                let old = RowPath(section: oldSection, row: oldRow)
                let oldHandle = originalSections[oldSection]!
                let oldSectionFinal = sectionEntries[oldHandle].index
                guard let s = finalSection, inOriginalSection else {
                    // Gone, or now in an inserted section (which brings it along): a
                    // delete, unless its old section is deleted as a whole.
                    if oldSectionFinal != nil { raw.rowDeletes.append(old) }
                    continue
                }
                let now = RowPath(section: s, row: finalRow[handle])
                guard let fromSectionFinal = oldSectionFinal else {
                    raw.rowInserts.append(now)  // its old section was deleted
                    continue
                }
                if entry.section != oldHandle || entry.moved {
                    raw.rowMoves.append((old, now, fromSectionFinal))
                }
                if final[now].contentHash != entry.oldContentHash {
                    raw.rowUpdates.append((old, now))
                }
            }
        }
        return raw
    }

    /// The staged changeset of the batch.
    func changeset(final: Director) -> Changeset {
        rawChanges(final: final).assemble(final: final)
    }
}
