import Testing
@_spi(Simulation) import UIKit

/// One random change of an array-of-arrays data source, and the UIKit calls that describe
/// it, derived independently of the stand-in's resolver: every section or row whose index
/// changed is moved explicitly, so that kept ones keep their index (see `RandomBatch.make`).
struct RandomBatch {
    var newSections: [[String]]
    var sectionDeletes = IndexSet(), sectionInserts = IndexSet(), sectionReloads = IndexSet()
    var sectionMoves: [(Int, Int)] = []
    var rowDeletes: [IndexPath] = [], rowInserts: [IndexPath] = [], rowReloads: [IndexPath] = []
    var rowMoves: [(IndexPath, IndexPath)] = []
    /// Sections whose rows carry over (neither inserted nor reloaded), new and old indexes.
    var carriedNewSections: [Int] = []
    var carriedOldSections: [Int] = []

    /// Section identities are "S<n>", row identities unique strings; `ids` lists each old
    /// section's identity.
    static func make(
        old: [[String]], ids: [String], nextID: inout Int, using generator: inout SeededGenerator
    ) -> (RandomBatch, [String]) {
        // Sections: delete some, shuffle a little, insert some, reload some kept in place.
        var order = Array(old.indices)
        for index in order.indices.reversed() where order.count > 1 && Int.random(in: 0..<8, using: &generator) == 0 {
            order.remove(at: index)
        }
        if order.count > 1 && Int.random(in: 0..<3, using: &generator) == 0 {
            let moved = order.remove(at: Int.random(in: 0..<order.count, using: &generator))
            order.insert(moved, at: Int.random(in: 0...order.count, using: &generator))
        }
        var newIDs: [String] = order.map { ids[$0] }
        var newOrigin: [Int?] = order.map { $0 }
        for _ in 0..<(Int.random(in: 0..<6, using: &generator) == 0 ? Int.random(in: 1...2, using: &generator) : 0) {
            let at = Int.random(in: 0...newIDs.count, using: &generator)
            nextID += 1
            newIDs.insert("S\(nextID)", at: at)
            newOrigin.insert(nil, at: at)
        }
        var batch = RandomBatch(newSections: [])
        let kept = Set(order)
        for s in old.indices where !kept.contains(s) { batch.sectionDeletes.insert(s) }
        for (j, origin) in newOrigin.enumerated() {
            guard let s = origin else {
                batch.sectionInserts.insert(j)
                continue
            }
            if s != j { batch.sectionMoves.append((s, j)) }
        }
        // Reload a few sections that stay at their index.
        var reloaded = Set<Int>()
        for (j, origin) in newOrigin.enumerated() where origin == j && Int.random(in: 0..<10, using: &generator) == 0 {
            reloaded.insert(j)
            batch.sectionReloads.insert(j)
        }
        /// Sections whose rows carry over: kept or moved, not reloaded.
        func carried(_ j: Int) -> Bool { newOrigin[j] != nil && !reloaded.contains(j) }

        // Rows: start from the carried sections' rows, edit them.
        var content: [[String]] = newOrigin.enumerated().map { j, origin in
            guard let s = origin else { return [] }
            if reloaded.contains(j) {
                return (0..<Int.random(in: 0...4, using: &generator)).map { _ in
                    nextID += 1
                    return "n\(nextID)"
                }
            }
            return old[s]
        }
        let carriedSections = content.indices.filter(carried)
        for _ in 0..<Int.random(in: 0...6, using: &generator) {
            guard let j = carriedSections.randomElement(using: &generator) else { break }
            switch Int.random(in: 0..<4, using: &generator) {
            case 0:
                nextID += 1
                content[j].insert("n\(nextID)", at: Int.random(in: 0...content[j].count, using: &generator))
            case 1 where !content[j].isEmpty:
                content[j].remove(at: Int.random(in: 0..<content[j].count, using: &generator))
            case 2 where !content[j].isEmpty:
                let row = content[j].remove(at: Int.random(in: 0..<content[j].count, using: &generator))
                let k = carriedSections.randomElement(using: &generator)!
                content[k].insert(row, at: Int.random(in: 0...content[k].count, using: &generator))
            default:
                break
            }
        }
        // Rows of inserted sections are new.
        for (j, origin) in newOrigin.enumerated() where origin == nil {
            content[j] = (0..<Int.random(in: 0...3, using: &generator)).map { _ in
                nextID += 1
                return "n\(nextID)"
            }
        }
        batch.newSections = content
        batch.carriedNewSections = content.indices.filter(carried)
        batch.carriedOldSections = batch.carriedNewSections.compactMap { newOrigin[$0] }

        // Calls: old and new index paths of every row of carried sections.
        var oldPath: [String: IndexPath] = [:]
        for (s, rows) in old.enumerated() {
            for (r, row) in rows.enumerated() { oldPath[row] = IndexPath(row: r, section: s) }
        }
        let newSectionOfOld = Dictionary(
            uniqueKeysWithValues: newOrigin.enumerated().compactMap { j, s in s.map { ($0, j) } })
        func oldCarried(_ s: Int) -> Bool { newSectionOfOld[s].map(carried) ?? false }
        var newPath: [String: IndexPath] = [:]
        for (j, rows) in content.enumerated() {
            for (r, row) in rows.enumerated() { newPath[row] = IndexPath(row: r, section: j) }
        }
        for (s, rows) in old.enumerated() where oldCarried(s) {
            for (r, row) in rows.enumerated() where newPath[row].map({ !carried($0.section) }) ?? true {
                batch.rowDeletes.append(IndexPath(row: r, section: s))
            }
        }
        for (j, rows) in content.enumerated() where carried(j) {
            for (r, row) in rows.enumerated() {
                let to = IndexPath(row: r, section: j)
                guard let from = oldPath[row], oldCarried(from.section) else {
                    batch.rowInserts.append(to)
                    continue
                }
                if newSectionOfOld[from.section] == j && from.row == r {
                    if Int.random(in: 0..<12, using: &generator) == 0 { batch.rowReloads.append(from) }
                } else {
                    batch.rowMoves.append((from, to))
                }
            }
        }
        return (batch, newIDs)
    }

