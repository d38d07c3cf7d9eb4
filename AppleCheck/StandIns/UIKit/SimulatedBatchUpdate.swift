import Foundation

// The pure core of the simulated table and collection views: a batch of updates as the
// view records it, and its resolution against the counts before and after, with UIKit's
// validation rules. No views here: the views feed it counts and apply what it returns.
//
// Sources of the rules (each cited again where it is applied):
// - /documentation/UIKit/UITableView/performBatchUpdates(_:completion:) and
//   /documentation/UIKit/UICollectionView/performBatchUpdates(_:completion:): "Deletes are
//   processed before inserts in batch operations. This means the indexes for the deletions
//   are processed relative to the indexes of the collection view's state before the batch
//   operation, and the indexes for the insertions are processed relative to the indexes of
//   the state after all the deletions in the batch operation."
// - Table View Programming Guide for iOS, "Batch Insertion, Deletion, and Reloading of Rows
//   and Sections": reloads are index paths before the update ("UITableView defers any
//   insertions … until after it has handled the deletions … reloads … are treated as
//   deletes followed by inserts"), and the count check that produces "Invalid update:
//   invalid number of rows in section …".
// - /documentation/UIKit/UITableView/moveRow(at:to:): the source is an index path before
//   the update, the destination one after it.

/// The words UIKit uses in its messages for one kind of view.
struct ListVocabulary: Sendable {
    /// "row" or "item".
    let element: String
    /// "rows" or "items".
    let elements: String
    /// "table view" or "collection view".
    let container: String

    static let table = ListVocabulary(element: "row", elements: "rows", container: "table view")
    static let collection = ListVocabulary(element: "item", elements: "items", container: "collection view")
}

/// One update call recorded inside a batch (or alone: a call outside a batch is a batch of one).
enum UpdateOperation: Equatable, Sendable {
    case insertSections(IndexSet)
    case deleteSections(IndexSet)
    case reloadSections(IndexSet)
    case moveSection(Int, Int)
    case insertRows([IndexPath])
    case deleteRows([IndexPath])
    case reloadRows([IndexPath])
    case moveRow(IndexPath, IndexPath)
    case reconfigureRows([IndexPath])
}

/// Where a section of the state after the update comes from.
enum SectionOrigin: Equatable, Sendable {
    /// An existing section (at this old index), kept or moved: its rows carry over.
    case kept(Int)
    /// A section inserted by the update: all its rows are new.
    case inserted
    /// An existing section reloaded by the update: all its rows are asked again.
    case reloaded(Int)
}

/// Where a row of the state after the update comes from.
enum RowOrigin: Equatable, Sendable {
    /// The row at this old index path, kept (shifted) or moved: its cell carries over.
    case kept(IndexPath)
    /// The row at this old index path, reloaded: its cell is asked again.
    case reloaded(IndexPath)
    /// A new row.
    case inserted
}

/// A valid batch, resolved: the state after the update and where each part comes from.
struct UpdateResolution: Sendable {
    var sections: [SectionOrigin]
    var rows: [[RowOrigin]]
    /// Rows to reconfigure, at their index paths after the update.
    var reconfigured: [IndexPath]
    /// Old index path → new index path of every row that still exists (kept, moved or reloaded).
    var newPathByOldPath: [IndexPath: IndexPath]
    /// Old section → new section of every section that still exists (kept, moved or reloaded).
    var newSectionByOldSection: [Int: Int]

    var counts: [Int] { rows.map(\.count) }
}

/// A batch UIKit would reject, with UIKit's message.
struct UpdateFailure: Error, Sendable, Equatable {
    let message: String
}

