import Testing
@_spi(Simulation) import UIKit

private func ip(_ section: Int, _ row: Int) -> IndexPath { IndexPath(row: row, section: section) }

@MainActor
@Suite("UITableView: selection, swipe actions, editing, reorder, prefetch", .timeLimit(.minutes(1)))
struct TableInteractionTests {
    @Test func aTapGoesThroughHighlightWillSelectAndDidSelect() {
        let source = ArrayTable([rows(5)])
        let table = makeTable(source)
        source.log = []
        #expect(table.simulateTap(at: ip(0, 2)) == ip(0, 2))
        #expect(source.log == ["shouldHighlight(0-2)", "willSelect(0-2)", "didSelect(0-2)"])
        #expect(table.indexPathForSelectedRow == ip(0, 2))
        #expect(table.simulatedCell(at: ip(0, 2))?.isSelected == true)
    }

    @Test func singleSelectionDeselectsThePreviousRowBetweenWillSelectAndDidSelect() {
        let source = ArrayTable([rows(5)])
        let table = makeTable(source)
        table.simulateTap(at: ip(0, 1))
        source.log = []
        table.simulateTap(at: ip(0, 3))
        #expect(
            source.log == [
                "shouldHighlight(0-3)", "willSelect(0-3)", "willDeselect(0-1)", "didDeselect(0-1)", "didSelect(0-3)",
            ])
        #expect(table.indexPathsForSelectedRows == [ip(0, 3)])
    }

    @Test func willSelectCanCancelOrRedirect() {
        let source = ArrayTable([rows(5)])
        let table = makeTable(source)
        source.willSelect = { $0.row == 0 ? nil : ip(0, 4) }
        #expect(table.simulateTap(at: ip(0, 0)) == nil)
        #expect(table.indexPathForSelectedRow == nil)
        #expect(table.simulateTap(at: ip(0, 1)) == ip(0, 4))
        #expect(source.log.last == "didSelect(0-4)")
    }

    @Test func noHighlightNoSelectionAndSelectionSettingsAreRespected() {
        let source = ArrayTable([rows(3)])
        let table = makeTable(source)
        source.shouldHighlight = { _ in false }
        #expect(table.simulateTap(at: ip(0, 0)) == nil)
        #expect(source.calls("willSelect").isEmpty)
        source.shouldHighlight = { _ in true }
        table.allowsSelection = false
        #expect(table.simulateTap(at: ip(0, 0)) == nil)
        table.allowsSelection = true
        table.setEditing(true, animated: false)
        #expect(table.simulateTap(at: ip(0, 0)) == nil)  // allowsSelectionDuringEditing is false
        table.allowsSelectionDuringEditing = true
        #expect(table.simulateTap(at: ip(0, 0)) == ip(0, 0))
    }

    @Test func multipleSelectionTogglesRows() {
        let source = ArrayTable([rows(3)])
        let table = makeTable(source)
        table.allowsMultipleSelection = true
        table.simulateTap(at: ip(0, 0))
        table.simulateTap(at: ip(0, 2))
        #expect(table.indexPathsForSelectedRows == [ip(0, 0), ip(0, 2)])
        table.simulateTap(at: ip(0, 0))
        #expect(table.indexPathsForSelectedRows == [ip(0, 2)])
        #expect(source.log.suffix(2) == ["willDeselect(0-0)", "didDeselect(0-0)"])
    }

    @Test func selectionFollowsItsRowThroughUpdates() {
        let source = ArrayTable([rows(4)])
        let table = makeTable(source)
        table.simulateTap(at: ip(0, 2))
        source.sections[0].insert("new", at: 0)
        table.insertRows(at: [ip(0, 0)], with: .none)
        #expect(table.indexPathForSelectedRow == ip(0, 3))
        source.sections[0].remove(at: 3)
        table.deleteRows(at: [ip(0, 3)], with: .none)
        #expect(table.indexPathForSelectedRow == nil)
    }

    @Test func trailingSwipeWithoutActionsGivesUIKitsDefaultDeleteWhichCommits() throws {
        let source = ArrayTable([rows(4)])
        let table = makeTable(source)
        source.log = []
        let configuration = try #require(table.simulateSwipe(.trailing, at: ip(0, 1)))
        #expect(source.log == ["canEdit(0-1)", "willBeginEditing(0-1)", "trailingSwipe(0-1)"])
        #expect(table.isEditing)  // "the table view sets its isEditing property to true"
        let delete = try #require(configuration.actions.first)
        #expect(delete.title == "Delete")
        #expect(delete.style == .destructive)
        var completed: Bool?
        table.simulatePerform(delete) { completed = $0 }
        #expect(completed == true)
        let afterCommit = Array(source.log.drop { $0 != "commit(delete, 0-1)" })
        #expect(afterCommit.first == "commit(delete, 0-1)")
        #expect(afterCommit.suffix(2) == ["didEndDisplaying(0-1)", "didEndEditing(nil)"])
        #expect(source.sections[0] == ["r0", "r2", "r3"])
        #expect(table.simulationFailures.isEmpty)
        #expect(!table.isEditing)
        #expect(shownMatchesData(table, source))
    }

    @Test func theDefaultDeleteActsOnTheRowWhereItIsNowAfterARemoteInsert() throws {
        let source = ArrayTable([rows(4)])
        let table = makeTable(source)
        let delete = try #require(table.simulateSwipe(.trailing, at: ip(0, 2))?.actions.first)
        // A remote change inserts a row above while the swipe is open.
        source.sections[0].insert("remote", at: 0)
        table.insertRows(at: [ip(0, 0)], with: .none)
        #expect(table.simulatedOpenSwipeIndexPath == ip(0, 3))
        table.simulatePerform(delete)
        #expect(source.sections[0] == ["remote", "r0", "r1", "r3"])
        #expect(shownMatchesData(table, source))
    }

    @Test func aDeletedRowClosesItsOpenSwipe() throws {
        let source = ArrayTable([rows(3)])
        let table = makeTable(source)
        _ = try #require(table.simulateSwipe(.trailing, at: ip(0, 1)))
        source.sections[0].remove(at: 1)
        table.deleteRows(at: [ip(0, 1)], with: .none)
        #expect(table.simulatedOpenSwipeIndexPath == nil)
        #expect(source.log.last == "didEndEditing(nil)")
    }

    @Test func customActionsRunTheirHandlerWithTheCellAndEndTheSwipe() throws {
        let source = ArrayTable([rows(3)])
        let table = makeTable(source)
        var ran: (String?, UIView?)?
        source.leadingActions = { _ in
            UISwipeActionsConfiguration(actions: [
                UIContextualAction(style: .normal, title: "Pin") { action, view, done in
                    ran = (action.title, view)
                    done(true)
                }
            ])
        }
        let configuration = try #require(table.simulateSwipe(.leading, at: ip(0, 0)))
        table.simulatePerform(configuration.actions[0])
        #expect(ran?.0 == "Pin")
        #expect(ran?.1 === table.simulatedCell(at: ip(0, 0)))
        #expect(source.log.last == "didEndEditing(0-0)")
        #expect(table.simulateSwipe(.trailing, at: ip(0, 0)) != nil)
        source.canEdit = { _ in false }
        table.simulateEndSwipe()
        #expect(table.simulateSwipe(.trailing, at: ip(0, 0)) == nil)
    }

    @Test func editModeDeleteCommits() {
        let source = ArrayTable([rows(3)])
        let table = makeTable(source)
        #expect(!table.simulateCommitEditing(.delete, forRowAt: ip(0, 0)))  // not editing
        table.setEditing(true, animated: false)
        #expect(table.simulatedCell(at: ip(0, 0))?.isEditing == true)
        #expect(table.simulateCommitEditing(.delete, forRowAt: ip(0, 0)))
        #expect(source.sections[0] == ["r1", "r2"])
        #expect(shownMatchesData(table, source))
    }

    @Test func reorderAsksCanMoveThenTargetThenMovesTheCellThenTellsTheDataSource() {
        let source = ArrayTable([rows(3), rows(2, "s")])
        let table = makeTable(source)
        table.setEditing(true, animated: false)
        let cell = table.simulatedCell(at: ip(0, 0))
        source.log = []
        source.retarget = { _, proposed in ip(1, proposed.row) }
        #expect(table.simulateMove(from: ip(0, 0), to: ip(0, 2)) == ip(1, 2))
        #expect(
            source.log == [
                "canMove(0-0)", "targetIndexPath(0-0 -> 0-2)",
                "moveRow(0-0 -> 1-2, uncommitted: true)",
            ])
        #expect(table.simulatedCell(at: ip(1, 2)) === cell)
        #expect(!table.hasUncommittedUpdates)
        #expect(table.simulatedRowCounts == [2, 3])
        #expect(table.simulatedDisagreementsWithDataSource().isEmpty)
        #expect(shownMatchesData(table, source))
        // A later batch is validated against the moved state.
        source.sections[1].append("x")
        table.insertRows(at: [ip(1, 3)], with: .none)
        #expect(table.simulationFailures.isEmpty)
    }

    @Test func reorderIsRefusedOutsideEditingOrWhenTheRowCannotMove() {
        let source = ArrayTable([rows(3)])
        let table = makeTable(source)
        #expect(table.simulateMove(from: ip(0, 0), to: ip(0, 1)) == nil)
        table.setEditing(true, animated: false)
        source.canMove = { _ in false }
        #expect(table.simulateMove(from: ip(0, 0), to: ip(0, 1)) == nil)
        #expect(source.calls("moveRow").isEmpty)
    }

    @Test func aDataSourceThatIgnoresTheMoveIsCaughtByTheNextBatch() {
        let source = ArrayTable([rows(2), rows(2, "s")])
        let table = makeTable(source)
        table.setEditing(true, animated: false)
        source.retarget = { _, _ in ip(1, 0) }
        source.onCommitDelete = nil
        // Simulate a data source that does not update itself on moveRowAt.
        let frozen = source.sections
        table.simulateMove(from: ip(0, 0), to: ip(0, 1))
        source.sections = frozen
        #expect(
            table.simulatedDisagreementsWithDataSource() == [
                "section 0: table shows 1 rows, data source has 2",
                "section 1: table shows 3 rows, data source has 2",
            ])
        table.performBatchUpdates(nil)
        source.sections[0].append("x")
        table.insertRows(at: [ip(0, 1)], with: .none)
        #expect(table.simulationFailures.count == 1)
    }

    @Test func prefetchAsksForTheNextScreenfulAndCancelsWhenScrollingBack() {
        let source = ArrayTable([rows(60)])
        let table = makeTable(source, layout: false)
        table.prefetchDataSource = source
        table.layoutIfNeeded()
        #expect(source.calls("prefetch(") == ["prefetch(" + (10..<20).map { "0-\($0)" }.joined(separator: ",") + ")"])
        source.log = []
        table.simulateScroll(to: CGPoint(x: 0, y: 220))  // rows 5...14 visible, 15...24 next
        #expect(source.calls("prefetch(") == ["prefetch(" + (20..<25).map { "0-\($0)" }.joined(separator: ",") + ")"])
        #expect(source.calls("cancelPrefetch").isEmpty)
        source.log = []
        table.simulateScroll(to: CGPoint(x: 0, y: 0))  // scrolling back: the rows above are next
        #expect(
            source.calls("cancelPrefetch") == [
                "cancelPrefetch(" + (15..<25).map { "0-\($0)" }.joined(separator: ",") + ")"
            ])
        #expect(table.simulatedPrefetchedIndexPaths.isEmpty)
    }

    @Test func scrollToRowBringsItIntoView() {
        let source = ArrayTable([rows(50)])
        let table = makeTable(source)
        table.scrollToRow(at: ip(0, 30), at: .top, animated: false)
        #expect(table.contentOffset.y == CGFloat(1320))  // row 30 × 44 points
        #expect(table.indexPathsForVisibleRows?.first == ip(0, 30))
        #expect(shownMatchesData(table, source))
    }

    @Test func aTableViewControllerIsTheDataSourceAndForwardsEditing() {
        final class Controller: UITableViewController {
            var items = ["a", "b"]
            override func tableView(_ tableView: UITableView, numberOfRowsInSection section: Int) -> Int { items.count }
            override func tableView(_ tableView: UITableView, cellForRowAt indexPath: IndexPath) -> UITableViewCell {
                let cell = tableView.dequeueReusableCell(withIdentifier: "Cell", for: indexPath)
                var content = cell.defaultContentConfiguration()
                content.text = items[indexPath.row]
                cell.contentConfiguration = content
                return cell
            }
            override func viewDidLoad() {
                super.viewDidLoad()
                tableView.register(UITableViewCell.self, forCellReuseIdentifier: "Cell")
            }
        }
        let controller = Controller(style: .insetGrouped)
        let window = UIWindow(windowScene: .simulated())
        window.rootViewController = UINavigationController(rootViewController: controller)
        window.makeKeyAndVisible()
        #expect(controller.tableView.simulatedRowCounts == [2])
        #expect(
            (controller.tableView.simulatedCell(at: ip(0, 1))?.contentConfiguration as? UIListContentConfiguration)?
                .text == "b")
        controller.navigationItem.rightBarButtonItem = controller.editButtonItem
        controller.editButtonItem.simulateTap()
        #expect(controller.isEditing && controller.tableView.isEditing)
        #expect(controller.editButtonItem.title == "Done")
    }
}
