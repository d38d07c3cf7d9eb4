/// Where an inserted or moved element goes, by identity: at the start or the end when
/// that is where the writer put it; otherwise after the nearest surviving predecessor,
/// else before the nearest surviving successor, else at the end.
///
/// Why anchors: a position written against an old version means "between these
/// neighbours". Indices shift under concurrent edits; neighbours' IDs do not. Up to
/// ``depth`` neighbours on each side are kept, so the position survives the deletion
/// of its immediate neighbours.
public struct Anchor: Hashable, Sendable {
    /// Predecessors, nearest first.
    public var after: [String]
    /// Successors, nearest first.
    public var before: [String]

    /// How many neighbours are kept on each side.
    public static let depth = 4

    /// An anchor between `after` (predecessors, nearest first) and `before`
    /// (successors, nearest first); the client's persisted writes are read back with it.
    public init(after: [String], before: [String]) {
        self.after = after
        self.before = before
    }
}

/// An ``Operation`` re-expressed by identity, so it can apply to a state that moved on
/// since the version it was written against. Produced by replaying the operation on the
/// state at its base (``Director/anchor(_:op:)``), consumed by
/// ``Director/resolve(_:op:)`` on the current state.
public enum AnchoredOperation: Hashable, Sendable {
    case setSections([Section])
    case insertSections([Section], at: Anchor)
    case removeSections([String])
    case removeAllSections
    case moveSection(String, to: Anchor)
    case swapSections(String, String)
    case setHeader(String, [UInt8]?)
    case setFooter(String, [UInt8]?)
    case setRows([Row], in: String)
    case insertRows([Row], in: String, at: Anchor)
    case replaceRow(String, with: Row)
    case removeRows([String])
    case removeAllRows(in: String)
    case moveRow(String, toSection: String, at: Anchor)
    case swapRows(String, String)
}

extension Director {
    // MARK: Anchoring (on the state the writer saw)

    /// The anchor of `gap` in a sequence of `count` elements whose IDs `id(i)` gives,
    /// leaving out the element being moved. Walks only the neighbours it keeps.
    private static func anchor(gap: Int, count: Int, skipping moving: String?, id: (Int) -> String) -> Anchor {
        var after: [String] = []
        var index = gap - 1
        while index >= 0 && after.count < Anchor.depth {
            if id(index) != moving { after.append(id(index)) }
            index -= 1
        }
        var before: [String] = []
        index = gap
        while index < count && before.count < Anchor.depth {
            if id(index) != moving { before.append(id(index)) }
            index += 1
        }
        return Anchor(after: after, before: before)
    }

    private func rowAnchor(section s: Int, gap: Int, skipping moving: String? = nil) -> Anchor {
        let rows = sections[s].rows
        return Self.anchor(gap: gap, count: rows.count, skipping: moving) { rows[$0].id }
    }

    private func sectionAnchor(gap: Int, skipping moving: String? = nil) -> Anchor {
        Self.anchor(gap: gap, count: sections.count, skipping: moving) { sections[$0].id }
    }

