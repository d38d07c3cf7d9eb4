/// Changes expressed only in the coordinates of the old and the final state, before
/// they are split into UIKit stages. Both the incremental tracker and the diff produce
/// this; ``assemble(final:)`` does the staging for both, so the two paths cannot drift.
struct RawChanges {
    /// Deleted sections, old indices.
    var sectionDeletes: [Int] = []
    /// Inserted sections, final indices.
    var sectionInserts: [Int] = []
    /// Moved sections, old → final index.
    var sectionMoves: [SectionMove] = []
    /// Header/footer changes of surviving sections, final index.
    var supplementary: [(section: Int, header: Bool, footer: Bool)] = []
    /// Deleted rows (of surviving sections), old paths.
    var rowDeletes: [RowPath] = []
    /// Inserted rows (into surviving sections), final paths.
    var rowInserts: [RowPath] = []
    /// Moved rows between surviving sections: old path, final path, and the final
    /// index of the row's old section.
    var rowMoves: [(from: RowPath, to: RowPath, fromSectionFinal: Int)] = []
    /// Reloaded rows: old path, final path.
    var rowUpdates: [(old: RowPath, new: RowPath)] = []

    /// Splits the changes into stages (DifferenceKit's order).
    ///
    /// Coordinates per stage: updates and deletes use old positions (the update stage
    /// changes no structure); section moves start from the state after the deletes;
    /// row moves start from the state after the section stage, in which every
    /// surviving section already sits at its final index and holds its old rows minus
    /// the deleted ones, in old order.
    /// - Complexity: O(c log c) for c changes.
    func assemble(final: Director) -> Changeset {
        var updates = ChangesetStage()
        updates.rowUpdates =
            rowUpdates
            .map { RowAtPath(path: $0.old, row: final[$0.new]) }
            .sorted { $0.path < $1.path }

        var deletes = ChangesetStage()
        deletes.sectionDeletes = sectionDeletes.sorted()
        deletes.rowDeletes = rowDeletes.sorted()

        var sectionStage = ChangesetStage()
        sectionStage.sectionInserts = sectionInserts.sorted()
            .map { SectionInsert(index: $0, section: final.sections[$0]) }
        sectionStage.sectionMoves = sectionMoves.map {
            SectionMove(from: $0.from - deletes.sectionDeletes.countLess(than: $0.from), to: $0.to)
        }.sorted { $0.to < $1.to }

        var rowStage = ChangesetStage()
        rowStage.rowInserts = rowInserts.sorted().map { RowAtPath(path: $0, row: final[$0]) }
        if !rowMoves.isEmpty {
            // Deleted rows per old section, sorted, to shift move sources past them.
            var deletedBySection: [Int: [Int]] = [:]
            for path in deletes.rowDeletes { deletedBySection[path.section, default: []].append(path.row) }
            rowStage.rowMoves = rowMoves.map { move in
                let shift = deletedBySection[move.from.section]?.countLess(than: move.from.row) ?? 0
                return RowMove(from: RowPath(section: move.fromSectionFinal, row: move.from.row - shift), to: move.to)
            }.sorted { $0.to < $1.to }
        }

        var supplementaryStage = ChangesetStage()
        for change in supplementary.sorted(by: { $0.section < $1.section }) {
            let section = final.sections[change.section]
            if change.header {
                supplementaryStage.supplementaryUpdates.append(
                    SupplementaryUpdate(section: change.section, element: .header, value: section.header))
            }
            if change.footer {
                supplementaryStage.supplementaryUpdates.append(
                    SupplementaryUpdate(section: change.section, element: .footer, value: section.footer))
            }
        }
        return Changeset(stages: [updates, deletes, sectionStage, rowStage, supplementaryStage])
    }
}

extension Array where Element == Int {
    /// In a sorted array, how many elements are less than `value` (binary search).
    func countLess(than value: Int) -> Int {
        var lo = 0, hi = count
        while lo < hi {
            let mid = (lo + hi) / 2
            if self[mid] < value { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }
}
