import FlowSyncClient
import FlowSyncCore
import Foundation
import Testing
@_spi(Simulation) import UIKit

@testable import TableDocExample

/// docs/SDK.md's table view controller is the one compiled here (TableDocExample), and it
/// works: against a real daemon, its table shows the list with typed headers, a tap opens
/// the contact under it, and the swipe's Delete deletes that contact.
@Suite(.serialized, .timeLimit(.minutes(1))) @MainActor struct DocumentedTableExampleTests {
    static let here = URL(fileURLWithPath: #filePath).resolvingSymlinksInPath().deletingLastPathComponent()
    static let root = here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test func theGuidesTableExampleIsTheOneCompiledHere() throws {
        let guide = try String(contentsOf: Self.root.appendingPathComponent("docs/SDK.md"), encoding: .utf8)
        let section = try #require(guide.range(of: "\n### A table view controller\n")).upperBound
        let open = try #require(guide.range(of: "```swift\n", range: section..<guide.endIndex))
        let close = try #require(guide.range(of: "```\n", range: open.upperBound..<guide.endIndex))
        let documented = String(guide[open.upperBound..<close.lowerBound])
        let file = try String(
            contentsOf: Self.root.appendingPathComponent(
                "AppleCheck/DocExamples/TableExample/DocumentedTableExample.swift"),
            encoding: .utf8)
        let marker = "// ---- docs/SDK.md, \"A table view controller\" ----\n"
        let compiled = String(file[try #require(file.range(of: marker)).upperBound...])
        #expect(compiled == documented, "DocumentedTableExample.swift differs from docs/SDK.md's table example")
    }

    @Test func theGuidesControllerShowsTapsAndDeletes() async throws {
        let daemon = try await Daemon()
        let client = try daemon.client("doc")
        let list = client.director("contacts")
        try await list.waitUntilLoaded()
        _ = try await list.set(sections: [
            NewSection(
                id: "friends", header: TableDocExample.Team(title: "Friends", count: 2),
                models: [
                    TableDocExample.Contact(id: "ann", name: "Ann"), TableDocExample.Contact(id: "bob", name: "Bob"),
                ])
        ]).committed()
        let controller = ContactsViewController(client: client)
        var opened: [String] = []
        controller.opened = { opened.append($0.id) }
        let window = UIWindow(frame: CGRect(x: 0, y: 0, width: 390, height: 844))
        controller.loadViewIfNeeded()
        controller.view.frame = window.bounds
        window.addSubview(controller.view)
        let table = try #require(controller.view as? UITableView)
        #expect(await eventually { table.numberOfRows(inSection: 0) == 2 })
        table.layoutIfNeeded()
        let header = try #require(table.headerView(forSection: 0))
        #expect((header.contentConfiguration as? UIListContentConfiguration)?.text == "Friends")
        #expect(
            (table.simulatedCell(at: IndexPath(row: 1, section: 0))?.contentConfiguration as? UIListContentConfiguration)?
                .text == "Bob")
        table.simulateTap(at: IndexPath(row: 1, section: 0))
        #expect(opened == ["bob"])
        let actions = try #require(table.simulateSwipe(.trailing, at: IndexPath(row: 0, section: 0)))
        table.simulatePerform(try #require(actions.actions.first))
        #expect(
            await eventually {
                list.snapshot.director.rowPath(id: "ann") == nil && table.numberOfRows(inSection: 0) == 1
            })
        #expect(table.simulationFailures.isEmpty, "\(table.simulationFailures)")
        client.close()
        await daemon.stop()
    }
}
