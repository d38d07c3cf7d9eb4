import Dispatch
import FlowSyncClient
import FlowSyncCore
import Foundation
import Testing
@_spi(Simulation) import UIKit

@testable import FlowSyncUI
@testable import TodoUIKit

/// The UIKit example app (Examples/TodoUIKit) on the simulated table against a real
/// daemon: the user adds, taps, swipes and drags while a second client writes the same
/// list; at the end the server's list and the table's cells agree, and the table never
/// saw an invalid batch.
@Suite(.serialized, .timeLimit(.minutes(2))) @MainActor struct TodoExampleTests {
    /// What each visible cell shows: its title and checkmark, by index path.
    static func shownCells(_ table: UITableView) -> [IndexPath: (String?, Bool)] {
        var cells: [IndexPath: (String?, Bool)] = [:]
        for path in table.simulatedVisibleIndexPaths {
            guard let cell = table.simulatedCell(at: path) else { continue }
            let text = (cell.contentConfiguration as? UIListContentConfiguration)?.text
            cells[path] = (text, cell.accessoryType == .checkmark)
        }
        return cells
    }

    /// Lines where a visible cell does not show the row at its index path in `list`.
    static func disagreements(_ table: UITableView, _ list: Director) -> [String] {
        var lines: [String] = []
        for (path, shown) in shownCells(table) {
            guard path.section < list.sections.count, path.row < list.sections[path.section].rows.count else {
                lines.append("\(path): a cell where the list has no row")
                continue
            }
            let row = list[RowPath(section: path.section, row: path.row)]
            guard let item = try? JSONDecoder().decode(TodoItem.self, from: Data(row.payload)) else { continue }
            if shown.0 != item.title || shown.1 != item.done {
                lines.append(
                    "\(path): cell shows \(shown.0 ?? "nil") done=\(shown.1), the list has \(item.title) done=\(item.done)"
                )
            }
        }
        return lines
    }

    @Test(arguments: [21, 22] as [UInt64])
    func theUserAndASecondClientEditTheSameList(seed: UInt64) async throws {
        let daemon = try await Daemon()
        let client = try daemon.client("phone", seed: seed)
        let name = "todo-\(seed)"
        let controller = TodoListViewController(client: client, listName: name)
        let window = UIWindow(frame: CGRect(x: 0, y: 0, width: 390, height: 844))
        window.rootViewController = UINavigationController(rootViewController: controller)
        window.makeKeyAndVisible()
        controller.loadViewIfNeeded()
        controller.view.frame = window.bounds
        window.addSubview(controller.view)
        let table = controller.tableView
        try await controller.list.waitUntilLoaded()

        // Add five to-dos through the + button and its alert, as the user would.
        for n in 0..<5 {
            controller.navigationItem.rightBarButtonItem?.simulateTap()
            let alert = try #require(controller.presentedViewController as? UIAlertController)
            alert.textFields?.first?.text = "Item \(n)"
            alert.simulateTap(try #require(alert.actions.first { $0.title == "Add" }))
        }
        #expect(await eventually { controller.director.snapshot.numberOfModels == 5 })
        #expect(controller.director.snapshot.director.sections.map(\.id) == ["inbox"])

        // A second device writes the same list: a "done" section, items, renames, deletes.
        let other = try daemon.client("tablet", seed: seed + 7)
        let remote = other.director(name)
        try await remote.waitUntilLoaded()
        _ = try await remote.add(section: NewSection(id: TodoItem.done, header: "Done")).committed()
        let writer = Task { @MainActor in
            var random = SplitMix64(seed: seed)
            for n in 0..<40 {
                let items = remote.snapshot.director.sections.flatMap { Array($0.rows) }
                switch random.int(0..<4) {
                case 0:
                    _ = try? remote.section(id: random.chance(0.5) ? TodoItem.inbox : TodoItem.done)?
                        .add(model: TodoItem(id: "r\(n)", title: "Remote \(n)"), at: 0)
                case 1 where items.count > 3: _ = try? remote.remove(modelID: items[random.int(0..<items.count)].id)
                case 2 where !items.isEmpty:
                    let row = items[random.int(0..<items.count)]
                    if var item = try? JSONDecoder().decode(TodoItem.self, from: Data(row.payload)) {
                        item.title += "'"
                        _ = try? remote.update(model: item)
                    }
                default: break
                }
                try? await Task.sleep(for: .milliseconds(3))
            }
        }

        // The user: taps (toggle done), swipes to delete, and drags in Edit.
        var random = SplitMix64(seed: seed &* 977)
        var taps = 0, deletes = 0, drags = 0
        for _ in 0..<60 {
            table.layoutIfNeeded()
            let visible = table.simulatedVisibleIndexPaths
            guard !visible.isEmpty else {
                try? await Task.sleep(for: .milliseconds(2))
                continue
            }
            let path = visible[random.int(0..<visible.count)]
            switch random.int(0..<6) {
            case 0...2:
                if controller.isEditing { controller.setEditing(false, animated: false) }
                if table.simulateTap(at: path) != nil { taps += 1 }
            case 3:
                if controller.isEditing { controller.setEditing(false, animated: false) }
                if let actions = table.simulateSwipe(.trailing, at: path), let delete = actions.actions.first {
                    try? await Task.sleep(for: .milliseconds(2))  // remote changes land while the swipe is open
                    table.simulatePerform(delete)
                    deletes += 1
                }
            default:
                if !controller.isEditing { controller.setEditing(true, animated: false) }
                let counts = table.simulatedRowCounts
                let section = random.int(0..<counts.count)
                let limit = counts[section] - (section == path.section ? 1 : 0)
                guard limit >= 0 else { break }
                if table.simulateMove(from: path, to: IndexPath(row: random.int(0...limit), section: section)) != nil {
                    drags += 1
                }
            }
            #expect(table.simulatedDisagreementsWithDataSource().isEmpty)
            try? await Task.sleep(for: .milliseconds(1))
        }
        await writer.value
        controller.setEditing(false, animated: false)

        // Quiet: both devices agree with the server, and the table shows the list.
        let converged = await eventually {
            controller.list.snapshot.pendingWrites == 0 && remote.snapshot.pendingWrites == 0
                && controller.list.snapshot.director == remote.snapshot.director
                && controller.director.snapshot.director == remote.snapshot.director
        }
        #expect(converged, "seed \(seed)")
        table.layoutIfNeeded()
        #expect(table.simulationFailures.isEmpty, "seed \(seed): \(table.simulationFailures.prefix(2))")
        #expect(
            Self.disagreements(table, remote.snapshot.director).isEmpty,
            "seed \(seed): \(Self.disagreements(table, remote.snapshot.director))")
        #expect(taps > 5 && drags > 3, "seed \(seed): \(taps) taps, \(deletes) deletes, \(drags) drags")
        print(
            "todo example, seed \(seed): \(taps) taps, \(deletes) swipe deletes, \(drags) drags, \(remote.snapshot.numberOfModels) rows at the end"
        )
        other.close()
        client.close()
        await daemon.stop()
    }

    @Test func theBadgeSaysWhatTheListIsWaitingFor() {
        #expect(SyncBadge.text(status: .connected(server: "s"), pendingWrites: 0, isFromDisk: false) == nil)
        #expect(
            SyncBadge.text(status: .connected(server: "s"), pendingWrites: 2, isFromDisk: false)
                == "Saving · 2 changes waiting")
        #expect(SyncBadge.text(status: .connected(server: "s"), pendingWrites: 0, isFromDisk: true) == "Updating…")
        #expect(
            SyncBadge.text(
                status: .disconnected(reason: "x", retryInMilliseconds: 100), pendingWrites: 1, isFromDisk: false)
                == "Offline · 1 change waiting")
        #expect(SyncBadge.text(status: .connecting, pendingWrites: 0, isFromDisk: false) == "Connecting…")
        #expect(SyncBadge.text(status: .paused, pendingWrites: 0, isFromDisk: false) == "Offline")
    }
}
