import Testing
@_spi(Simulation) import UIKit

@MainActor
@Suite("UITableView: loading, visible rows, reuse, headers", .timeLimit(.minutes(1)))
struct TableLoadingTests {
    @Test func countsAreAskedAtFirstLayoutNotBefore() {
        let source = ArrayTable([rows(3)])
        let table = makeTable(source, layout: false)
        #expect(source.log.isEmpty)
        #expect(!table.simulatedIsLoaded)
        table.layoutIfNeeded()
        #expect(Array(source.log.prefix(2)) == ["numberOfSections", "numberOfRows(0)"])
        #expect(source.calls("cellForRow") == ["cellForRow(0-0)", "cellForRow(0-1)", "cellForRow(0-2)"])
        #expect(source.calls("willDisplay") == ["willDisplay(0-0)", "willDisplay(0-1)", "willDisplay(0-2)"])
        #expect(shownMatchesData(table, source))
    }

    @Test func puttingTheTableInAWindowLoadsIt() {
        let source = ArrayTable([rows(2)])
        let table = makeTable(source, layout: false)
        let window = UIWindow(frame: CGRect(x: 0, y: 0, width: 320, height: 480))
        window.addSubview(table)
        #expect(table.simulatedIsLoaded)
        #expect(table.simulatedVisibleIndexPaths.count == 2)
    }

    @Test func reloadDataAsksAgainAtTheNextLayout() {
        let source = ArrayTable([rows(2)])
        let table = makeTable(source)
        source.log = []
        source.sections = [rows(3), rows(1, "s")]
        table.reloadData()
        #expect(source.log.isEmpty)
        #expect(table.simulatedRowCounts == [2])
        table.layoutIfNeeded()
        #expect(Array(source.log.prefix(3)) == ["numberOfSections", "numberOfRows(0)", "numberOfRows(1)"])
        #expect(table.simulatedRowCounts == [3, 1])
        #expect(shownMatchesData(table, source))
    }

    @Test func onlyVisibleRowsAreAskedAndScrollingBringsTheRest() {
        let source = ArrayTable([rows(30)])
        let table = makeTable(source)  // 10 rows of 44 fit in 440
        #expect(source.calls("cellForRow").count == 10)
        #expect(table.simulatedVisibleIndexPaths == (0..<10).map { IndexPath(row: $0, section: 0) })
        source.log = []
        table.simulateScroll(to: CGPoint(x: 0, y: 88))  // rows 2...11
        #expect(source.calls("didEndDisplaying") == ["didEndDisplaying(0-0)", "didEndDisplaying(0-1)"])
        #expect(source.calls("cellForRow") == ["cellForRow(0-10)", "cellForRow(0-11)"])
        #expect(shownMatchesData(table, source))
    }

    @Test func heightsComeFromTheDelegateThenRowHeightThenTheEstimate() {
        let source = ArrayTable([rows(30)])
        source.fixedRowHeight = 100
        let table = makeTable(source)
        #expect(table.simulatedVisibleIndexPaths.count == 5)  // 440 / 100 → rows 0...4
        #expect(table.rectForRow(at: IndexPath(row: 2, section: 0)) == CGRect(x: 0, y: 200, width: 320, height: 100))
        source.fixedRowHeight = nil
        table.rowHeight = UITableView.automaticDimension
        table.estimatedRowHeight = 88
        table.layoutIfNeeded()
        #expect(table.rectForRow(at: IndexPath(row: 1, section: 0)).height == 88)
    }

    @Test func cellsThatLeaveAreReusedWithPrepareForReuse() {
        let source = ArrayTable([rows(40)])
        let table = makeTable(source)
        let first = table.simulatedCell(at: IndexPath(row: 0, section: 0)) as? TextCell
        table.simulateScroll(to: CGPoint(x: 0, y: 440))  // rows 10...19: all ten cells reused
        let reused = table.simulatedVisibleIndexPaths.compactMap { table.simulatedCell(at: $0) as? TextCell }
        #expect(reused.contains { $0 === first })
        #expect(reused.allSatisfy { $0.reuseCount == 1 })
        #expect(table.simulatedReuseQueueCount(forIdentifier: "Text") == 0)
        #expect(shownMatchesData(table, source))
    }

