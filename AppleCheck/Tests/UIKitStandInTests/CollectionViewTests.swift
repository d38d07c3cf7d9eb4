import Testing
@_spi(Simulation) import UIKit

private func ip(_ section: Int, _ item: Int) -> IndexPath { IndexPath(item: item, section: section) }

@MainActor
final class LabelCell: UICollectionViewCell {
    var text: String?
    var reuseCount = 0
    override func prepareForReuse() {
        super.prepareForReuse()
        reuseCount += 1
    }
}

@MainActor
final class HeaderView: UICollectionReusableView {
    var title: String?
}

/// An array-of-arrays collection data source and flow-layout delegate that logs its calls.
@MainActor
final class ArrayCollection: NSObject, UICollectionViewDataSource, UICollectionViewDelegateFlowLayout,
    UICollectionViewDataSourcePrefetching
{
    var sections: [[String]]
    var log: [String] = []
    var sizes: ((IndexPath) -> CGSize)?
    var headerHeight: CGFloat = 0
    var canMove: (IndexPath) -> Bool = { _ in true }
    var retarget: ((IndexPath, IndexPath, IndexPath) -> IndexPath)?
    var shouldSelect: (IndexPath) -> Bool = { _ in true }

    init(_ sections: [[String]]) { self.sections = sections }

    func numberOfSections(in collectionView: UICollectionView) -> Int { sections.count }

    func collectionView(_ collectionView: UICollectionView, numberOfItemsInSection section: Int) -> Int {
        sections[section].count
    }

    func collectionView(_ collectionView: UICollectionView, cellForItemAt indexPath: IndexPath) -> UICollectionViewCell
    {
        log.append("cellForItem(\(indexPath.section)-\(indexPath.item))")
        let cell = collectionView.dequeueReusableCell(withReuseIdentifier: "Label", for: indexPath)
        (cell as? LabelCell)?.text = sections[indexPath.section][indexPath.item]
        return cell
    }

    func collectionView(
        _ collectionView: UICollectionView, viewForSupplementaryElementOfKind kind: String, at indexPath: IndexPath
    ) -> UICollectionReusableView {
        log.append(
            "supplementary(\(kind == UICollectionView.elementKindSectionHeader ? "header" : kind), \(indexPath.section))"
        )
        let view = collectionView.dequeueReusableSupplementaryView(
            ofKind: kind, withReuseIdentifier: "Header", for: indexPath)
        (view as? HeaderView)?.title = "Section \(indexPath.section)"
        return view
    }

    func collectionView(_ collectionView: UICollectionView, canMoveItemAt indexPath: IndexPath) -> Bool {
        log.append("canMove(\(indexPath.section)-\(indexPath.item))")
        return canMove(indexPath)
    }

    func collectionView(
        _ collectionView: UICollectionView, moveItemAt sourceIndexPath: IndexPath, to destinationIndexPath: IndexPath
    ) {
        log.append(
            "moveItem(\(sourceIndexPath.section)-\(sourceIndexPath.item) -> \(destinationIndexPath.section)-\(destinationIndexPath.item))"
        )
        let item = sections[sourceIndexPath.section].remove(at: sourceIndexPath.item)
        sections[destinationIndexPath.section].insert(item, at: destinationIndexPath.item)
    }

    func collectionView(
        _ collectionView: UICollectionView,
        targetIndexPathForMoveOfItemFromOriginalIndexPath originalIndexPath: IndexPath,
        atCurrentIndexPath currentIndexPath: IndexPath, toProposedIndexPath proposedIndexPath: IndexPath
    ) -> IndexPath {
        log.append("target(\(originalIndexPath.item), \(currentIndexPath.item), \(proposedIndexPath.item))")
        return retarget.map { $0(originalIndexPath, currentIndexPath, proposedIndexPath) } ?? proposedIndexPath
    }

    func collectionView(
        _ collectionView: UICollectionView, layout collectionViewLayout: UICollectionViewLayout,
        sizeForItemAt indexPath: IndexPath
    ) -> CGSize {
        sizes?(indexPath) ?? (collectionViewLayout as! UICollectionViewFlowLayout).itemSize
    }

    func collectionView(
        _ collectionView: UICollectionView, layout collectionViewLayout: UICollectionViewLayout,
        referenceSizeForHeaderInSection section: Int
    ) -> CGSize {
        CGSize(width: 0, height: headerHeight)
    }

    func collectionView(_ collectionView: UICollectionView, shouldSelectItemAt indexPath: IndexPath) -> Bool {
        log.append("shouldSelect(\(indexPath.item))")
        return shouldSelect(indexPath)
    }

    func collectionView(_ collectionView: UICollectionView, didSelectItemAt indexPath: IndexPath) {
        log.append("didSelect(\(indexPath.item))")
    }
    func collectionView(_ collectionView: UICollectionView, didDeselectItemAt indexPath: IndexPath) {
        log.append("didDeselect(\(indexPath.item))")
    }
    func collectionView(
        _ collectionView: UICollectionView, willDisplay cell: UICollectionViewCell, forItemAt indexPath: IndexPath
    ) { log.append("willDisplay(\(indexPath.section)-\(indexPath.item))") }
    func collectionView(
        _ collectionView: UICollectionView, didEndDisplaying cell: UICollectionViewCell, forItemAt indexPath: IndexPath
    ) { log.append("didEndDisplaying(\(indexPath.section)-\(indexPath.item))") }
    func collectionView(
        _ collectionView: UICollectionView, willDisplaySupplementaryView view: UICollectionReusableView,
        forElementKind elementKind: String, at indexPath: IndexPath
    ) { log.append("willDisplaySupplementary(\(indexPath.section))") }
    func collectionView(_ collectionView: UICollectionView, prefetchItemsAt indexPaths: [IndexPath]) {
        log.append("prefetch(\(indexPaths.count))")
    }

    func calls(_ prefix: String) -> [String] { log.filter { $0.hasPrefix(prefix) } }
}

