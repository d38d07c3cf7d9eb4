import Testing
@_spi(Simulation) import UIKit

@MainActor
@Suite("UICollectionViewDiffableDataSource and NSDiffableDataSourceSnapshot", .timeLimit(.minutes(1)))
struct DiffableDataSourceTests {
    @MainActor
    final class Harness {
        let view: UICollectionView
        let dataSource: UICollectionViewDiffableDataSource<String, String>

        init(layout: Bool = true) {
            view = UICollectionView(
                frame: CGRect(x: 0, y: 0, width: 320, height: 480), collectionViewLayout: UICollectionViewFlowLayout())
            view.register(LabelCell.self, forCellWithReuseIdentifier: "Label")
            let registration = UICollectionView.CellRegistration<LabelCell, String> { cell, _, item in
                cell.text = item
            }
            dataSource = UICollectionViewDiffableDataSource<String, String>(collectionView: view) {
                collectionView, indexPath, item in
                return collectionView.dequeueConfiguredReusableCell(using: registration, for: indexPath, item: item)
            }
            if layout { view.layoutIfNeeded() }
        }

        func shown() -> [[String]] {
            let snapshot = dataSource.snapshot()
            return snapshot.sectionIdentifiers.map { snapshot.itemIdentifiers(inSection: $0) }
        }
    }

    static func snapshot(_ sections: [(String, [String])]) -> NSDiffableDataSourceSnapshot<String, String> {
        var snapshot = NSDiffableDataSourceSnapshot<String, String>()
        for (section, items) in sections {
            snapshot.appendSections([section])
            snapshot.appendItems(items, toSection: section)
        }
        return snapshot
    }

    @Test func snapshotBasics() {
        var snapshot = Self.snapshot([("A", ["a1", "a2"]), ("B", ["b1"])])
        #expect(snapshot.numberOfSections == 2)
        #expect(snapshot.numberOfItems == 3)
        #expect(snapshot.itemIdentifiers == ["a1", "a2", "b1"])
        #expect(snapshot.numberOfItems(inSection: "A") == 2)
        #expect(snapshot.sectionIdentifier(containingItem: "b1") == "B")
        #expect(snapshot.indexOfItem("b1") == 2)
        snapshot.appendItems(["b2"])
        #expect(snapshot.itemIdentifiers(inSection: "B") == ["b1", "b2"])
        snapshot.insertItems(["a0"], beforeItem: "a1")
        snapshot.moveItem("b2", afterItem: "a0")
        snapshot.deleteItems(["a2"])
        snapshot.moveSection("B", beforeSection: "A")
        #expect(snapshot.sectionIdentifiers == ["B", "A"])
        #expect(snapshot.itemIdentifiers == ["b1", "a0", "b2", "a1"])
        snapshot.reconfigureItems(["a1"])
        snapshot.reloadSections(["B"])
        #expect(snapshot.reconfiguredItemIdentifiers == ["a1"])
        #expect(snapshot.reloadedSectionIdentifiers == ["B"])
    }

