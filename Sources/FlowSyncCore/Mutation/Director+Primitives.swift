// The primitive edit layer. Every operation, every changeset stage and every undo is
// carried out by these six functions, so the bookkeeping lives in exactly one place:
// the row-ID index, the row count, the digest (three edge terms and one node term per
// row edit), the undo log and the change tracker.
//
// Primitives assume their input was validated by the caller (the operation resolver
// or the changeset applier); they only `assert`.

/// Reversal of one primitive, recorded so a failing op group can be rolled back
/// without ever copying the director (a copy would cost O(n) per group).
enum UndoEntry {
    case removeRow(section: Int, row: Int)
    case insertRow(Row, section: Int, row: Int)
    case replaceRow(Row, section: Int, row: Int)
    case removeSection(Int)
    case insertSection(Section, at: Int)
    case setSupplementary(section: Int, header: [UInt8]?, footer: [UInt8]?)
}

/// What the primitives record while they run.
struct EditContext {
    /// Reversal log, newest last; `nil` when nothing needs undoing (undo itself, apply).
    var undo: [UndoEntry]?
    /// Incremental changeset tracking; `nil` when the batch is diffed instead.
    var tracker: ChangeTracker?

    static let none = EditContext(undo: nil, tracker: nil)
}

extension Director {
    @inline(__always)
    private func rowIDHash(section s: Int, row r: Int) -> UInt64 {
        if r < 0 { return StateDigest.start }
        if r >= sections[s].rows.count { return StateDigest.end }
        return StateDigest.idHash(sections[s].rows[r].id)
    }

    @inline(__always)
    private func sectionIDHash(_ s: Int) -> UInt64 {
        if s < 0 { return StateDigest.start }
        if s >= sections.count { return StateDigest.end }
        return StateDigest.idHash(sections[s].id)
    }

    /// Inserts `row` at `(s, r)`. `handle` is the tracker's handle when the row is being
    /// moved (taken out by ``primitiveRemoveRow`` earlier in this batch).
    /// - Complexity: O(log n) plus a move inside one chunk (``RowList``).
    mutating func primitiveInsertRow(_ row: Row, section s: Int, at r: Int, handle: Int?, _ ctx: inout EditContext) {
        assert(r >= 0 && r <= sections[s].rows.count && rowSectionIDs[row.id] == nil)
        let h = StateDigest.idHash(sections[s].id)
        let prev = rowIDHash(section: s, row: r - 1)
        let next = rowIDHash(section: s, row: r)
        let x = StateDigest.idHash(row.id)
        var d = digest.rawValue
        d &-= StateDigest.rowEdge(h, prev, next)
        d &+= StateDigest.rowEdge(h, prev, x)
        d &+= StateDigest.rowEdge(h, x, next)
        d &+= StateDigest.rowNode(h, x, row.contentHash)
        digest.rawValue = d
        rowSectionIDs[row.id] = sections[s].id
        rowCount += 1
        ctx.tracker?.rowInserted(
            section: s, at: r, handle: handle, rowCount: sections[s].rows.count, header: sections[s].header,
            footer: sections[s].footer)
        sections[s].rows.insert(row, at: r)
        ctx.undo?.append(.removeRow(section: s, row: r))
    }