@MainActor
func makeCollection(
    _ source: ArrayCollection, layout: UICollectionViewLayout = UICollectionViewFlowLayout(), width: CGFloat = 320,
    height: CGFloat = 480
) -> UICollectionView {
    let view = UICollectionView(frame: CGRect(x: 0, y: 0, width: width, height: height), collectionViewLayout: layout)
    view.register(LabelCell.self, forCellWithReuseIdentifier: "Label")
    view.register(
        HeaderView.self, forSupplementaryViewOfKind: UICollectionView.elementKindSectionHeader,
        withReuseIdentifier: "Header")
    view.dataSource = source
    view.delegate = source
    view.layoutIfNeeded()
    return view
}

@MainActor
func shownMatchesData(_ view: UICollectionView, _ sections: [[String]]) -> Bool {
    guard view.simulatedItemCounts == sections.map(\.count) else { return false }
    return view.simulatedVisibleIndexPaths.allSatisfy { path in
        (view.simulatedCell(at: path) as? LabelCell)?.text == sections[path.section][path.item]
    }
}

@MainActor
@Suite("UICollectionView: flow layout, supplementary views, updates, selection, movement", .timeLimit(.minutes(1)))
struct CollectionViewTests {
    @Test func flowLayoutPlacesItemsInLinesWithSpacingAndInsets() {
        let source = ArrayCollection([rows(10)])
        let layout = UICollectionViewFlowLayout()
        layout.itemSize = CGSize(width: 100, height: 50)
        layout.minimumInteritemSpacing = 10
        layout.minimumLineSpacing = 20
        layout.sectionInset = UIEdgeInsets(top: 5, left: 0, bottom: 5, right: 0)
        let view = makeCollection(source, layout: layout)
        // 3 per line: 0, 110, 220 (+100 = 320).
        #expect(view.simulatedFrame(ofItemAt: ip(0, 2)) == CGRect(x: 220, y: 5, width: 100, height: 50))
        #expect(view.simulatedFrame(ofItemAt: ip(0, 3)) == CGRect(x: 0, y: 75, width: 100, height: 50))
        #expect(view.contentSize.height == CGFloat(270))  // 5 + 4 lines of 50 + 3 gaps of 20 + 5
        #expect(view.simulatedVisibleIndexPaths.count == 10)
        #expect(shownMatchesData(view, source.sections))
    }