    @MainActor
    func apply(to view: UICollectionView) {
        if !sectionDeletes.isEmpty { view.deleteSections(sectionDeletes) }
        if !sectionInserts.isEmpty { view.insertSections(sectionInserts) }
        if !sectionReloads.isEmpty { view.reloadSections(sectionReloads) }
        for (from, to) in sectionMoves { view.moveSection(from, toSection: to) }
        let item = { (path: IndexPath) in IndexPath(item: path.row, section: path.section) }
        if !rowDeletes.isEmpty { view.deleteItems(at: rowDeletes.map(item)) }
        if !rowInserts.isEmpty { view.insertItems(at: rowInserts.map(item)) }
        if !rowReloads.isEmpty { view.reloadItems(at: rowReloads.map(item)) }
        for (from, to) in rowMoves { view.moveItem(at: item(from), to: item(to)) }
    }

    @MainActor
    func apply(to table: UITableView) {
        if !sectionDeletes.isEmpty { table.deleteSections(sectionDeletes, with: .fade) }
        if !sectionInserts.isEmpty { table.insertSections(sectionInserts, with: .fade) }
        if !sectionReloads.isEmpty { table.reloadSections(sectionReloads, with: .none) }
        for (from, to) in sectionMoves { table.moveSection(from, toSection: to) }
        if !rowDeletes.isEmpty { table.deleteRows(at: rowDeletes, with: .fade) }
        if !rowInserts.isEmpty { table.insertRows(at: rowInserts, with: .fade) }
        if !rowReloads.isEmpty { table.reloadRows(at: rowReloads, with: .none) }
        for (from, to) in rowMoves { table.moveRow(at: from, to: to) }
    }
}

@MainActor
@Suite("UITableView: seeded property tests", .timeLimit(.minutes(1)))
struct TablePropertyTests {
    @Test(arguments: [UInt64(1), 2, 3])
    func thousandsOfRandomValidBatchesPassAndTheTableShowsTheData(seed: UInt64) {
        var generator = SeededGenerator(seed: seed)
        var nextID = 0
        let initial: [[String]] = (0..<3).map { s in
            (0..<5).map { _ in
                nextID += 1
                return "n\(nextID)"
            }
        }
        var ids = (0..<3).map { "S\($0)" }
        nextID += 10
        let source = ArrayTable(initial)
        let table = makeTable(source, height: 300)
        for round in 0..<1_000 {
            let (batch, newIDs) = RandomBatch.make(old: source.sections, ids: ids, nextID: &nextID, using: &generator)
            table.performBatchUpdates {
                source.sections = batch.newSections
                batch.apply(to: table)
            }
            ids = newIDs
            if !table.simulationFailures.isEmpty || !shownMatchesData(table, source) {
                Issue.record(
                    "seed \(seed) round \(round): \(table.simulationFailures) shown \(table.simulatedRowCounts) data \(source.sections.map(\.count))"
                )
                return
            }
            if round % 50 == 0 {
                table.simulateScroll(to: CGPoint(x: 0, y: CGFloat(Int.random(in: 0...200, using: &generator))))
            }
            // Now and then the user drags a row in editing mode: the table moves it, the
            // data source follows, and the next batches are validated against that state.
            if round % 7 == 3,
                let s = source.sections.indices.filter({ !source.sections[$0].isEmpty }).randomElement(
                    using: &generator)
            {
                table.setEditing(true, animated: false)
                let from = IndexPath(row: Int.random(in: 0..<source.sections[s].count, using: &generator), section: s)
                let t = Int.random(in: 0..<source.sections.count, using: &generator)
                let limit = source.sections[t].count - (t == s ? 1 : 0)
                table.simulateMove(
                    from: from, to: IndexPath(row: Int.random(in: 0...max(0, limit), using: &generator), section: t))
                table.setEditing(false, animated: false)
                if !table.simulationFailures.isEmpty || !shownMatchesData(table, source) {
                    Issue.record("seed \(seed) round \(round) after a drag: \(table.simulationFailures)")
                    return
                }
            }
        }
    }