    /// Re-expresses `operation` by identity against this state (the writer's base plus
    /// the group's earlier operations), then applies it here so the next operation of
    /// the group is anchored in the right state.
    /// - Throws: ``MutationError`` when the operation is invalid against this state —
    ///   the writer's own error, not a conflict.
    ///
    /// The primitives it applies are appended to `undo`, so the caller can restore this
    /// state for the next mutation instead of copying it (a copy duplicates the row
    /// index and the edited sections). With `isLast`, the operation is anchored but not
    /// applied: nothing after it needs
    /// the resulting state, and applying it would copy the state's storage (the row
    /// index, the edited section) for nothing. Checks that need the applied state
    /// (duplicate IDs, limits) then happen when it applies to the current state.
    mutating func anchor(
        _ operation: Operation, op: Int, isLast: Bool = false, undo: inout [UndoEntry]
    ) throws(MutationError) -> AnchoredOperation {
        let anchored: AnchoredOperation
        switch operation {
        case .setSections(let new):
            anchored = .setSections(new)
        case .insertSections(let new, let index):
            guard index >= 0 && index <= sections.count else {
                throw MutationError(
                    opIndex: op, reason: .indexOutOfRange, message: "insert index \(index) not in 0...\(sections.count)"
                )
            }
            anchored = .insertSections(new, at: sectionAnchor(gap: index))
        case .removeSections(let refs):
            var ids: [String] = []
            for ref in refs { ids.append(sections[try resolve(ref, op: op)].id) }
            anchored = .removeSections(ids)
        case .removeAllSections:
            anchored = .removeAllSections
        case .moveSection(let ref, let to):
            let from = try resolve(ref, op: op)
            guard to >= 0 && to < sections.count else {
                throw MutationError(
                    opIndex: op, reason: .indexOutOfRange,
                    message: "section destination \(to) not in 0..<\(sections.count)")
            }
            // `to` counts positions after removal; in the full sequence the gap is one
            // further when it lies past the moving section.
            let id = sections[from].id
            anchored = .moveSection(id, to: sectionAnchor(gap: to < from ? to : to + 1, skipping: id))
        case .swapSections(let a, let b):
            anchored = .swapSections(sections[try resolve(a, op: op)].id, sections[try resolve(b, op: op)].id)
        case .setHeader(let ref, let header):
            anchored = .setHeader(sections[try resolve(ref, op: op)].id, header)
        case .setFooter(let ref, let footer):
            anchored = .setFooter(sections[try resolve(ref, op: op)].id, footer)
        case .setRows(let rows, let ref):
            anchored = .setRows(rows, in: sections[try resolve(ref, op: op)].id)
        case .insertRows(let rows, let ref, let index):
            let s = try resolve(ref, op: op)
            guard index >= 0 && index <= sections[s].rows.count else {
                throw MutationError(
                    opIndex: op, reason: .indexOutOfRange,
                    message:
                        "row insert index \(index) not in 0...\(sections[s].rows.count) of section \"\(sections[s].id)\""
                )
            }
            anchored = .insertRows(rows, in: sections[s].id, at: rowAnchor(section: s, gap: index))
        case .replaceRow(let ref, let row):
            anchored = .replaceRow(self[try resolve(ref, op: op)].id, with: row)
        case .removeRows(let refs):
            var ids: [String] = []
            for ref in refs { ids.append(self[try resolve(ref, op: op)].id) }
            anchored = .removeRows(ids)
        case .removeAllRows(let ref):
            anchored = .removeAllRows(in: sections[try resolve(ref, op: op)].id)
        case .moveRow(let ref, let sectionRef, let to):
            let from = try resolve(ref, op: op)
            let s = try resolve(sectionRef, op: op)
            let id = self[from].id
            let capacity = sections[s].rows.count - (s == from.section ? 1 : 0)
            guard to >= 0 && to <= capacity else {
                throw MutationError(
                    opIndex: op, reason: .indexOutOfRange,
                    message: "row destination \(to) not in 0...\(capacity) of section \"\(sections[s].id)\"")
            }
            let gap = (s == from.section && to >= from.row) ? to + 1 : to
            anchored = .moveRow(id, toSection: sections[s].id, at: rowAnchor(section: s, gap: gap, skipping: id))
        case .swapRows(let a, let b):
            anchored = .swapRows(self[try resolve(a, op: op)].id, self[try resolve(b, op: op)].id)
        }
        // Apply here (validating it fully) so later operations anchor in the right state.
        if !isLast {
            var ctx = EditContext(undo: [], tracker: nil)
            defer { undo.append(contentsOf: ctx.undo ?? []) }
            try perform(operation, op: op, &ctx)
        }
        return anchored
    }

    // MARK: Resolution (on the current state)

    private func conflict(_ op: Int, _ message: String) -> MutationError {
        MutationError(opIndex: op, reason: .conflict, message: message)
    }

    private func requireSection(_ id: String, op: Int, _ what: String) throws(MutationError) -> Int {
        guard let s = sectionIndex(id: id) else {
            throw conflict(op, "\(what): section \"\(id)\" was deleted by a concurrent edit")
        }
        return s
    }

    private func requireRow(_ id: String, op: Int, _ what: String) throws(MutationError) -> RowPath {
        guard let path = rowPath(id: id) else {
            throw conflict(op, "\(what): row \"\(id)\" was deleted by a concurrent edit")
        }
        return path
    }

