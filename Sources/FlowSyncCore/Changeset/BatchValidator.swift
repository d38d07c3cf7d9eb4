/// Checks a ``ChangesetStage`` the way UIKit checks a `performBatchUpdates` call.
///
/// The rules (see ``BatchViolation/Rule``): every index in range of the state it refers
/// to (deletes, reloads and move sources: the source; inserts and move destinations:
/// the target); no index used twice on either side; no reload of a deleted or moved
/// row; no row change inside a deleted section or into an inserted one; and the count
/// equations — sections after = before − deleted + inserted, and for each surviving
/// section, rows after = before − deleted − moved out + inserted + moved in.
public enum BatchValidator {
    /// The shape of a stage's target: the section count and each section's row count.
    struct Target {
        /// Target section index → source index, or `nil` for an inserted section.
        var sourceOf: [Int?]
        /// Expected rows per target section.
        var rowCounts: [Int]
    }

    /// Validates `stage` against a data source whose sections hold `before` rows
    /// before the update and `after` rows after it (as UIKit asks the data source).
    /// - Throws: The first ``BatchViolation`` found.
    /// - Complexity: O(c log c + s) for c changes and s sections.
    public static func validate(_ stage: ChangesetStage, before: [Int], after: [Int]) throws(BatchViolation) {
        let target = try derive(stage, before: before)
        guard target.rowCounts.count == after.count else {
            throw BatchViolation(
                .sectionCountMismatch,
                "\(after.count) sections after the update, expected \(before.count) − \(stage.sectionDeletes.count + stage.sectionMoves.count) + \(stage.sectionInserts.count + stage.sectionMoves.count) = \(target.rowCounts.count)"
            )
        }
        // Inserted sections are checked too: they must carry exactly the rows the
        // data source reports for them.
        for (t, source) in target.sourceOf.enumerated() {
            if target.rowCounts[t] != after[t] {
                let origin = source.map { "section \($0) before" } ?? "an inserted section"
                throw BatchViolation(
                    .rowCountMismatch,
                    "section \(t) (\(origin)) has \(after[t]) rows after the update, expected \(target.rowCounts[t])")
            }
        }
    }