    /// Inserts a run of rows at `(s, r)`: the same bookkeeping as one
    /// ``primitiveInsertRow`` per row, in order (digest terms, row index, tracker events,
    /// one undo entry per row), but one ``RowList`` edit for the whole run.
    ///
    /// Why: inserted one by one, a long run at one position splits its chunk every 128
    /// rows, and each split re-indexes the section's chunk table (O(n/128)); as a run it
    /// is cut into chunks once (O(k + n/128)).
    /// - Complexity: O(k·log k) for the tracker plus O(k + n/128).
    mutating func primitiveInsertRows(_ rows: [Row], section s: Int, at r: Int, _ ctx: inout EditContext) {
        assert(r >= 0 && r <= sections[s].rows.count)
        guard rows.count > 1 else {
            if let row = rows.first { primitiveInsertRow(row, section: s, at: r, handle: nil, &ctx) }
            return
        }
        let sectionID = sections[s].id
        let h = StateDigest.idHash(sectionID)
        let prev = rowIDHash(section: s, row: r - 1)
        let next = rowIDHash(section: s, row: r)
        var d = digest.rawValue
        d &-= StateDigest.rowEdge(h, prev, next)
        var left = prev
        let count = sections[s].rows.count
        let (header, footer) = (sections[s].header, sections[s].footer)
        for (k, row) in rows.enumerated() {
            assert(rowSectionIDs[row.id] == nil)
            let x = StateDigest.idHash(row.id)
            d &+= StateDigest.rowEdge(h, left, x)
            d &+= StateDigest.rowNode(h, x, row.contentHash)
            left = x
            rowSectionIDs[row.id] = sectionID
            ctx.tracker?.rowInserted(
                section: s, at: r + k, handle: nil, rowCount: count + k, header: header, footer: footer)
            ctx.undo?.append(.removeRow(section: s, row: r + k))
        }
        d &+= StateDigest.rowEdge(h, left, next)
        digest.rawValue = d
        rowCount += rows.count
        sections[s].rows.insert(contentsOf: rows, at: r)
    }

    /// Removes and returns the row at `(s, r)` with its tracker handle (for a move).
    /// - Complexity: O(log n) plus a move inside one chunk (``RowList``).
    @discardableResult
    mutating func primitiveRemoveRow(section s: Int, at r: Int, _ ctx: inout EditContext) -> (row: Row, handle: Int?) {
        let row = sections[s].rows[r]
        let handle = ctx.tracker?.rowRemoved(
            section: s, at: r, contentHash: row.contentHash, rowCount: sections[s].rows.count,
            header: sections[s].header, footer: sections[s].footer)
        let h = StateDigest.idHash(sections[s].id)
        let prev = rowIDHash(section: s, row: r - 1)
        let next = rowIDHash(section: s, row: r + 1)
        let x = StateDigest.idHash(row.id)
        var d = digest.rawValue
        d &+= StateDigest.rowEdge(h, prev, next)
        d &-= StateDigest.rowEdge(h, prev, x)
        d &-= StateDigest.rowEdge(h, x, next)
        d &-= StateDigest.rowNode(h, x, row.contentHash)
        digest.rawValue = d
        rowSectionIDs[row.id] = nil
        rowCount -= 1
        sections[s].rows.remove(at: r)
        ctx.undo?.append(.insertRow(row, section: s, row: r))
        return (row, handle)
    }

    /// Replaces the row at `(s, r)` with `row`, which has the same ID.
    /// - Complexity: O(log n).
    mutating func primitiveReplaceRow(section s: Int, at r: Int, with row: Row, _ ctx: inout EditContext) {
        let old = sections[s].rows[r]
        assert(old.id == row.id)
        ctx.tracker?.rowReplaced(
            section: s, at: r, oldContentHash: old.contentHash, rowCount: sections[s].rows.count,
            header: sections[s].header, footer: sections[s].footer)
        let h = StateDigest.idHash(sections[s].id)
        let x = StateDigest.idHash(row.id)
        digest.rawValue =
            digest.rawValue
            &- StateDigest.rowNode(h, x, old.contentHash)
            &+ StateDigest.rowNode(h, x, row.contentHash)
        sections[s].rows[r] = row
        ctx.undo?.append(.replaceRow(old, section: s, row: r))
    }

    /// Inserts a whole section (with its rows) at `s`.
    /// - Complexity: O(rows of the section) plus a memmove of the section array's tail.
    mutating func primitiveInsertSection(_ section: Section, at s: Int, handle: Int?, _ ctx: inout EditContext) {
        assert(s >= 0 && s <= sections.count && !sectionIDs.contains(section.id))
        let prev = sectionIDHash(s - 1)
        let next = sectionIDHash(s)
        let x = StateDigest.idHash(section.id)
        var d = digest.rawValue
        d &-= StateDigest.sectionEdge(prev, next)
        d &+= StateDigest.sectionEdge(prev, x)
        d &+= StateDigest.sectionEdge(x, next)
        d &+= StateDigest.sectionTerms(section, idHash: x)
        digest.rawValue = d
        sectionIDs.insert(section.id)
        for row in section.rows {
            assert(rowSectionIDs[row.id] == nil)
            rowSectionIDs[row.id] = section.id
        }
        rowCount += section.rows.count
        ctx.tracker?.sectionInserted(at: s, handle: handle)
        sections.insert(section, at: s)
        // Lookups by row ID go through the section's index (O(n) once per inserted
        // section, like the row-ID bookkeeping above; a moved section keeps its index).
        sections[s].rows.turnOnIDIndex()
        ctx.undo?.append(.removeSection(s))
    }

