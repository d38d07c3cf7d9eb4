extension Changeset {
    /// The staged changeset that turns `old` into `new`, found by comparing IDs
    /// (Heckel's idea: unique IDs make matching a hash lookup, so no edit-distance
    /// search is needed).
    ///
    /// - Sections: matched by ID; unmatched old ones are deleted, unmatched new ones
    ///   inserted; among matched ones, those off a longest increasing subsequence of
    ///   new positions are moved (the fewest moves possible).
    /// - Rows: matched by ID across the whole director, so a row that changed section
    ///   is a move. Within a section, rows off the LIS are moved. A matched row whose
    ///   content differs is also updated. A row whose old section is deleted or whose
    ///   new section is inserted is a delete and/or an insert (UIKit cannot move into
    ///   or out of such sections).
    /// - Headers/footers: compared for every matched section.
    ///
    /// - Complexity: O(n) hashing and comparisons plus O(n log n) comparisons of
    ///   integers for the LIS, for n rows and sections in both states.
    public static func diff(from old: Director, to new: Director) -> Changeset {
        var raw = RawChanges()

        // Sections.
        var newSectionIndex: [String: Int] = [:]
        newSectionIndex.reserveCapacity(new.sections.count)
        for (i, section) in new.sections.enumerated() { newSectionIndex[section.id] = i }
        var oldToNewSection = [Int](repeating: -1, count: old.sections.count)
        var newIsMatched = [Bool](repeating: false, count: new.sections.count)
        var matchedNewPositions: [Int] = []
        var matchedOld: [Int] = []
        for (i, section) in old.sections.enumerated() {
            if let j = newSectionIndex[section.id] {
                oldToNewSection[i] = j
                newIsMatched[j] = true
                matchedOld.append(i)
                matchedNewPositions.append(j)
                let target = new.sections[j]
                let header = section.header != target.header
                let footer = section.footer != target.footer
                if header || footer { raw.supplementary.append((j, header, footer)) }
            } else {
                raw.sectionDeletes.append(i)
            }
        }
        for (j, matched) in newIsMatched.enumerated() where !matched { raw.sectionInserts.append(j) }
        let staying = longestIncreasingSubsequenceMask(matchedNewPositions)
        for (k, stays) in staying.enumerated() where !stays {
            raw.sectionMoves.append(SectionMove(from: matchedOld[k], to: matchedNewPositions[k]))
        }

        // Rows: one map of old rows, then one pass over new rows.
        var oldRowPath: [String: RowPath] = [:]
        oldRowPath.reserveCapacity(old.rowCount)
        for (s, section) in old.sections.enumerated() where oldToNewSection[s] >= 0 {
            for (r, row) in section.rows.enumerated() { oldRowPath[row.id] = RowPath(section: s, row: r) }
        }
        // For each old row of a surviving section, its new row index when it stays in
        // the matching section (-1 otherwise): the input of the per-section LIS.
        var sameSectionNewRow: [[Int]] = old.sections.enumerated().map { s, section in
            oldToNewSection[s] >= 0 ? [Int](repeating: -1, count: section.rows.count) : []
        }
        var oldRowSurvives: [[Bool]] = sameSectionNewRow.map { [Bool](repeating: false, count: $0.count) }
        for (j, section) in new.sections.enumerated() where newIsMatched[j] {
            for (r, row) in section.rows.enumerated() {
                let now = RowPath(section: j, row: r)
                guard let was = oldRowPath[row.id] else {
                    raw.rowInserts.append(now)
                    continue
                }
                oldRowSurvives[was.section][was.row] = true
                if oldToNewSection[was.section] == j {
                    sameSectionNewRow[was.section][was.row] = r
                } else {
                    raw.rowMoves.append((was, now, oldToNewSection[was.section]))
                }
                if !old[was].hasSameContent(as: row) { raw.rowUpdates.append((was, now)) }
            }
        }
        for (s, survives) in oldRowSurvives.enumerated() {
            for (r, alive) in survives.enumerated() where !alive {
                raw.rowDeletes.append(RowPath(section: s, row: r))
            }
            // Rows staying in their section: those off the LIS move.
            var oldRows: [Int] = []
            var newRows: [Int] = []
            for (r, n) in sameSectionNewRow[s].enumerated() where n >= 0 {
                oldRows.append(r)
                newRows.append(n)
            }
            let stays = longestIncreasingSubsequenceMask(newRows)
            let j = oldToNewSection[s]
            for (k, stay) in stays.enumerated() where !stay {
                raw.rowMoves.append((RowPath(section: s, row: oldRows[k]), RowPath(section: j, row: newRows[k]), j))
            }
        }
        return raw.assemble(final: new)
    }
}