    /// Checks every rule that does not need the data source's new counts, and derives
    /// those counts (an inserted section counts the rows it carries).
    static func derive(_ stage: ChangesetStage, before: [Int]) throws(BatchViolation) -> Target {
        let sourceSections = before.count

        // Sections, source side.
        var removedSections = Set<Int>()
        var deletedSections = Set<Int>()
        for s in stage.sectionDeletes {
            guard s >= 0 && s < sourceSections else {
                throw BatchViolation(.sectionOutOfRange, "delete of section \(s), \(sourceSections) sections before")
            }
            guard removedSections.insert(s).inserted else {
                throw BatchViolation(.duplicateSection, "section \(s) deleted twice")
            }
            deletedSections.insert(s)
        }
        for move in stage.sectionMoves {
            guard move.from >= 0 && move.from < sourceSections else {
                throw BatchViolation(
                    .sectionOutOfRange, "move of section \(move.from), \(sourceSections) sections before")
            }
            guard removedSections.insert(move.from).inserted else {
                throw BatchViolation(.duplicateSection, "section \(move.from) deleted or moved twice")
            }
        }

        // Sections, target side.
        let targetSections = sourceSections - stage.sectionDeletes.count + stage.sectionInserts.count
        var sourceOf = [Int?](repeating: nil, count: max(targetSections, 0))
        var placed = [Bool](repeating: false, count: max(targetSections, 0))
        var inserted = Set<Int>()
        for insert in stage.sectionInserts {
            guard insert.index >= 0 && insert.index < targetSections else {
                throw BatchViolation(
                    .sectionOutOfRange, "insert of section \(insert.index), \(targetSections) sections after")
            }
            guard !placed[insert.index] else {
                throw BatchViolation(.duplicateSection, "section \(insert.index) inserted twice")
            }
            placed[insert.index] = true
            inserted.insert(insert.index)
        }
        for move in stage.sectionMoves {
            guard move.to >= 0 && move.to < targetSections else {
                throw BatchViolation(.sectionOutOfRange, "move to section \(move.to), \(targetSections) sections after")
            }
            guard !placed[move.to] else {
                throw BatchViolation(.duplicateSection, "section \(move.to) inserted or moved to twice")
            }
            placed[move.to] = true
            sourceOf[move.to] = move.from
        }
        // Untouched sections keep their order: pair them up.
        var nextSource = 0
        for t in 0..<targetSections where !placed[t] {
            while removedSections.contains(nextSource) { nextSource += 1 }
            sourceOf[t] = nextSource
            nextSource += 1
        }
        var targetOfSource = [Int](repeating: -1, count: sourceSections)
        for (t, s) in sourceOf.enumerated() { if let s { targetOfSource[s] = t } }

        // Rows, source side.
        func checkSource(_ path: RowPath, _ what: String) throws(BatchViolation) {
            guard path.section >= 0 && path.section < sourceSections else {
                throw BatchViolation(.sectionOutOfRange, "\(what) \(path): \(sourceSections) sections before")
            }
            guard !deletedSections.contains(path.section) else {
                throw BatchViolation(.rowInDeletedSection, "\(what) \(path) in deleted section \(path.section)")
            }
            guard path.row >= 0 && path.row < before[path.section] else {
                throw BatchViolation(
                    .rowOutOfRange, "\(what) \(path): section \(path.section) has \(before[path.section]) rows before")
            }
        }
        var rowCounts = sourceOf.map { s in s.map { before[$0] } ?? 0 }
        for insert in stage.sectionInserts { rowCounts[insert.index] = insert.section.rows.count }
        var removedRows = Set<RowPath>()
        for path in stage.rowDeletes {
            try checkSource(path, "delete of row")
            guard removedRows.insert(path).inserted else {
                throw BatchViolation(.duplicateRow, "row \(path) deleted twice")
            }
            rowCounts[targetOfSource[path.section]] -= 1
        }
        for move in stage.rowMoves {
            try checkSource(move.from, "move of row")
            guard removedRows.insert(move.from).inserted else {
                throw BatchViolation(.duplicateRow, "row \(move.from) deleted or moved twice")
            }
            rowCounts[targetOfSource[move.from.section]] -= 1
        }
        var reloaded = Set<RowPath>()
        for update in stage.rowUpdates {
            try checkSource(update.path, "reload of row")
            guard !removedRows.contains(update.path) else {
                throw BatchViolation(.deleteAndReload, "row \(update.path) reloaded and deleted or moved")
            }
            guard reloaded.insert(update.path).inserted else {
                throw BatchViolation(.duplicateRow, "row \(update.path) reloaded twice")
            }
        }

        // Rows, target side.
        func checkTargetSection(_ path: RowPath, _ what: String) throws(BatchViolation) {
            guard path.section >= 0 && path.section < targetSections else {
                throw BatchViolation(.sectionOutOfRange, "\(what) \(path): \(targetSections) sections after")
            }
            guard !inserted.contains(path.section) else {
                throw BatchViolation(.rowIntoInsertedSection, "\(what) \(path) in inserted section \(path.section)")
            }
        }
        for insert in stage.rowInserts {
            try checkTargetSection(insert.path, "insert of row")
            rowCounts[insert.path.section] += 1
        }
        for move in stage.rowMoves {
            try checkTargetSection(move.to, "move of row to")
            rowCounts[move.to.section] += 1
        }
        var filled = Set<RowPath>()
        for path in stage.rowInserts.lazy.map(\.path) + stage.rowMoves.lazy.map(\.to) {
            guard path.row >= 0 && path.row < rowCounts[path.section] else {
                throw BatchViolation(
                    .rowOutOfRange,
                    "insert or move to \(path): section \(path.section) has \(rowCounts[path.section]) rows after")
            }
            guard filled.insert(path).inserted else {
                throw BatchViolation(.duplicateRow, "row \(path) inserted or moved to twice")
            }
        }
        for update in stage.supplementaryUpdates {
            guard update.section >= 0 && update.section < targetSections else {
                throw BatchViolation(
                    .sectionOutOfRange,
                    "\(update.element) update of section \(update.section), \(targetSections) sections after")
            }
        }
        return Target(sourceOf: sourceOf, rowCounts: rowCounts)
    }
}