    @Test func anUnregisteredIdentifierIsAFailureWithUIKitsMessage() {
        let source = ArrayTable([rows(1)])
        source.identifier = "Missing"
        let table = makeTable(source)
        #expect(
            table.simulationFailures == [
                "unable to dequeue a cell with identifier Missing - must register a nib or a class for the identifier or connect a prototype cell in a storyboard"
            ])
        #expect(table.simulatedCell(at: IndexPath(row: 0, section: 0))?.reuseIdentifier == "Missing")
    }

    @Test func dequeueWithoutIndexPathReturnsNilForUnknownIdentifiers() {
        let table = UITableView(frame: .zero, style: .plain)
        #expect(table.dequeueReusableCell(withIdentifier: "Nope") == nil)
        table.register(TextCell.self, forCellReuseIdentifier: "T")
        #expect(table.dequeueReusableCell(withIdentifier: "T") is TextCell)
    }

    @Test func headerTitlesBecomeStandardHeaderViewsForVisibleSections() throws {
        let source = ArrayTable([rows(2), rows(2, "s"), rows(30, "t")])
        source.headerTitles = [0: "First", 2: "Third"]
        let table = makeTable(source, layout: false)
        table.sectionHeaderHeight = 30
        table.layoutIfNeeded()
        let header = try #require(table.headerView(forSection: 0))
        #expect(header.textLabel?.text == "First")
        #expect(table.headerView(forSection: 1) == nil)  // no title, no view
        #expect(table.headerView(forSection: 2)?.textLabel?.text == "Third")
        #expect(source.calls("willDisplayHeader") == ["willDisplayHeader(0)", "willDisplayHeader(2)"])
        table.simulateScroll(to: CGPoint(x: 0, y: 400))
        #expect(table.headerView(forSection: 0) == nil)
        #expect(source.calls("didEndDisplayingHeader").contains("didEndDisplayingHeader(0)"))
    }

    @Test func headerViewsAreDequeuedFromRegisteredClassesAndReused() {
        let source = ArrayTable((0..<20).map { rows(1, "s\($0)-") })
        source.headerViews = { table, _ in table.dequeueReusableHeaderFooterView(withIdentifier: "Header") }
        let table = makeTable(source, layout: false)
        table.register(UITableViewHeaderFooterView.self, forHeaderFooterViewReuseIdentifier: "Header")
        table.sectionHeaderHeight = 44
        table.layoutIfNeeded()
        let shown = table.headerView(forSection: 0)
        #expect(shown?.reuseIdentifier == "Header")
        table.simulateScroll(to: CGPoint(x: 0, y: 880))
        #expect(table.headerView(forSection: 10) != nil)
        #expect((0..<20).compactMap { table.headerView(forSection: $0) }.contains { $0 === shown })
    }

    @Test func automaticRowHeightUsesTheCellsContentConfiguration() {
        let source = ArrayTable([rows(3)])
        let table = makeTable(source, layout: false)
        table.rowHeight = UITableView.automaticDimension
        table.layoutIfNeeded()
        let cell = table.simulatedCell(at: IndexPath(row: 0, section: 0))!
        var content = cell.defaultContentConfiguration()
        content.text = "Title"
        content.secondaryText = "Subtitle"
        cell.contentConfiguration = content
        table.setNeedsLayout()
        table.layoutIfNeeded()
        #expect(table.rectForRow(at: IndexPath(row: 0, section: 0)).height > 44)
        #expect(table.rectForRow(at: IndexPath(row: 1, section: 0)).height == 44)
    }
}