    @Test func theDelegatesSizeWinsOverItemSize() {
        let source = ArrayCollection([rows(4)])
        source.sizes = { $0.item == 0 ? CGSize(width: 320, height: 200) : CGSize(width: 150, height: 60) }
        let view = makeCollection(source)
        #expect(view.simulatedFrame(ofItemAt: ip(0, 0))?.size == CGSize(width: 320, height: 200))
        #expect(view.simulatedFrame(ofItemAt: ip(0, 1)) == CGRect(x: 0, y: 210, width: 150, height: 60))
        #expect(view.simulatedFrame(ofItemAt: ip(0, 2)) == CGRect(x: 160, y: 210, width: 150, height: 60))
    }

    @Test func automaticSizeUsesTheCellsOwnSizeOnceShown() {
        let source = ArrayCollection([rows(3)])
        let layout = UICollectionViewFlowLayout()
        layout.itemSize = CGSize(width: 320, height: 30)
        layout.estimatedItemSize = UICollectionViewFlowLayout.automaticSize
        let view = makeCollection(source, layout: layout)
        #expect(view.simulatedFrame(ofItemAt: ip(0, 1))?.height == 30)  // cells give no size: the estimate
        var content = UIListContentConfiguration.cell()
        content.text = "Hello"
        view.simulatedCell(at: ip(0, 0))?.contentConfiguration = content
        view.setNeedsLayout()
        view.layoutIfNeeded()
        #expect(view.simulatedFrame(ofItemAt: ip(0, 0))?.height == 44)
        #expect(view.simulatedFrame(ofItemAt: ip(0, 1))?.minY == 54)
    }

    @Test func horizontalFlowScrollsAcross() {
        let source = ArrayCollection([rows(20)])
        let layout = UICollectionViewFlowLayout()
        layout.scrollDirection = .horizontal
        layout.itemSize = CGSize(width: 100, height: 100)
        let view = makeCollection(source, layout: layout, width: 320, height: 210)
        // Two per column (0, 110), columns every 110 points.
        #expect(view.simulatedFrame(ofItemAt: ip(0, 1)) == CGRect(x: 0, y: 110, width: 100, height: 100))
        #expect(view.simulatedFrame(ofItemAt: ip(0, 2)) == CGRect(x: 110, y: 0, width: 100, height: 100))
        #expect(view.simulatedVisibleIndexPaths.count == 6)
    }

