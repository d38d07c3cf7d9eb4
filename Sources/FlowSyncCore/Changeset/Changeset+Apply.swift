extension Changeset {
    /// Applies every stage, in order, to `director`.
    ///
    /// Each stage is checked first (``BatchValidator`` rules, plus ID uniqueness and
    /// reloads keeping their ID), so a changeset that does not fit the state — a
    /// corrupt frame, a replica that drifted — is refused with an error instead of
    /// trapping. On error the director is left exactly as it was.
    /// - Complexity: O(c log c) for c changes, plus a memmove per row edit and
    ///   O(rows) per inserted or deleted section.
    public func apply(to director: inout Director) throws(ChangesetApplyError) {
        var ctx = EditContext(undo: [], tracker: nil)
        for (index, stage) in stages.enumerated() {
            do {
                try director.apply(stage, &ctx)
            } catch {
                director.undo(ctx.undo ?? [])
                throw ChangesetApplyError(stage: index, violation: error)
            }
        }
    }

    /// Applies every stage like ``apply(to:)`` and returns how to undo it, so a batch
    /// read back from a store (or any replayed changeset) can enter a history.
    /// On error the director is left exactly as it was.
    public func applyReversibly(to director: inout Director) throws(ChangesetApplyError) -> BatchReversal {
        var ctx = EditContext(undo: [], tracker: nil)
        for (index, stage) in stages.enumerated() {
            do {
                try director.apply(stage, &ctx)
            } catch {
                director.undo(ctx.undo ?? [])
                throw ChangesetApplyError(stage: index, violation: error)
            }
        }
        return BatchReversal(entries: ctx.undo ?? [])
    }

    /// The result of applying this changeset to `director`.
    public func applied(to director: Director) throws(ChangesetApplyError) -> Director {
        var copy = director
        try apply(to: &copy)
        return copy
    }
}

extension ChangesetStage {
    /// Applies this one stage (see ``Changeset/apply(to:)``).
    public func apply(to director: inout Director) throws(BatchViolation) {
        var ctx = EditContext(undo: [], tracker: nil)
        do {
            try director.apply(self, &ctx)
        } catch {
            director.undo(ctx.undo ?? [])
            throw error
        }
    }
}

extension Director {
    /// UIKit order within a batch: reloads (source positions), then every removal
    /// (rows before sections, highest index first so earlier indices stay valid), then
    /// every insertion (sections before rows, lowest target index first, so each lands
    /// at its final position).
    mutating func apply(_ stage: ChangesetStage, _ ctx: inout EditContext) throws(BatchViolation) {
        _ = try BatchValidator.derive(stage, before: rowCounts)

        for update in stage.rowUpdates {
            let current = self[update.path]
            guard current.id == update.row.id else {
                throw BatchViolation(
                    .reloadChangesID,
                    "reload of \(update.path) carries row \"\(update.row.id)\" for row \"\(current.id)\"")
            }
            primitiveReplaceRow(section: update.path.section, at: update.path.row, with: update.row, &ctx)
        }

        // Removals.
        var rowRemovals = stage.rowDeletes + stage.rowMoves.map(\.from)
        rowRemovals.sort(by: >)
        var takenRows: [RowPath: Row] = [:]
        for path in rowRemovals {
            takenRows[path] = primitiveRemoveRow(section: path.section, at: path.row, &ctx).row
        }
        var sectionRemovals = stage.sectionDeletes + stage.sectionMoves.map(\.from)
        sectionRemovals.sort(by: >)
        var takenSections: [Int: Section] = [:]
        for s in sectionRemovals {
            takenSections[s] = primitiveRemoveSection(at: s, &ctx).section
        }
        // Deleted rows and sections are gone; only moved ones come back.
        for path in stage.rowDeletes { takenRows[path] = nil }

        // Insertions.
        var sectionArrivals: [(Int, Section)] = stage.sectionInserts.map { ($0.index, $0.section) }
        for move in stage.sectionMoves { sectionArrivals.append((move.to, takenSections[move.from]!)) }
        sectionArrivals.sort { $0.0 < $1.0 }
        for (index, section) in sectionArrivals {
            if sectionIDs.contains(section.id) {
                throw BatchViolation(.duplicateID, "section \"\(section.id)\" inserted at \(index) already exists")
            }
            var seen = Set<String>()
            for row in section.rows where rowSectionIDs[row.id] != nil || !seen.insert(row.id).inserted {
                throw BatchViolation(
                    .duplicateID, "row \"\(row.id)\" of inserted section \"\(section.id)\" already exists")
            }
            primitiveInsertSection(section, at: index, handle: nil, &ctx)
        }
        var rowArrivals: [(RowPath, Row)] = stage.rowInserts.map { ($0.path, $0.row) }
        for move in stage.rowMoves { rowArrivals.append((move.to, takenRows[move.from]!)) }
        rowArrivals.sort { $0.0 < $1.0 }
        for (path, row) in rowArrivals {
            if let owner = rowSectionIDs[row.id] {
                throw BatchViolation(
                    .duplicateID, "row \"\(row.id)\" inserted at \(path) already in section \"\(owner)\"")
            }
            primitiveInsertRow(row, section: path.section, at: path.row, handle: nil, &ctx)
        }

        for update in stage.supplementaryUpdates {
            let section = sections[update.section]
            switch update.element {
            case .header:
                primitiveSetSupplementary(section: update.section, header: update.value, footer: section.footer, &ctx)
            case .footer:
                primitiveSetSupplementary(section: update.section, header: section.header, footer: update.value, &ctx)
            }
        }
    }
}