/// Resolves `operations` against the state before (`oldCounts`) and the counts the data
/// source reports after the update block.
///
/// Checks, in this order (the first failure is reported, as UIKit raises on the first):
/// 1. (strict mode only) no section or row named twice by the same kind of call — UIKit
///    does not document what that does;
/// 2. deletes, reloads and move sources of sections are within the sections before;
///    a section is not both deleted and reloaded, nor deleted/reloaded and moved; a section
///    is not the source or the destination of two moves, nor inserted and moved to;
/// 3. section count after == before + inserted − deleted;
/// 4. inserts and move destinations of sections are within the sections after;
/// 5. row deletes, reloads and move sources are within the rows before (rows of deleted or
///    reloaded sections are subsumed by the section update); no row both deleted and
///    reloaded, deleted and moved, reloaded and moved, or moved twice; no move out of a
///    deleted or reloaded section, or into an inserted or reloaded one; no row both
///    inserted at and moved to the same index path;
/// 6. for every section that existed before: rows after == rows before + inserted −
///    deleted + moved in − moved out; inserts and move destinations within the rows after.
///
/// - Complexity: O(sections + rows + operations); asks `newRowCount` once per section after.
func resolveUpdate(
    _ operations: [UpdateOperation],
    oldCounts: [Int],
    newSectionCount: Int,
    newRowCount: (Int) -> Int,
    vocabulary v: ListVocabulary,
    strict: Bool
) -> Result<UpdateResolution, UpdateFailure> {
    func fail(_ message: String) -> Result<UpdateResolution, UpdateFailure> {
        .failure(UpdateFailure(message: message))
    }
    let n0 = oldCounts.count

    var sectionDeletes: [Int] = [], sectionInserts: [Int] = [], sectionReloads: [Int] = []
    var sectionMoves: [(from: Int, to: Int)] = []
    var rowDeletes: [IndexPath] = [], rowInserts: [IndexPath] = [], rowReloads: [IndexPath] = []
    var rowMoves: [(from: IndexPath, to: IndexPath)] = []
    var reconfigures: [IndexPath] = []
    for operation in operations {
        switch operation {
        case .insertSections(let set): sectionInserts += set
        case .deleteSections(let set): sectionDeletes += set
        case .reloadSections(let set): sectionReloads += set
        case .moveSection(let from, let to): sectionMoves.append((from, to))
        case .insertRows(let paths): rowInserts += paths
        case .deleteRows(let paths): rowDeletes += paths
        case .reloadRows(let paths): rowReloads += paths
        case .moveRow(let from, let to): rowMoves.append((from, to))
        case .reconfigureRows(let paths): reconfigures += paths
        }
    }

    // 1. Repeats UIKit does not document (strict mode).
    if strict {
        func firstRepeat<T: Hashable>(_ values: [T]) -> T? {
            var seen = Set<T>()
            for value in values where !seen.insert(value).inserted { return value }
            return nil
        }
        let undocumented = "Invalid update (stand-in: UIKit does not document this):"
        if let s = firstRepeat(sectionReloads) {
            return fail("\(undocumented) section \(s) is reloaded more than once in one batch")
        }
        if let s = firstRepeat(sectionDeletes) {
            return fail("\(undocumented) section \(s) is deleted more than once in one batch")
        }
        if let s = firstRepeat(sectionInserts) {
            return fail("\(undocumented) section \(s) is inserted more than once in one batch")
        }
        if let p = firstRepeat(rowReloads) {
            return fail(
                "\(undocumented) \(v.element) \(p.row) in section \(p.section) is reloaded more than once in one batch")
        }
        if let p = firstRepeat(rowDeletes) {
            return fail(
                "\(undocumented) \(v.element) \(p.row) in section \(p.section) is deleted more than once in one batch")
        }
        if let p = firstRepeat(rowInserts) {
            return fail(
                "\(undocumented) \(v.element) \(p.row) in section \(p.section) is inserted more than once in one batch")
        }
        if let p = firstRepeat(reconfigures) {
            return fail(
                "\(undocumented) \(v.element) \(p.row) in section \(p.section) is reconfigured more than once in one batch"
            )
        }
    }
    let deletedSections = Set(sectionDeletes), insertedSections = Set(sectionInserts),
        reloadedSections = Set(sectionReloads)

    // 2. Sections before the update.
    for s in sectionDeletes.sorted() where s >= n0 || s < 0 {
        return fail("attempt to delete section \(s), but there are only \(n0) sections before the update")
    }
    for s in sectionReloads.sorted() where s >= n0 || s < 0 {
        return fail("attempt to reload section \(s), but there are only \(n0) sections before the update")
    }
    for move in sectionMoves where move.from >= n0 || move.from < 0 {
        return fail("attempt to move section \(move.from), but there are only \(n0) sections before the update")
    }
    for s in sectionReloads.sorted() where deletedSections.contains(s) {
        return fail("attempt to delete and reload the same section (\(s))")
    }
    var moveSources = Set<Int>(), moveDestinations = Set<Int>()
    for move in sectionMoves {
        if deletedSections.contains(move.from) {
            return fail("attempt to perform a delete and a move from the same section (\(move.from))")
        }
        if reloadedSections.contains(move.from) {
            return fail("attempt to perform a reload and a move from the same section (\(move.from))")
        }
        if !moveSources.insert(move.from).inserted {
            return fail("attempt to move section \(move.from) more than once")
        }
        if insertedSections.contains(move.to) {
            return fail("attempt to perform an insert and a move to the same section (\(move.to))")
        }
        if !moveDestinations.insert(move.to).inserted {
            return fail("attempt to move more than one section to section \(move.to)")
        }
    }

    // 3. The section count.
    let expectedSections = n0 - deletedSections.count + insertedSections.count
    if newSectionCount != expectedSections {
        return fail(
            "Invalid update: invalid number of sections. The number of sections contained in the \(v.container) after the update (\(newSectionCount)) must be equal to the number of sections contained in the \(v.container) before the update (\(n0)), plus or minus the number of sections inserted or deleted (\(insertedSections.count) inserted, \(deletedSections.count) deleted)."
        )
    }
    let n1 = newSectionCount

    // 4. Sections after the update.
    for s in sectionInserts.sorted() where s >= n1 || s < 0 {
        return fail("attempt to insert section \(s) but there are only \(n1) sections after the update")
    }
    for move in sectionMoves where move.to >= n1 || move.to < 0 {
        return fail(
            "attempt to move section \(move.from) to section \(move.to), but there are only \(n1) sections after the update"
        )
    }

    // The sections after: inserts and move destinations are fixed; the other old
    // sections keep their order in the free places.
    var sections = [SectionOrigin?](repeating: nil, count: n1)
    for s in insertedSections { sections[s] = .inserted }
    for move in sectionMoves { sections[move.to] = .kept(move.from) }
    var freeSlots = (0..<n1).filter { sections[$0] == nil }.makeIterator()
    for s in 0..<n0 where !deletedSections.contains(s) && !moveSources.contains(s) {
        guard let slot = freeSlots.next() else {
            return fail("Internal inconsistency in the stand-in's batch model: no place for section \(s)")
        }
        sections[slot] = reloadedSections.contains(s) ? .reloaded(s) : .kept(s)
    }
    let sectionOrigins = sections.map { $0 ?? .inserted }
    var newSectionByOldSection: [Int: Int] = [:]
    for (j, origin) in sectionOrigins.enumerated() {
        switch origin {
        case .kept(let s), .reloaded(let s): newSectionByOldSection[s] = j
        case .inserted: break
        }
    }
    /// Rows of an old section are subsumed when the section is deleted or reloaded.
    func oldSectionSubsumed(_ s: Int) -> Bool { deletedSections.contains(s) || reloadedSections.contains(s) }
    func newSectionIsNew(_ j: Int) -> Bool {
        if case .kept = sectionOrigins[j] { return false }
        return true
    }
    func describe(_ p: IndexPath) -> String { "<NSIndexPath> {length = 2, path = \(p.section) - \(p.row)}" }

    // 5. Rows before the update.
    var deletedRows = Set<IndexPath>(), reloadedRows = Set<IndexPath>()
    for p in rowDeletes {
        guard p.section < n0, p.section >= 0 else {
            return fail(
                "attempt to delete \(v.element) \(p.row) from section \(p.section), but there are only \(n0) sections before the update"
            )
        }
        if oldSectionSubsumed(p.section) { continue }
        guard p.row < oldCounts[p.section], p.row >= 0 else {
            return fail(
                "attempt to delete \(v.element) \(p.row) from section \(p.section) which only contains \(oldCounts[p.section]) \(v.elements) before the update"
            )
        }
        deletedRows.insert(p)
    }
    // UIKit treats a reload as a delete and an insert: an out-of-range reload is reported as a delete.
    for p in rowReloads {
        guard p.section < n0, p.section >= 0 else {
            return fail(
                "attempt to delete \(v.element) \(p.row) from section \(p.section), but there are only \(n0) sections before the update"
            )
        }
        if oldSectionSubsumed(p.section) { continue }
        guard p.row < oldCounts[p.section], p.row >= 0 else {
            return fail(
                "attempt to delete \(v.element) \(p.row) from section \(p.section) which only contains \(oldCounts[p.section]) \(v.elements) before the update"
            )
        }
        if deletedRows.contains(p) { return fail("attempt to delete and reload the same index path (\(describe(p)))") }
        reloadedRows.insert(p)
    }
    var movedFrom: [IndexPath: IndexPath] = [:], movedTo: [IndexPath: IndexPath] = [:]
    for move in rowMoves {
        let (from, to) = move
        guard from.section < n0, from.section >= 0 else {
            return fail(
                "attempt to move \(v.element) \(from.row) from section \(from.section), but there are only \(n0) sections before the update"
            )
        }
        if oldSectionSubsumed(from.section) {
            return fail(
                "attempt to move \(v.element) \(from.row) out of section \(from.section), which is deleted or reloaded in the same update"
            )
        }
        guard from.row < oldCounts[from.section], from.row >= 0 else {
            return fail(
                "attempt to move \(v.element) \(from.row) from section \(from.section) which only contains \(oldCounts[from.section]) \(v.elements) before the update"
            )
        }
        if deletedRows.contains(from) {
            return fail("attempt to perform a delete and a move from the same index path (\(describe(from)))")
        }
        if reloadedRows.contains(from) {
            return fail("attempt to perform a reload and a move from the same index path (\(describe(from)))")
        }
        if movedFrom[from] != nil { return fail("attempt to move index path (\(describe(from))) more than once") }
        guard to.section < n1, to.section >= 0 else {
            return fail(
                "attempt to move \(v.element) \(from.row) to section \(to.section), but there are only \(n1) sections after the update"
            )
        }
        if newSectionIsNew(to.section) {
            return fail("cannot move a \(v.element) into a newly inserted section (\(to.section))")
        }
        if movedTo[to] != nil {
            return fail("attempt to move more than one \(v.element) to the same index path (\(describe(to)))")
        }
        movedFrom[from] = to
        movedTo[to] = from
    }
    var insertedRows = Set<IndexPath>()
    for p in rowInserts {
        guard p.section < n1, p.section >= 0 else {
            return fail(
                "attempt to insert \(v.element) \(p.row) into section \(p.section), but there are only \(n1) sections after the update"
            )
        }
        if newSectionIsNew(p.section) { continue }
        if movedTo[p] != nil {
            return fail("attempt to perform an insert and a move to the same index path (\(describe(p)))")
        }
        insertedRows.insert(p)
    }

    // 6. Rows after the update, section by section.
    var rows: [[RowOrigin]] = []
    rows.reserveCapacity(n1)
    var newPathByOldPath: [IndexPath: IndexPath] = [:]
    for j in 0..<n1 {
        let actual = newRowCount(j)
        guard case .kept(let s) = sectionOrigins[j] else {
            rows.append([RowOrigin](repeating: .inserted, count: max(actual, 0)))
            continue
        }
        let before = oldCounts[s]
        let inserted = insertedRows.filter { $0.section == j }
        let deleted = deletedRows.filter { $0.section == s }.count
        let movesOut = movedFrom.filter { $0.key.section == s && $0.value.section != j }.count
        let movesIn = movedTo.filter { $0.key.section == j && $0.value.section != s }.count
        for p in inserted.sorted() where p.row >= actual || p.row < 0 {
            return fail(
                "attempt to insert \(v.element) \(p.row) into section \(j), but there are only \(actual) \(v.elements) in section \(j) after the update"
            )
        }
        for (to, from) in movedTo.sorted(by: { $0.key < $1.key })
        where to.section == j && (to.row >= actual || to.row < 0) {
            return fail(
                "attempt to move \(v.element) \(from.row) from section \(from.section) to \(v.element) \(to.row) in section \(j), but there are only \(actual) \(v.elements) in section \(j) after the update"
            )
        }
        let expected = before + inserted.count - deleted + movesIn - movesOut
        if actual != expected {
            return fail(
                "Invalid update: invalid number of \(v.elements) in section \(j). The number of \(v.elements) contained in an existing section after the update (\(actual)) must be equal to the number of \(v.elements) contained in that section before the update (\(before)), plus or minus the number of \(v.elements) inserted or deleted from that section (\(inserted.count) inserted, \(deleted) deleted) and plus or minus the number of \(v.elements) moved into or out of that section (\(movesIn) moved in, \(movesOut) moved out)."
            )
        }
        var slots = [RowOrigin?](repeating: nil, count: actual)
        for p in inserted { slots[p.row] = .inserted }
        for (to, from) in movedTo where to.section == j {
            slots[to.row] = .kept(from)
            newPathByOldPath[from] = to
        }
        var free = (0..<actual).filter { slots[$0] == nil }.makeIterator()
        for r in 0..<before {
            let old = IndexPath(row: r, section: s)
            if deletedRows.contains(old) || movedFrom[old] != nil { continue }
            guard let slot = free.next() else {
                return fail(
                    "Internal inconsistency in the stand-in's batch model: no place for \(v.element) \(r) of section \(s)"
                )
            }
            slots[slot] = reloadedRows.contains(old) ? .reloaded(old) : .kept(old)
            newPathByOldPath[old] = IndexPath(row: slot, section: j)
        }
        rows.append(slots.map { $0 ?? .inserted })
    }

    // Reconfigured rows: index paths before the update (like reloads), mapped to after.
    var reconfigured: [IndexPath] = []
    for p in reconfigures {
        guard p.section < n0, p.section >= 0, p.row >= 0, p.row < oldCounts[p.section] else {
            return fail(
                "attempt to reconfigure \(v.element) \(p.row) in section \(p.section), which does not exist before the update"
            )
        }
        if let new = newPathByOldPath[p], !reloadedRows.contains(p) { reconfigured.append(new) }
    }

    return .success(
        UpdateResolution(
            sections: sectionOrigins, rows: rows, reconfigured: reconfigured,
            newPathByOldPath: newPathByOldPath, newSectionByOldSection: newSectionByOldSection
        ))
}