    @Test func headersComeFromTheDataSourceForVisibleSections() {
        let source = ArrayCollection([rows(3), rows(3, "s"), rows(30, "t")])
        source.headerHeight = 40
        let view = makeCollection(source)
        #expect(
            source.calls("supplementary") == [
                "supplementary(header, 0)", "supplementary(header, 1)", "supplementary(header, 2)",
            ])
        #expect(
            (view.supplementaryView(forElementKind: UICollectionView.elementKindSectionHeader, at: ip(1, 0))
                as? HeaderView)?.title == "Section 1")
        #expect(
            view.indexPathsForVisibleSupplementaryElements(ofKind: UICollectionView.elementKindSectionHeader) == [
                ip(0, 0), ip(1, 0), ip(2, 0),
            ])
        view.simulateScroll(to: CGPoint(x: 0, y: 600))
        #expect(view.visibleSupplementaryViews(ofKind: UICollectionView.elementKindSectionHeader).isEmpty)
    }

    @Test func updatesUseItemsInTheirMessages() {
        let source = ArrayCollection([rows(4)])
        let view = makeCollection(source)
        source.sections[0].append("x")
        view.performBatchUpdates(nil)
        #expect(
            view.simulationFailures == [
                "Invalid update: invalid number of items in section 0. The number of items contained in an existing section after the update (5) must be equal to the number of items contained in that section before the update (4), plus or minus the number of items inserted or deleted from that section (0 inserted, 0 deleted) and plus or minus the number of items moved into or out of that section (0 moved in, 0 moved out)."
            ])
        view.simulationFailures = []
        view.performBatchUpdates {
            source.sections.append([])
        }
        #expect(
            view.simulationFailures == [
                "Invalid update: invalid number of sections. The number of sections contained in the collection view after the update (2) must be equal to the number of sections contained in the collection view before the update (1), plus or minus the number of sections inserted or deleted (0 inserted, 0 deleted)."
            ])
        #expect(shownMatchesData(view, source.sections))
    }

    @Test func aValidBatchMovesCellsAndAsksForInsertedItems() {
        let source = ArrayCollection([rows(6)])
        let view = makeCollection(source)
        let moved = view.simulatedCell(at: ip(0, 5))
        source.log = []
        view.performBatchUpdates {
            let last = source.sections[0].removeLast()
            source.sections[0].insert(last, at: 0)
            source.sections[0].append("new")
            view.moveItem(at: ip(0, 5), to: ip(0, 0))
            view.insertItems(at: [ip(0, 6)])
        }
        #expect(view.simulationFailures.isEmpty)
        #expect(view.simulatedCell(at: ip(0, 0)) === moved)
        #expect(source.calls("cellForItem") == ["cellForItem(0-6)"])
        #expect(shownMatchesData(view, source.sections))
    }

    @Test func unregisteredCellsAndCellsNotDequeuedAreFailures() {
        final class Bare: NSObject, UICollectionViewDataSource {
            func collectionView(_ collectionView: UICollectionView, numberOfItemsInSection section: Int) -> Int { 2 }
            func collectionView(
                _ collectionView: UICollectionView, cellForItemAt indexPath: IndexPath
            ) -> UICollectionViewCell {
                indexPath.item == 0
                    ? collectionView.dequeueReusableCell(withReuseIdentifier: "Nope", for: indexPath)
                    : UICollectionViewCell(frame: .zero)
            }
        }
        let source = Bare()
        let view = UICollectionView(
            frame: CGRect(x: 0, y: 0, width: 320, height: 480), collectionViewLayout: UICollectionViewFlowLayout())
        view.dataSource = source
        view.layoutIfNeeded()
        #expect(
            view.simulationFailures == [
                "could not dequeue a view of kind: UICollectionElementKindCell with identifier Nope - must register a nib or a class for the identifier or connect a prototype cell in a storyboard",
                "the cell returned from -collectionView:cellForItemAtIndexPath: does not have a reuseIdentifier - cells must be retrieved by calling -dequeueReusableCellWithReuseIdentifier:forIndexPath:",
            ])
    }

    @Test func selectionAsksShouldSelectAndDeselectsThePreviousItem() {
        let source = ArrayCollection([rows(4)])
        let view = makeCollection(source)
        source.shouldSelect = { $0.item != 3 }
        source.log = []
        #expect(view.simulateTap(at: ip(0, 1)) == ip(0, 1))
        #expect(view.simulateTap(at: ip(0, 3)) == nil)
        #expect(view.simulateTap(at: ip(0, 2)) == ip(0, 2))
        #expect(
            source.log == [
                "shouldSelect(1)", "didSelect(1)", "shouldSelect(3)", "shouldSelect(2)", "didDeselect(1)",
                "didSelect(2)",
            ])
        #expect(view.indexPathsForSelectedItems == [ip(0, 2)])
        #expect(view.simulatedCell(at: ip(0, 2))?.isSelected == true)
    }

    @Test func interactiveMovementAsksCanMoveRetargetsMovesTheCellThenTellsTheDataSource() {
        let source = ArrayCollection([rows(6)])
        let view = makeCollection(source)
        let cell = view.simulatedCell(at: ip(0, 0))
        source.log = []
        source.retarget = { _, _, proposed in IndexPath(item: min(proposed.item, 3), section: 0) }
        #expect(view.beginInteractiveMovementForItem(at: ip(0, 0)))
        #expect(view.hasUncommittedUpdates)
        let target = view.simulatedFrame(ofItemAt: ip(0, 5))!
        view.updateInteractiveMovementTargetPosition(CGPoint(x: target.midX, y: target.midY))
        #expect(view.simulatedCell(at: ip(0, 3)) === cell)
        #expect(source.calls("moveItem").isEmpty)
        view.endInteractiveMovement()
        #expect(source.log == ["canMove(0-0)", "target(0, 0, 5)", "moveItem(0-0 -> 0-3)"])
        #expect(!view.hasUncommittedUpdates)
        #expect(source.calls("cellForItem").isEmpty)
        #expect(shownMatchesData(view, source.sections))
    }

    @Test func cancelledMovementPutsTheItemBackWithoutTellingTheDataSource() {
        let source = ArrayCollection([rows(4)])
        let view = makeCollection(source)
        #expect(view.beginInteractiveMovementForItem(at: ip(0, 0)))
        let target = view.simulatedFrame(ofItemAt: ip(0, 2))!
        view.updateInteractiveMovementTargetPosition(CGPoint(x: target.midX, y: target.midY))
        view.cancelInteractiveMovement()
        #expect(source.calls("moveItem").isEmpty)
        #expect(shownMatchesData(view, source.sections))
        source.canMove = { _ in false }
        #expect(!view.beginInteractiveMovementForItem(at: ip(0, 0)))
    }

    @Test func listLayoutSwipeActionsComeFromTheConfigurationsProviders() throws {
        let source = ArrayCollection([rows(3)])
        var configuration = UICollectionLayoutListConfiguration(appearance: .insetGrouped)
        var asked: [IndexPath] = []
        var performed = false
        configuration.trailingSwipeActionsConfigurationProvider = { path in
            asked.append(path)
            return UISwipeActionsConfiguration(actions: [
                UIContextualAction(style: .destructive, title: "Delete") { _, _, done in
                    performed = true
                    done(true)
                }
            ])
        }
        configuration.headerMode = .supplementary
        let view = makeCollection(source, layout: UICollectionViewCompositionalLayout.list(using: configuration))
        #expect(view.simulatedFrame(ofItemAt: ip(0, 0)) == CGRect(x: 0, y: 44, width: 320, height: 44))
        #expect(view.simulateSwipe(.leading, at: ip(0, 1)) == nil)
        let actions = try #require(view.simulateSwipe(.trailing, at: ip(0, 1)))
        #expect(asked == [ip(0, 1)])
        view.simulatePerform(actions.actions[0])
        #expect(performed)
        #expect(view.simulatedOpenSwipeIndexPath == nil)
    }

    @Test func prefetchingReachesThePrefetchDataSource() {
        let source = ArrayCollection([rows(100)])
        let layout = UICollectionViewFlowLayout()
        let view = UICollectionView(frame: CGRect(x: 0, y: 0, width: 320, height: 480), collectionViewLayout: layout)
        view.register(LabelCell.self, forCellWithReuseIdentifier: "Label")
        view.dataSource = source
        view.prefetchDataSource = source
        view.layoutIfNeeded()
        #expect(!source.calls("prefetch").isEmpty)
        #expect(!view.simulatedPrefetchedIndexPaths.isEmpty)
        #expect(Set(view.simulatedPrefetchedIndexPaths).isDisjoint(with: view.simulatedVisibleIndexPaths))
    }
}
