import Testing
@_spi(Simulation) import UIKit

private func ip(_ section: Int, _ row: Int) -> IndexPath { IndexPath(row: row, section: section) }

@MainActor
@Suite("UITableView: batch updates validated as UIKit documents", .timeLimit(.minutes(1)))
struct TableBatchUpdateTests {
    /// Runs `change` on the data and `updates` on the table in one batch; returns the failures.
    func batch(
        _ source: ArrayTable, _ table: UITableView, change: @escaping (inout [[String]]) -> Void,
        updates: @escaping (UITableView) -> Void
    ) -> [String] {
        table.simulationFailures = []
        table.performBatchUpdates {
            change(&source.sections)
            updates(table)
        }
        return table.simulationFailures
    }

    @Test func aValidBatchKeepsMovedCellsAndAsksOnlyForNewOnes() {
        let source = ArrayTable([rows(5), rows(3, "s")])
        let table = makeTable(source)
        let movedCell = table.simulatedCell(at: ip(0, 4))
        source.log = []
        let failures = batch(
            source, table,
            change: { data in
                data[0].remove(at: 1)  // delete 0-1
                let moved = data[0].remove(at: 3)  // old 0-4 (now index 3)
                data[1].insert(moved, at: 0)  // … to 1-0
                data[0].insert("new", at: 0)  // insert 0-0
            },
            updates: { table in
                table.deleteRows(at: [ip(0, 1)], with: .fade)
                table.moveRow(at: ip(0, 4), to: ip(1, 0))
                table.insertRows(at: [ip(0, 0)], with: .fade)
            })
        #expect(failures.isEmpty)
        #expect(table.simulatedRowCounts == [4, 4])
        #expect(table.simulatedCell(at: ip(1, 0)) === movedCell)
        #expect(source.calls("cellForRow") == ["cellForRow(0-0)"])
        #expect(source.calls("didEndDisplaying") == ["didEndDisplaying(0-1)"])
        #expect(shownMatchesData(table, source))
    }