    /// The gap an anchor names among `ids` (current order, the moving element excluded).
    ///
    /// The start and the end are the strongest intents (prepend, append), so an anchor
    /// with no predecessor means the start and one with no successor the end, whatever
    /// moved since. In between: after the nearest surviving predecessor, else before the
    /// nearest surviving successor, else the end.
    private static func gap(_ anchor: Anchor, in ids: [String]) -> Int {
        if anchor.after.isEmpty { return 0 }
        if anchor.before.isEmpty { return ids.count }
        for predecessor in anchor.after {
            if let i = ids.firstIndex(of: predecessor) { return i + 1 }
        }
        for successor in anchor.before {
            if let i = ids.firstIndex(of: successor) { return i }
        }
        return ids.count
    }

    /// ``gap(_:in:)`` for the rows of section `s` without the row `moving`, found through
    /// the row ID index instead of listing the section's IDs.
    /// - Complexity: O(Anchor.depth · (128 + log n)), where listing the IDs was O(n).
    private func rowGap(_ anchor: Anchor, section s: Int, excluding moving: String?) -> Int {
        let sectionID = sections[s].id
        var movingIndex: Int?
        if let moving, rowSectionIDs[moving] == sectionID { movingIndex = sections[s].rows.firstIndex(ofID: moving) }
        let count = sections[s].rows.count - (movingIndex == nil ? 0 : 1)
        // The index among the section's rows with `moving` left out.
        func position(_ id: String) -> Int? {
            guard id != moving, rowSectionIDs[id] == sectionID, let i = sections[s].rows.firstIndex(ofID: id) else {
                return nil
            }
            if let m = movingIndex, m < i { return i - 1 }
            return i
        }
        if anchor.after.isEmpty { return 0 }
        if anchor.before.isEmpty { return count }
        for predecessor in anchor.after {
            if let i = position(predecessor) { return i + 1 }
        }
        for successor in anchor.before {
            if let i = position(successor) { return i }
        }
        return count
    }

    /// Turns an anchored operation back into an index-based one against this state.
    /// A delete of something already deleted is dropped (applied once); an edit of
    /// something deleted, or into a deleted section, is a ``MutationError/Reason/conflict``.
    func resolve(_ anchored: AnchoredOperation, op: Int) throws(MutationError) -> Operation? {
        switch anchored {
        case .setSections(let new):
            return .setSections(new)
        case .insertSections(let new, let anchor):
            return .insertSections(new, at: Self.gap(anchor, in: sections.map(\.id)))
        case .removeSections(let ids):
            let present = ids.filter { sectionIDs.contains($0) }
            return present.isEmpty ? nil : .removeSections(present.map { .id($0) })
        case .removeAllSections:
            return .removeAllSections
        case .moveSection(let id, let anchor):
            let from = try requireSection(id, op: op, "move")
            var others = sections.map(\.id)
            others.remove(at: from)
            return .moveSection(.id(id), to: min(Self.gap(anchor, in: others), others.count))
        case .swapSections(let a, let b):
            _ = try requireSection(a, op: op, "swap")
            _ = try requireSection(b, op: op, "swap")
            return .swapSections(.id(a), .id(b))
        case .setHeader(let id, let header):
            _ = try requireSection(id, op: op, "header")
            return .setHeader(.id(id), header)
        case .setFooter(let id, let footer):
            _ = try requireSection(id, op: op, "footer")
            return .setFooter(.id(id), footer)
        case .setRows(let rows, let id):
            _ = try requireSection(id, op: op, "set rows")
            return .setRows(rows, in: .id(id))
        case .insertRows(let rows, let id, let anchor):
            let s = try requireSection(id, op: op, "insert")
            return .insertRows(rows, in: .id(id), at: rowGap(anchor, section: s, excluding: nil))
        case .replaceRow(let id, let row):
            _ = try requireRow(id, op: op, "update")
            return .replaceRow(.id(id), with: row)
        case .removeRows(let ids):
            let present = ids.filter { rowSectionIDs[$0] != nil }
            return present.isEmpty ? nil : .removeRows(present.map { .id($0) })
        case .removeAllRows(let id):
            _ = try requireSection(id, op: op, "remove all rows")
            return .removeAllRows(in: .id(id))
        case .moveRow(let id, let sectionID, let anchor):
            _ = try requireRow(id, op: op, "move")
            let s = try requireSection(sectionID, op: op, "move")
            return .moveRow(.id(id), toSection: .id(sectionID), at: rowGap(anchor, section: s, excluding: id))
        case .swapRows(let a, let b):
            _ = try requireRow(a, op: op, "swap")
            _ = try requireRow(b, op: op, "swap")
            return .swapRows(.id(a), .id(b))
        }
    }
}