    /// Removes and returns the section at `s` (with its rows) and its tracker handle.
    /// - Complexity: O(rows of the section) plus a memmove of the section array's tail.
    @discardableResult
    mutating func primitiveRemoveSection(at s: Int, _ ctx: inout EditContext) -> (section: Section, handle: Int?) {
        let handle = ctx.tracker?.sectionRemoved(at: s, header: sections[s].header, footer: sections[s].footer)
        let section = sections[s]
        let prev = sectionIDHash(s - 1)
        let next = sectionIDHash(s + 1)
        let x = StateDigest.idHash(section.id)
        var d = digest.rawValue
        d &+= StateDigest.sectionEdge(prev, next)
        d &-= StateDigest.sectionEdge(prev, x)
        d &-= StateDigest.sectionEdge(x, next)
        d &-= StateDigest.sectionTerms(section, idHash: x)
        digest.rawValue = d
        sectionIDs.remove(section.id)
        for row in section.rows { rowSectionIDs[row.id] = nil }
        rowCount -= section.rows.count
        sections.remove(at: s)
        ctx.undo?.append(.insertSection(section, at: s))
        return (section, handle)
    }

    /// Sets a section's header and footer.
    /// - Complexity: O(header + footer bytes) for their hashes.
    mutating func primitiveSetSupplementary(
        section s: Int, header: [UInt8]?, footer: [UInt8]?, _ ctx: inout EditContext
    ) {
        let (oldHeader, oldFooter) = (sections[s].header, sections[s].footer)
        ctx.tracker?.supplementaryWillChange(at: s, header: oldHeader, footer: oldFooter)
        let h = StateDigest.idHash(sections[s].id)
        digest.rawValue =
            digest.rawValue
            &- StateDigest.sectionNode(h, header: oldHeader, footer: oldFooter)
            &+ StateDigest.sectionNode(h, header: header, footer: footer)
        sections[s].header = header
        sections[s].footer = footer
        ctx.undo?.append(.setSupplementary(section: s, header: oldHeader, footer: oldFooter))
    }

    /// Reverts primitives newest-first and appends what that did to `recording`, so
    /// `undo(recording)` brings the state back (the sequencer walks the live director to
    /// an older version and back this way instead of copying it).
    mutating func undo(_ log: [UndoEntry], recording: inout [UndoEntry]) {
        var ctx = EditContext(undo: [], tracker: nil)
        for entry in log.reversed() { reverse(entry, &ctx) }
        recording.append(contentsOf: ctx.undo ?? [])
    }

    /// Reverts primitives newest-first.
    mutating func undo(_ log: [UndoEntry]) {
        var none = EditContext.none
        for entry in log.reversed() { reverse(entry, &none) }
    }

    private mutating func reverse(_ entry: UndoEntry, _ ctx: inout EditContext) {
        switch entry {
        case .removeRow(let s, let r): primitiveRemoveRow(section: s, at: r, &ctx)
        case .insertRow(let row, let s, let r): primitiveInsertRow(row, section: s, at: r, handle: nil, &ctx)
        case .replaceRow(let row, let s, let r): primitiveReplaceRow(section: s, at: r, with: row, &ctx)
        case .removeSection(let s): primitiveRemoveSection(at: s, &ctx)
        case .insertSection(let section, let s): primitiveInsertSection(section, at: s, handle: nil, &ctx)
        case .setSupplementary(let s, let header, let footer):
            primitiveSetSupplementary(section: s, header: header, footer: footer, &ctx)
        }
    }
}
