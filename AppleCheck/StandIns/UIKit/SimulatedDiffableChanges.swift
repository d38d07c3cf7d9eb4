import Foundation

// The change between two diffable snapshots, as batch-update calls on the view. Pure.
//
// UIKit documents what apply(_:animatingDifferences:completion:) achieves ("computes the
// difference between the collection view's current state and the new state in the
// snapshot … The differences in the UI … are animated"), not the calls it makes. The model
// emits calls that UIKit's own batch rules accept, and the simulated view validates them
// like any other batch, so a bug here shows up as a failure:
// - deleted sections/items: deletes at their old index paths; inserted: inserts at new;
// - sections and items kept in order where a longest increasing subsequence says so;
//   the others are moves (an item from a deleted or reloaded section, or into an inserted
//   or reloaded one, is an insert or a delete instead, as UIKit refuses such moves);
// - reloadSections/reloadItems for the snapshot's reloaded identifiers (a moved one is
//   deleted and inserted instead); reconfigureItems for reconfigured ones.

/// Indices (into `values`) of a longest strictly increasing subsequence. O(n log n).
func longestIncreasingSubsequence(_ values: [Int]) -> Set<Int> {
    var tails: [Int] = []  // indices into values
    var previous = [Int](repeating: -1, count: values.count)
    for (i, value) in values.enumerated() {
        var low = 0, high = tails.count
        while low < high {
            let mid = (low + high) / 2
            if values[tails[mid]] < value { low = mid + 1 } else { high = mid }
        }
        if low > 0 { previous[i] = tails[low - 1] }
        if low == tails.count { tails.append(i) } else { tails[low] = i }
    }
    var result = Set<Int>()
    var index = tails.last ?? -1
    while index >= 0 {
        result.insert(index)
        index = previous[index]
    }
    return result
}

func diffableChanges<S: Hashable, I: Hashable>(
    from old: NSDiffableDataSourceSnapshot<S, I>, to new: NSDiffableDataSourceSnapshot<S, I>
) -> [UpdateOperation] {
    var operations: [UpdateOperation] = []
    let oldSections = old.storedSections.map(\.identifier)
    let newSections = new.storedSections.map(\.identifier)
    var oldSectionIndex: [S: Int] = [:]
    for (i, s) in oldSections.enumerated() { oldSectionIndex[s] = i }
    var newSectionIndex: [S: Int] = [:]
    for (i, s) in newSections.enumerated() { newSectionIndex[s] = i }
    let reloadedSections = Set(new.storedReloadedSections)

    // Sections.
    var deletedSections = IndexSet(), insertedSections = IndexSet(), reloadSections = IndexSet()
    for (i, s) in oldSections.enumerated() where newSectionIndex[s] == nil { deletedSections.insert(i) }
    for (j, s) in newSections.enumerated() where oldSectionIndex[s] == nil { insertedSections.insert(j) }
    let commonInNewOrder = newSections.filter { oldSectionIndex[$0] != nil }
    let stay = longestIncreasingSubsequence(commonInNewOrder.map { oldSectionIndex[$0]! })
    /// Sections whose items carry over (kept or moved, not reloaded).
    var carried = Set<S>()
    for (k, s) in commonInNewOrder.enumerated() {
        let i = oldSectionIndex[s]!, j = newSectionIndex[s]!
        let moved = !stay.contains(k)
        if reloadedSections.contains(s) {
            if moved {
                deletedSections.insert(i)
                insertedSections.insert(j)
            } else {
                reloadSections.insert(i)
            }
        } else {
            carried.insert(s)
            if moved { operations.append(.moveSection(i, j)) }
        }
    }
    if !deletedSections.isEmpty { operations.append(.deleteSections(deletedSections)) }
    if !insertedSections.isEmpty { operations.append(.insertSections(insertedSections)) }
    if !reloadSections.isEmpty { operations.append(.reloadSections(reloadSections)) }

    // Items.
    var oldPath: [I: IndexPath] = [:]
    for (s, section) in old.storedSections.enumerated() {
        for (r, item) in section.items.enumerated() { oldPath[item] = IndexPath(item: r, section: s) }
    }
    var newPath: [I: IndexPath] = [:]
    for (s, section) in new.storedSections.enumerated() {
        for (r, item) in section.items.enumerated() { newPath[item] = IndexPath(item: r, section: s) }
    }
    let reloadedItems = Set(new.storedReloadedItems)
    var deletes: [IndexPath] = [], inserts: [IndexPath] = [], reloads: [IndexPath] = [], reconfigures: [IndexPath] = []
    var moves: [(IndexPath, IndexPath)] = []

    // Items that stay in the same carried section keep their order along an LIS.
    var staying: Set<I> = []
    for section in new.storedSections where carried.contains(section.identifier) {
        let oldIndex = oldSectionIndex[section.identifier]!
        let sameSection = section.items.filter { oldPath[$0]?.section == oldIndex }
        let keep = longestIncreasingSubsequence(sameSection.map { oldPath[$0]!.item })
        for (k, item) in sameSection.enumerated() where keep.contains(k) { staying.insert(item) }
    }

    for (s, section) in old.storedSections.enumerated() where carried.contains(section.identifier) {
        for (r, item) in section.items.enumerated() where newPath[item] == nil {
            deletes.append(IndexPath(item: r, section: s))
        }
    }
    for (s, section) in new.storedSections.enumerated() {
        let newCarried = carried.contains(section.identifier)
        for (r, item) in section.items.enumerated() {
            let to = IndexPath(item: r, section: s)
            guard let from = oldPath[item] else {
                if newCarried { inserts.append(to) }
                continue
            }
            let oldCarried = carried.contains(oldSections[from.section])
            switch (oldCarried, newCarried) {
            case (false, false):
                continue  // both sides subsumed by section updates
            case (false, true):
                inserts.append(to)
            case (true, false):
                deletes.append(from)
            case (true, true):
                let moved = !staying.contains(item)
                if reloadedItems.contains(item) {
                    if moved {
                        deletes.append(from)
                        inserts.append(to)
                    } else {
                        reloads.append(from)
                    }
                } else if moved {
                    moves.append((from, to))
                }
            }
        }
    }
    for item in new.storedReconfiguredItems where !reloadedItems.contains(item) {
        guard let from = oldPath[item], let to = newPath[item],
            carried.contains(oldSections[from.section]), carried.contains(newSections[to.section])
        else { continue }
        reconfigures.append(from)
    }
    if !deletes.isEmpty { operations.append(.deleteRows(deletes)) }
    if !inserts.isEmpty { operations.append(.insertRows(inserts)) }
    if !reloads.isEmpty { operations.append(.reloadRows(reloads)) }
    for (from, to) in moves { operations.append(.moveRow(from, to)) }
    if !reconfigures.isEmpty { operations.append(.reconfigureRows(reconfigures)) }
    return operations
}