    @Test func rowCountMismatchFailsWithUIKitsMessageAndTheTableReloads() {
        let source = ArrayTable([rows(4)])
        let table = makeTable(source)
        let failures = batch(source, table, change: { $0[0].append("extra") }, updates: { _ in })
        #expect(
            failures == [
                "Invalid update: invalid number of rows in section 0. The number of rows contained in an existing section after the update (5) must be equal to the number of rows contained in that section before the update (4), plus or minus the number of rows inserted or deleted from that section (0 inserted, 0 deleted) and plus or minus the number of rows moved into or out of that section (0 moved in, 0 moved out)."
            ])
        #expect(table.simulatedRowCounts == [5])
        #expect(shownMatchesData(table, source))
    }

    @Test func movesInAndOutAreCountedPerSection() {
        let source = ArrayTable([rows(3), rows(3, "s")])
        let table = makeTable(source)
        // Moves one row from section 0 to 1 in the table but not in the data.
        let failures = batch(source, table, change: { _ in }, updates: { $0.moveRow(at: ip(0, 0), to: ip(1, 0)) })
        #expect(
            failures.first
                == "Invalid update: invalid number of rows in section 0. The number of rows contained in an existing section after the update (3) must be equal to the number of rows contained in that section before the update (3), plus or minus the number of rows inserted or deleted from that section (0 inserted, 0 deleted) and plus or minus the number of rows moved into or out of that section (0 moved in, 1 moved out)."
        )
    }

    @Test func sectionCountMismatchFails() {
        let source = ArrayTable([rows(1)])
        let table = makeTable(source)
        let failures = batch(source, table, change: { $0.append(rows(1)) }, updates: { _ in })
        #expect(
            failures == [
                "Invalid update: invalid number of sections. The number of sections contained in the table view after the update (2) must be equal to the number of sections contained in the table view before the update (1), plus or minus the number of sections inserted or deleted (0 inserted, 0 deleted)."
            ])
    }

    @Test func insertBeyondTheRowsAfterTheUpdateFails() {
        let source = ArrayTable([rows(3)])
        let table = makeTable(source)
        let failures = batch(
            source, table, change: { $0[0].append("x") }, updates: { $0.insertRows(at: [ip(0, 5)], with: .none) })
        #expect(
            failures == [
                "attempt to insert row 5 into section 0, but there are only 4 rows in section 0 after the update"
            ])
    }

    @Test func deleteBeyondTheRowsBeforeTheUpdateFails() {
        let source = ArrayTable([rows(3)])
        let table = makeTable(source)
        let failures = batch(
            source, table, change: { $0[0].removeLast() }, updates: { $0.deleteRows(at: [ip(0, 3)], with: .none) })
        #expect(failures == ["attempt to delete row 3 from section 0 which only contains 3 rows before the update"])
    }

    @Test func rowInAMissingSectionFails() {
        let source = ArrayTable([rows(3)])
        let table = makeTable(source)
        #expect(
            batch(source, table, change: { _ in }, updates: { $0.deleteRows(at: [ip(1, 0)], with: .none) })
                == ["attempt to delete row 0 from section 1, but there are only 1 sections before the update"])
        #expect(
            batch(source, table, change: { _ in }, updates: { $0.insertRows(at: [ip(2, 0)], with: .none) })
                == ["attempt to insert row 0 into section 2, but there are only 1 sections after the update"])
    }

    @Test func sectionRangesAreCheckedBeforeAndAfter() {
        let source = ArrayTable([rows(1), rows(1)])
        let table = makeTable(source)
        #expect(
            batch(source, table, change: { $0.removeLast() }, updates: { $0.deleteSections([2], with: .none) })
                == ["attempt to delete section 2, but there are only 2 sections before the update"])
        let source2 = ArrayTable([rows(1), rows(1)])
        let table2 = makeTable(source2)
        #expect(
            batch(source2, table2, change: { $0.append([]) }, updates: { $0.insertSections([3], with: .none) })
                == ["attempt to insert section 3 but there are only 3 sections after the update"])
    }

    @Test func aRowCannotBeDeletedAndReloadedOrDeletedAndMoved() {
        let source = ArrayTable([rows(3)])
        let table = makeTable(source)
        #expect(
            batch(
                source, table, change: { $0[0].removeFirst() },
                updates: {
                    $0.deleteRows(at: [ip(0, 0)], with: .none)
                    $0.reloadRows(at: [ip(0, 0)], with: .none)
                }) == ["attempt to delete and reload the same index path (<NSIndexPath> {length = 2, path = 0 - 0})"])
        #expect(
            batch(
                source, table, change: { $0[0].removeFirst() },
                updates: {
                    $0.deleteRows(at: [ip(0, 0)], with: .none)
                    $0.moveRow(at: ip(0, 0), to: ip(0, 1))
                }) == [
                    "attempt to perform a delete and a move from the same index path (<NSIndexPath> {length = 2, path = 0 - 0})"
                ])
    }

    @Test func aRowCannotBeReloadedAndMovedNorInsertedWhereAnotherMoves() {
        let source = ArrayTable([rows(3)])
        let table = makeTable(source)
        #expect(
            batch(
                source, table, change: { _ in },
                updates: {
                    $0.reloadRows(at: [ip(0, 0)], with: .none)
                    $0.moveRow(at: ip(0, 0), to: ip(0, 2))
                }) == [
                    "attempt to perform a reload and a move from the same index path (<NSIndexPath> {length = 2, path = 0 - 0})"
                ])
        #expect(
            batch(
                source, table, change: { $0[0].append("x") },
                updates: {
                    $0.insertRows(at: [ip(0, 1)], with: .none)
                    $0.moveRow(at: ip(0, 0), to: ip(0, 1))
                }) == [
                    "attempt to perform an insert and a move to the same index path (<NSIndexPath> {length = 2, path = 0 - 1})"
                ])
    }

    @Test func aRowCannotMoveIntoAnInsertedSection() {
        let source = ArrayTable([rows(2)])
        let table = makeTable(source)
        #expect(
            batch(
                source, table,
                change: {
                    $0.append(["r0"])
                    $0[0].removeFirst()
                },
                updates: {
                    $0.insertSections([1], with: .none)
                    $0.moveRow(at: ip(0, 0), to: ip(1, 0))
                }) == ["cannot move a row into a newly inserted section (1)"])
    }

    @Test func sectionsCannotBeDeletedAndMovedOrInsertedWhereOneMoves() {
        let source = ArrayTable([rows(1), rows(1, "s"), rows(1, "t")])
        let table = makeTable(source)
        #expect(
            batch(
                source, table, change: { $0.removeFirst() },
                updates: {
                    $0.deleteSections([0], with: .none)
                    $0.moveSection(0, toSection: 1)
                }) == ["attempt to perform a delete and a move from the same section (0)"])
        #expect(
            batch(
                source, table, change: { $0.append([]) },
                updates: {
                    $0.insertSections([2], with: .none)
                    $0.moveSection(0, toSection: 2)
                }) == ["attempt to perform an insert and a move to the same section (2)"])
    }

    @Test func reloadingASectionTwiceInOneBatchIsFlaggedAsUndocumented() {
        let source = ArrayTable([rows(2)])
        let table = makeTable(source)
        let failures = batch(
            source, table, change: { _ in },
            updates: {
                $0.reloadSections([0], with: .none)
                $0.reloadSections([0], with: .none)
            })
        #expect(
            failures == [
                "Invalid update (stand-in: UIKit does not document this): section 0 is reloaded more than once in one batch"
            ])
        table.simulationFlagsUndocumentedUpdates = false
        #expect(
            batch(
                source, table, change: { _ in },
                updates: {
                    $0.reloadSections([0], with: .none)
                    $0.reloadSections([0], with: .none)
                }
            ).isEmpty)
    }

    @Test func sectionUpdatesMoveTheirCellsAndHeaders() {
        let source = ArrayTable([rows(2, "a"), rows(2, "b"), rows(2, "c")])
        let table = makeTable(source)
        let bCell = table.simulatedCell(at: ip(1, 0))
        source.log = []
        let failures = batch(
            source, table,
            change: { data in
                data.remove(at: 0)  // delete a
                let c = data.remove(at: 1)  // c moves to the front
                data.insert(c, at: 0)
                data.append(rows(1, "d"))  // insert d at the end
                data[1] = rows(3, "b2")  // b reloaded
            },
            updates: { table in
                table.deleteSections([0], with: .none)
                table.moveSection(2, toSection: 0)
                table.insertSections([2], with: .none)
                table.reloadSections([1], with: .none)
            })
        #expect(failures.isEmpty)
        #expect(table.simulatedRowCounts == [2, 3, 1])
        #expect(
            table.simulatedCell(at: ip(1, 0)) !== bCell
                || (table.simulatedCell(at: ip(1, 0)) as? TextCell)?.text == "b20")
        #expect(!source.calls("cellForRow").contains("cellForRow(0-0)"))  // c's cells moved, not asked
        #expect(shownMatchesData(table, source))
    }

    @Test func beginAndEndUpdatesNestAndValidateOnceAtTheOutermostEnd() {
        let source = ArrayTable([rows(2)])
        let table = makeTable(source)
        table.beginUpdates()
        source.sections[0].append("x")
        table.beginUpdates()
        table.insertRows(at: [ip(0, 2)], with: .none)
        table.endUpdates()
        #expect(table.simulatedRowCounts == [2])
        source.sections[0].append("y")
        table.insertRows(at: [ip(0, 3)], with: .none)
        table.endUpdates()
        #expect(table.simulationFailures.isEmpty)
        #expect(table.simulatedRowCounts == [4])
        #expect(shownMatchesData(table, source))
    }

    @Test func aCallOutsideABatchIsABatchOfOne() {
        let source = ArrayTable([rows(2)])
        let table = makeTable(source)
        source.sections[0].insert("first", at: 0)
        table.insertRows(at: [ip(0, 0)], with: .automatic)
        #expect(table.simulationFailures.isEmpty)
        #expect(shownMatchesData(table, source))
        // The same call without changing the data is the classic mismatch.
        table.insertRows(at: [ip(0, 0)], with: .automatic)
        #expect(table.simulationFailures.count == 1)
        #expect(table.simulationFailures[0].hasPrefix("Invalid update: invalid number of rows in section 0."))
    }

    @Test func anUnloadedTableReloadsInsteadOfValidating() {
        let source = ArrayTable([rows(2)])
        let table = makeTable(source, layout: false)
        source.sections[0].append("x")
        table.insertRows(at: [ip(0, 5)], with: .none)
        #expect(table.simulationFailures.isEmpty)
        table.layoutIfNeeded()
        #expect(table.simulatedRowCounts == [3])
    }

    @Test func reconfigureAsksAgainWithTheExistingCell() {
        let source = ArrayTable([rows(3)])
        let table = makeTable(source)
        let cell = table.simulatedCell(at: ip(0, 1)) as? TextCell
        source.log = []
        source.sections[0][1] = "changed"
        table.reconfigureRows(at: [ip(0, 1)])
        #expect(table.simulationFailures.isEmpty)
        #expect(source.calls("cellForRow") == ["cellForRow(0-1)"])
        #expect(table.simulatedCell(at: ip(0, 1)) === cell)
        #expect(cell?.text == "changed")
        #expect(cell?.reuseCount == 0)
        #expect(source.calls("willDisplay").isEmpty)
    }

    @Test func reloadRowsReplacesTheCell() {
        let source = ArrayTable([rows(3)])
        let table = makeTable(source)
        let cell = table.simulatedCell(at: ip(0, 1))
        source.log = []
        source.sections[0][1] = "changed"
        table.reloadRows(at: [ip(0, 1)], with: .fade)
        #expect(source.calls("didEndDisplaying") == ["didEndDisplaying(0-1)"])
        #expect(source.calls("cellForRow") == ["cellForRow(0-1)"])
        #expect(table.simulatedCell(at: ip(0, 1)) !== cell)
        #expect(shownMatchesData(table, source))
    }

    @Test func theFailureHookSeesEachFailure() {
        let source = ArrayTable([rows(1)])
        let table = makeTable(source)
        var seen: [String] = []
        table.onSimulationFailure = { seen.append($0) }
        source.sections[0] = []
        table.reloadRows(at: [ip(0, 0)], with: .none)
        #expect(seen.count == 1)
        #expect(seen == table.simulationFailures)
    }
}
