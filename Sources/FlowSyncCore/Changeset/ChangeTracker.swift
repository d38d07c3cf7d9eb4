/// Follows a batch's primitive edits and derives its changeset without looking at the
/// rest of the list: the cost grows with the number of touched elements k, not with the
/// list size n.
///
/// ## How
/// Only *touched* elements get an entry (a section or row that was removed, inserted,
/// moved, replaced, or that holds a touched row). Each entry knows its origin (old
/// index, or "inserted in this batch") and its current index, which is shifted as
/// other entries are inserted and removed around it — O(k) per edit.
///
/// Untouched elements are never enumerated. They keep their relative order and their
/// container, so for an untouched element at current index `c`:
/// `U = c − #(touched entries now before c)` untouched elements precede it, both now
/// and in the old state, and its old index is the `U`-th position not occupied by a
/// touched element of that container in the old state (``oldIndex(untouchedBefore:excluding:)``).
///
/// Instances, not IDs, are tracked: a row removed and re-added with the same ID in one
/// batch is a delete plus an insert, which is what a UI needs.
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
    }

    struct RowEntry {
        let origin: RowOrigin
        /// Handle of the section entry that holds it now, or `nil` once removed.
        var section: Int?
        /// Current index within that section.
        var index: Int
        /// Taken out and put back by a move or swap.
        var moved = false
        /// Content hash when first touched (the old one for an original row).
        let oldContentHash: UInt64
    }

    private(set) var sectionEntries: [SectionEntry] = []
    private(set) var rowEntries: [RowEntry] = []
    /// Old section index → handle, for every original section that has an entry.
    private var originalSections: [Int: Int] = [:]

    /// Incremental tracking costs O(k²); the diff O(n log n). Track while k ≤ 8·√n
    /// (and always up to 512), a bound that keeps the tracker below the diff's cost on
    /// every size measured in docs/BENCHMARKS.md.
    static func isCheaperThanDiff(touched k: Int, rows n: Int) -> Bool {
        k <= 512 || k * k <= 64 * n
    }

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

    /// The entry of the row now at `(s, r)`, creating one for an untouched row.
    private mutating func rowHandle(section s: Int, at r: Int, contentHash: UInt64, header: [UInt8]?, footer: [UInt8]?) -> Int {
        let container = sectionHandle(at: s, header: header, footer: footer)
        var before = 0
        for (handle, entry) in rowEntries.enumerated() where entry.section == container {
            if entry.index == r { return handle }
            if entry.index < r { before += 1 }
        }
        let origin: RowOrigin
        switch sectionEntries[container].origin {
        case .inserted:
            // Every untouched row of a section inserted in this batch is new too.
            origin = .inserted
        case .original(let oldSection):
            var touchedOld: [Int] = []
            for entry in rowEntries {
                if case .original(oldSection, let o) = entry.origin { touchedOld.append(o) }
            }
            origin = .original(section: oldSection, row: Self.oldIndex(untouchedBefore: r - before, excluding: touchedOld))
        }
        rowEntries.append(RowEntry(origin: origin, section: container, index: r, oldContentHash: contentHash))
        return rowEntries.count - 1
    }

    // MARK: Events
    //
    // The primitives call these *before* they change the storage, passing the
    // section's current header and footer (never the `Section` itself, whose retained
    // rows buffer would force the following in-place edit to copy the whole section).

    mutating func rowInserted(section s: Int, at r: Int, handle: Int?, header: [UInt8]?, footer: [UInt8]?) {
        let container = sectionHandle(at: s, header: header, footer: footer)
        for k in rowEntries.indices where rowEntries[k].section == container && rowEntries[k].index >= r {
            rowEntries[k].index += 1
        }
        if let handle {
            rowEntries[handle].section = container
            rowEntries[handle].index = r
            rowEntries[handle].moved = true
        } else {
            rowEntries.append(RowEntry(origin: .inserted, section: container, index: r, oldContentHash: 0))
        }
    }

    mutating func rowRemoved(section s: Int, at r: Int, contentHash: UInt64, header: [UInt8]?, footer: [UInt8]?) -> Int {
        let handle = rowHandle(section: s, at: r, contentHash: contentHash, header: header, footer: footer)
        let container = rowEntries[handle].section
        rowEntries[handle].section = nil
        for k in rowEntries.indices where rowEntries[k].section == container && rowEntries[k].index > r {
            rowEntries[k].index -= 1
        }
        return handle
    }

    mutating func rowReplaced(section s: Int, at r: Int, oldContentHash: UInt64, header: [UInt8]?, footer: [UInt8]?) {
        _ = rowHandle(section: s, at: r, contentHash: oldContentHash, header: header, footer: footer)
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
    /// - Complexity: O(k) plus the lookups of final rows for content comparison.
    func rawChanges(final: Director) -> RawChanges {
        var raw = RawChanges()
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
        for entry in rowEntries {
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
                    raw.rowInserts.append(RowPath(section: s, row: entry.index))
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
                let now = RowPath(section: s, row: entry.index)
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