    @Test func misusesAreReportedWithUIKitsMessageWhenApplied() {
        let harness = Harness()
        var snapshot = NSDiffableDataSourceSnapshot<String, String>()
        snapshot.appendItems(["x"])
        snapshot.appendSections(["A"])
        snapshot.appendItems(["a", "a"])
        harness.dataSource.apply(snapshot)
        #expect(
            harness.view.simulationFailures == [
                "There are currently no sections in the data source. Please add a section first.",
                "Fatal: supplied item identifiers are not unique. Duplicate identifiers: {(a)}",
            ])
    }

    @Test func applyBeforeTheViewLoadsReloads() {
        let harness = Harness(layout: false)
        harness.dataSource.apply(Self.snapshot([("A", ["a", "b"])]))
        #expect(!harness.view.simulatedIsLoaded)
        harness.view.layoutIfNeeded()
        #expect(harness.view.simulatedItemCounts == [2])
        #expect(shownMatchesData(harness.view, harness.shown()))
    }

    @Test func applyComputesABatchThatKeepsCellsAndAsksForNewOnes() throws {
        let harness = Harness()
        harness.dataSource.apply(Self.snapshot([("A", ["a", "b", "c"]), ("B", ["d"])]))
        #expect(harness.view.simulationFailures.isEmpty)
        let cellB = harness.view.simulatedCell(at: IndexPath(item: 1, section: 0))
        harness.dataSource.apply(Self.snapshot([("B", ["d", "b"]), ("A", ["c", "new", "a"])]))
        #expect(harness.view.simulationFailures.isEmpty)
        #expect(harness.view.simulatedItemCounts == [2, 3])
        #expect(harness.view.simulatedCell(at: IndexPath(item: 1, section: 0)) === cellB)
        #expect(shownMatchesData(harness.view, harness.shown()))
        #expect(harness.dataSource.itemIdentifier(for: IndexPath(item: 1, section: 1)) == "new")
        #expect(harness.dataSource.indexPath(for: "a") == IndexPath(item: 2, section: 1))
    }

    @Test func reconfigureKeepsTheCellAndReloadReplacesIt() {
        let harness = Harness()
        harness.dataSource.apply(Self.snapshot([("A", ["a", "b"])]))
        let cellA = harness.view.simulatedCell(at: IndexPath(item: 0, section: 0)) as? LabelCell
        let cellB = harness.view.simulatedCell(at: IndexPath(item: 1, section: 0))
        var snapshot = harness.dataSource.snapshot()
        snapshot.reconfigureItems(["a"])
        snapshot.reloadItems(["b"])
        harness.dataSource.apply(snapshot)
        #expect(harness.view.simulationFailures.isEmpty)
        #expect(harness.view.simulatedCell(at: IndexPath(item: 0, section: 0)) === cellA)
        #expect(cellA?.reuseCount == 0)
        #expect(harness.view.simulatedCell(at: IndexPath(item: 1, section: 0)) !== cellB)
    }

    @Test func randomSnapshotsApplyWithoutFailures() {
        let harness = Harness()
        var generator = SeededGenerator(seed: 0xD1FF)
        var nextItem = 0
        var sections: [(String, [String])] = []
        for round in 0..<400 {
            // Random edit of the section list and of the items.
            if sections.isEmpty || Int.random(in: 0..<6, using: &generator) == 0 {
                sections.insert(("S\(round)", []), at: Int.random(in: 0...sections.count, using: &generator))
            }
            if sections.count > 1 && Int.random(in: 0..<8, using: &generator) == 0 {
                sections.remove(at: Int.random(in: 0..<sections.count, using: &generator))
            }
            if sections.count > 1 && Int.random(in: 0..<5, using: &generator) == 0 {
                let moved = sections.remove(at: Int.random(in: 0..<sections.count, using: &generator))
                sections.insert(moved, at: Int.random(in: 0...sections.count, using: &generator))
            }
            for _ in 0..<Int.random(in: 0..<6, using: &generator) {
                let s = Int.random(in: 0..<sections.count, using: &generator)
                switch Int.random(in: 0..<3, using: &generator) {
                case 0:
                    nextItem += 1
                    sections[s].1.insert("i\(nextItem)", at: Int.random(in: 0...sections[s].1.count, using: &generator))
                case 1 where !sections[s].1.isEmpty:
                    sections[s].1.remove(at: Int.random(in: 0..<sections[s].1.count, using: &generator))
                default:
                    guard !sections[s].1.isEmpty else { continue }
                    let item = sections[s].1.remove(at: Int.random(in: 0..<sections[s].1.count, using: &generator))
                    let t = Int.random(in: 0..<sections.count, using: &generator)
                    sections[t].1.insert(item, at: Int.random(in: 0...sections[t].1.count, using: &generator))
                }
            }
            var snapshot = Self.snapshot(sections)
            let all = snapshot.itemIdentifiers
            if !all.isEmpty && Int.random(in: 0..<3, using: &generator) == 0 {
                snapshot.reconfigureItems([all[Int.random(in: 0..<all.count, using: &generator)]])
            }
            if !all.isEmpty && Int.random(in: 0..<4, using: &generator) == 0 {
                snapshot.reloadItems([all[Int.random(in: 0..<all.count, using: &generator)]])
            }
            if Int.random(in: 0..<6, using: &generator) == 0 {
                snapshot.reloadSections([sections[Int.random(in: 0..<sections.count, using: &generator)].0])
            }
            harness.dataSource.apply(snapshot, animatingDifferences: round % 2 == 0)
            #expect(harness.view.simulationFailures.isEmpty, "round \(round): \(harness.view.simulationFailures)")
            #expect(shownMatchesData(harness.view, sections.map(\.1)), "round \(round)")
            if !harness.view.simulationFailures.isEmpty { break }
        }
    }
}