    @Test(arguments: [UInt64(21)])
    func randomValidBatchesOnACollectionView(seed: UInt64) {
        var generator = SeededGenerator(seed: seed)
        var nextID = 0
        let source = ArrayCollection(
            (0..<3).map { _ in
                (0..<8).map { _ in
                    nextID += 1
                    return "n\(nextID)"
                }
            })
        var ids = (0..<3).map { "S\($0)" }
        nextID += 10
        let view = makeCollection(source, height: 300)
        for round in 0..<1_000 {
            let (batch, newIDs) = RandomBatch.make(old: source.sections, ids: ids, nextID: &nextID, using: &generator)
            view.performBatchUpdates {
                source.sections = batch.newSections
                batch.apply(to: view)
            }
            ids = newIDs
            if !view.simulationFailures.isEmpty || !shownMatchesData(view, source.sections) {
                Issue.record("seed \(seed) round \(round): \(view.simulationFailures)")
                return
            }
        }
    }

    @Test(arguments: [UInt64(11), 12])
    func randomInvalidBatchesEachFailAndTheTableRecovers(seed: UInt64) {
        var generator = SeededGenerator(seed: seed)
        var nextID = 0
        let source = ArrayTable(
            (0..<3).map { _ in
                (0..<6).map { _ in
                    nextID += 1
                    return "n\(nextID)"
                }
            })
        var ids = (0..<3).map { "S\($0)" }
        nextID += 10
        let table = makeTable(source, height: 300)
        for round in 0..<500 {
            var (batch, newIDs) = RandomBatch.make(old: source.sections, ids: ids, nextID: &nextID, using: &generator)
            let old = source.sections
            // Corrupt the batch in one of several ways UIKit rejects.
            switch Int.random(in: 0..<6, using: &generator) {
            case 0:  // data changes that no call describes, in a section that existed before
                nextID += 1
                if let j = batch.carriedNewSections.randomElement(using: &generator) {
                    batch.newSections[j].append("n\(nextID)")
                } else {
                    batch.newSections.append([])
                }
            case 1:  // a delete past the rows before the update
                if let s = batch.carriedOldSections.randomElement(using: &generator) {
                    batch.rowDeletes.append(
                        IndexPath(row: old[s].count + Int.random(in: 0...3, using: &generator), section: s))
                } else {
                    batch.sectionDeletes.insert(old.count)
                }
            case 2:  // an insert past the sections after the update
                batch.rowInserts.append(
                    IndexPath(row: 0, section: batch.newSections.count + Int.random(in: 0...2, using: &generator)))
            case 3:  // a section deleted that the data keeps
                batch.sectionDeletes.insert(old.count + Int.random(in: 0...2, using: &generator))
            case 4:  // a row both deleted and moved
                guard let s = old.indices.first(where: { !old[$0].isEmpty }) else {
                    batch.sectionInserts.insert(99)
                    break
                }
                batch.rowDeletes.append(IndexPath(row: 0, section: s))
                batch.rowMoves.append((IndexPath(row: 0, section: s), IndexPath(row: 0, section: s)))
            default:  // the data's section count is off
                batch.newSections.append([])
            }
            table.simulationFailures = []
            table.performBatchUpdates {
                source.sections = batch.newSections
                batch.apply(to: table)
            }
            ids =
                newIDs
                + (newIDs.count < batch.newSections.count
                    ? (newIDs.count..<batch.newSections.count).map { "X\(round)-\($0)" } : [])
            ids = Array(ids.prefix(batch.newSections.count))
            if table.simulationFailures.count != 1 {
                Issue.record("seed \(seed) round \(round): expected one failure, got \(table.simulationFailures)")
                return
            }
            if !shownMatchesData(table, source) {
                Issue.record("seed \(seed) round \(round): the table did not recover from \(table.simulationFailures)")
                return
            }
            if source.sections.isEmpty {
                source.sections = [[]]
                ids = ["S-reset\(round)"]
                table.reloadData()
                table.layoutIfNeeded()
            }
        }
    }
}
