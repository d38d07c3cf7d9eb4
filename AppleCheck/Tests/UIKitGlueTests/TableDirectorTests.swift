import Dispatch
import FlowSyncClient
import FlowSyncCore
import Foundation
import Testing
@_spi(Simulation) import UIKit

@testable import FlowSyncUI

/// TableDirector on the simulated UITableView against a real daemon: each adapter
/// feature, event and sizing mode, headers, animations, and the reorder path with a
/// remote change in flight. Every test also checks that the table recorded no failure
/// (UIKit's "Invalid update" and friends).
@Suite(.serialized, .timeLimit(.minutes(1))) @MainActor struct TableDirectorTests {
    /// A director on a table in a window, showing `list` with a contact adapter.
    struct Screen {
        let window: UIWindow
        let table: RecordingTableView
        let director: TableDirector
        let adapter: TableCellAdapter<Contact, ContactCell>
    }

    static func screen(
        _ list: ListDirector, configure: (TableCellAdapter<Contact, ContactCell>) -> Void = { _ in }
    ) -> Screen {
        let (window, table) = tableInWindow()
        let director = TableDirector(table: table, list: list)
        let adapter = TableCellAdapter<Contact, ContactCell> { adapter in
            adapter.events.dequeue = { ctx in
                ctx.cell?.shown = ctx.model
                ctx.cell?.configurations += 1
            }
        }
        configure(adapter)
        director.register(adapter)
        return Screen(window: window, table: table as! RecordingTableView, director: director, adapter: adapter)
    }

    static let contacts = (0..<8).map { Contact(id: "c\($0)", name: "Contact \($0)") }

    /// A daemon, a client, and a list with two sections of contacts.
    static func setUp(_ name: String) async throws -> (Daemon, FlowSyncClient, ListDirector) {
        let daemon = try await Daemon()
        let client = try daemon.client("app")
        let list = client.director(name)
        try await list.waitUntilLoaded()
        _ = try await list.set(sections: [
            NewSection(id: "friends", header: TeamHeader(title: "Friends", count: 4), models: Array(contacts[0..<4])),
            NewSection(id: "work", header: TeamHeader(title: "Work", count: 4), models: Array(contacts[4...])),
        ]).committed()
        return (daemon, client, list)
    }

    @Test func cellsAreConfiguredByTheAdapterOfTheirKindAndUnknownKindsFallBack() async throws {
        let (daemon, client, list) = try await Self.setUp("kinds")
        _ = try await list.section(id: "friends")!.add(model: Banner(id: "b1", text: "hello"), at: 1).committed()
        // A row of the contact kind whose payload is not a Contact.
        _ = try await list.submit([
            .insertRows([Row(id: "bad", kind: Contact.flowKind, text: #"{"id":"bad"}"#)], in: .id("work"), at: 0)
        ])
        .committed()
        let screen = Self.screen(list)
        screen.table.layoutIfNeeded()
        #expect(await eventually { screen.director.snapshot.numberOfModels == 10 })
        screen.table.layoutIfNeeded()
        #expect(screen.table.simulationFailures.isEmpty, "\(screen.table.simulationFailures)")
        #expect(screen.table.cellsThatDisagree(with: screen.director.snapshot).isEmpty)
        let banner = try #require(screen.table.simulatedCell(at: IndexPath(row: 1, section: 0)))
        #expect(!(banner is ContactCell))
        #expect(banner.reuseIdentifier == TableDirector.fallbackReuseIdentifier)
        #expect(screen.table.rectForRow(at: IndexPath(row: 1, section: 0)).height == 0)  // the fallback is hidden
        #expect(
            screen.table.simulatedCell(at: IndexPath(row: 0, section: 1))?.reuseIdentifier
                == TableDirector.fallbackReuseIdentifier)
        // Registering the banner's adapter shows it.
        let banners = TableCellAdapter<Banner, BannerCell> { adapter in
            adapter.events.dequeue = { ctx in ctx.cell?.shown = ctx.model }
            adapter.sizing = .fixed(30)
        }
        screen.director.register(banners)
        screen.table.layoutIfNeeded()
        #expect((screen.table.simulatedCell(at: IndexPath(row: 1, section: 0)) as? BannerCell)?.shown?.text == "hello")
        #expect(screen.table.rectForRow(at: IndexPath(row: 1, section: 0)).height == 30)
        client.close()
        await daemon.stop()
    }

    @Test func modelsAreDecodedOncePerRowVersionWhateverTheTableAsks() async throws {
        let (daemon, client, list) = try await Self.setUp("decode")
        let screen = Self.screen(list)
        #expect(await eventually { screen.director.snapshot.numberOfModels == 8 })
        for _ in 0..<5 {
            screen.table.reloadData()
            screen.table.layoutIfNeeded()
        }
        let decodes = screen.director.presenter.models.decodes
        #expect(decodes == 8, "\(decodes) decodes for 8 rows shown 6 times")
        _ = try await list.update(model: Contact(id: "c2", name: "Renamed")).committed()
        #expect(
            await eventually {
                (screen.table.simulatedCell(at: IndexPath(row: 2, section: 0)) as? ContactCell)?.shown?.name
                    == "Renamed"
            })
        #expect(screen.director.presenter.models.decodes == 9)
        #expect(screen.table.simulationFailures.isEmpty)
        client.close()
        await daemon.stop()
    }

    @Test func remoteChangesAnimateWithTheConfiguredAnimationsAndCellsFollow() async throws {
        let (daemon, client, list) = try await Self.setUp("remote")
        let screen = Self.screen(list)
        screen.director.animations = TableReloadAnimations(
            rowDeletionAnimation: .left, rowInsertionAnimation: .right, rowReloadAnimation: .fade,
            sectionDeletionAnimation: .top, sectionInsertionAnimation: .bottom, sectionReloadAnimation: .middle)
        #expect(await eventually { screen.director.snapshot.numberOfModels == 8 })
        screen.table.layoutIfNeeded()
        let reloadsBefore = screen.table.reloads
        let other = try daemon.client("other", seed: 2)
        let remote = other.director("remote")
        try await remote.waitUntilLoaded()
        _ = try await remote.perform { batch in
            try batch.section("friends").remove(at: 0)
            try batch.section("work").add(model: Contact(id: "n1", name: "New"), at: 0)
            try batch.section("work").update(model: Contact(id: "c5", name: "Five"))
        }.committed()
        _ = try await remote.add(section: NewSection(id: "later", models: [Contact(id: "n2", name: "Later")]))
            .committed()
        _ = try await remote.remove(sectionID: "later").committed()
        #expect(await eventually { screen.director.snapshot.director == remote.snapshot.director })
        screen.table.layoutIfNeeded()
        #expect(screen.table.simulationFailures.isEmpty, "\(screen.table.simulationFailures)")
        #expect(screen.table.reloads == reloadsBefore, "a change was shown with reloadData")
        #expect(screen.table.cellsThatDisagree(with: screen.director.snapshot).isEmpty)
        for expected in [
            "deleteRows left", "insertRows right", "reloadRows fade", "insertSections bottom", "deleteSections top",
        ] {
            #expect(screen.table.animations.contains(expected), "\(expected) not in \(screen.table.animations)")
        }
        other.close()
        client.close()
        await daemon.stop()
    }

    @Test func aTapSelectsTheModelUnderItAndItsAnswerDeselects() async throws {
        let (daemon, client, list) = try await Self.setUp("tap")
        var selected: [String] = []
        let screen = Self.screen(list) { adapter in
            adapter.events.tap = { ctx in
                selected.append(ctx.model.id)
                return ctx.model.id == "c1" ? .deselectAnimated : .none
            }
            adapter.events.shouldHighlight = { ctx in ctx.model.id != "c3" }
        }
        #expect(await eventually { screen.director.snapshot.numberOfModels == 8 })
        screen.table.layoutIfNeeded()
        screen.table.simulateTap(at: IndexPath(row: 1, section: 0))
        screen.table.simulateTap(at: IndexPath(row: 0, section: 1))
        screen.table.simulateTap(at: IndexPath(row: 3, section: 0))  // does not highlight: no selection
        #expect(selected == ["c1", "c4"])
        #expect(screen.table.indexPathsForSelectedRows == [IndexPath(row: 0, section: 1)])
        client.close()
        await daemon.stop()
    }

    @Test func aSwipeDeleteDuringARemoteChangeDeletesTheSwipedRow() async throws {
        let (daemon, client, list) = try await Self.setUp("swipe")
        let screen = Self.screen(list) { adapter in adapter.canDelete = true }
        #expect(await eventually { screen.director.snapshot.numberOfModels == 8 })
        screen.table.layoutIfNeeded()
        // UIKit's default trailing Delete, on c2.
        let defaultActions = try #require(screen.table.simulateSwipe(.trailing, at: IndexPath(row: 2, section: 0)))
        // Meanwhile another writer inserts two rows above it.
        let other = try daemon.client("other", seed: 3)
        let remote = other.director("swipe")
        try await remote.waitUntilLoaded()
        _ = try await remote.section(id: "friends")!.add(
            models: [Contact(id: "x1", name: "X1"), Contact(id: "x2", name: "X2")], at: 0
        )
        .committed()
        #expect(await eventually { screen.director.snapshot.numberOfModels == 10 })
        #expect(screen.table.simulatedOpenSwipeIndexPath == IndexPath(row: 4, section: 0))
        screen.table.simulatePerform(try #require(defaultActions.actions.first))
        #expect(
            await eventually {
                remote.snapshot.director.rowPath(id: "c2") == nil && remote.snapshot.numberOfModels == 9
            })
        #expect(list.snapshot.director.rowPath(id: "c1") != nil && list.snapshot.director.rowPath(id: "c3") != nil)

        // An adapter's own actions with a context's deleteAction: tapped after the row moved.
        screen.adapter.events.trailingSwipeActions = { ctx in
            UISwipeActionsConfiguration(actions: [ctx.deleteAction(title: "Remove")])
        }
        let custom = try #require(screen.table.simulateSwipe(.trailing, at: IndexPath(row: 0, section: 1)))  // c4
        #expect(custom.actions.first?.title == "Remove")
        _ = try await remote.section(id: "work")!.add(model: Contact(id: "y", name: "Y"), at: 0).committed()
        #expect(await eventually { screen.director.snapshot.numberOfModels == 10 })
        screen.table.simulatePerform(try #require(custom.actions.first))
        #expect(await eventually { remote.snapshot.director.rowPath(id: "c4") == nil })
        #expect(remote.snapshot.director.rowPath(id: "y") != nil && remote.snapshot.director.rowPath(id: "c5") != nil)
        #expect(screen.table.simulationFailures.isEmpty, "\(screen.table.simulationFailures)")
        #expect(await eventually { screen.table.cellsThatDisagree(with: screen.director.snapshot).isEmpty })
        other.close()
        client.close()
        await daemon.stop()
    }

    @Test func editModeDeleteCommitsThroughTheList() async throws {
        let (daemon, client, list) = try await Self.setUp("edit")
        var committed: [String] = []
        let screen = Self.screen(list) { adapter in adapter.canDelete = true }
        #expect(await eventually { screen.director.snapshot.numberOfModels == 8 })
        screen.table.setEditing(true, animated: false)
        #expect(screen.table.simulateCommitEditing(.delete, forRowAt: IndexPath(row: 3, section: 1)))
        #expect(await eventually { list.snapshot.director.rowPath(id: "c7") == nil })
        // A custom commit handler replaces the default delete.
        screen.adapter.events.commitEdit = { ctx, style in committed.append("\(ctx.model.id) \(style == .delete)") }
        #expect(screen.table.simulateCommitEditing(.delete, forRowAt: IndexPath(row: 0, section: 0)))
        #expect(committed == ["c0 true"])
        #expect(list.snapshot.director.rowPath(id: "c0") != nil)
        #expect(screen.table.simulationFailures.isEmpty)
        client.close()
        await daemon.stop()
    }

    @Test func aDragWritesThroughTheListWithoutReloadOrSecondAnimationEvenWithARemoteChangeInFlight() async throws {
        let (daemon, client, list) = try await Self.setUp("drag")
        var moves: [String] = []
        let screen = Self.screen(list) { adapter in
            adapter.canReorder = true
            adapter.events.moveRow = { ctx in moves.append("\(ctx.model.id) \(ctx.from.row)→\(ctx.to.row)") }
        }
        #expect(await eventually { screen.director.snapshot.numberOfModels == 8 })
        screen.table.setEditing(true, animated: false)
        screen.table.layoutIfNeeded()
        let reloads = screen.table.reloads
        // A remote change arrives at the client, but not yet at the main queue: the main
        // actor does not yield from the write until the drag, so the change's delivery
        // (queued for the main queue) waits behind the drag.
        let other = try daemon.client("other", seed: 4)
        let remote = other.director("drag")
        try await remote.waitUntilLoaded()
        try #require(await eventually { remote.snapshot.numberOfModels == 8 })
        _ = try remote.section(id: "friends")!.add(model: Contact(id: "top", name: "Top"), at: 0)
        let deadline = ContinuousClock.now.advanced(by: .seconds(10))
        // The replica has it…
        while list.snapshot.numberOfModels != 9 && ContinuousClock.now < deadline { usleep(500) }
        #expect(list.snapshot.numberOfModels == 9)
        #expect(screen.director.snapshot.numberOfModels == 8, "…the table does not yet")
        let moved = screen.table.simulateMove(from: IndexPath(row: 0, section: 0), to: IndexPath(row: 2, section: 1))
        #expect(moved == IndexPath(row: 2, section: 1))
        #expect(moves == ["c0 0→2"])
        #expect(screen.table.simulatedDisagreementsWithDataSource().isEmpty)
        #expect(await eventually { remote.snapshot.director.rowPath(id: "c0") == RowPath(section: 1, row: 2) })
        #expect(
            await eventually {
                screen.director.snapshot.director == list.snapshot.director
                    && !screen.director.presenter.applier.hasViewEdits
            })
        screen.table.layoutIfNeeded()
        #expect(screen.table.reloads == reloads, "the drag was shown with reloadData")
        #expect(screen.table.simulationFailures.isEmpty, "\(screen.table.simulationFailures)")
        #expect(screen.table.cellsThatDisagree(with: screen.director.snapshot).isEmpty)
        #expect(screen.director.snapshot.director.rowPath(id: "top") == RowPath(section: 0, row: 0))
        other.close()
        client.close()
        await daemon.stop()
    }

    @Test func sizingModes() async throws {
        let (daemon, client, list) = try await Self.setUp("sizing")
        let screen = Self.screen(list) { adapter in adapter.sizing = .fixed(72) }
        #expect(await eventually { screen.director.snapshot.numberOfModels == 8 })
        screen.table.layoutIfNeeded()
        #expect(screen.table.rectForRow(at: IndexPath(row: 0, section: 0)).height == 72)
        #expect(screen.director.tableView(screen.table, estimatedHeightForRowAt: IndexPath(row: 0, section: 0)) == 72)
        screen.adapter.sizing = .automatic(estimated: 90)
        #expect(
            screen.director.tableView(screen.table, heightForRowAt: IndexPath(row: 0, section: 0))
                == UITableView.automaticDimension)
        #expect(screen.director.tableView(screen.table, estimatedHeightForRowAt: IndexPath(row: 0, section: 0)) == 90)
        screen.adapter.sizing = .default
        screen.table.rowHeight = 50
        #expect(screen.director.tableView(screen.table, heightForRowAt: IndexPath(row: 0, section: 0)) == 50)
        screen.adapter.events.rowHeight = { ctx in ctx.model.id == "c1" ? 120 : 40 }
        screen.table.reloadData()
        screen.table.layoutIfNeeded()
        #expect(screen.table.rectForRow(at: IndexPath(row: 1, section: 0)).height == 120)
        #expect(screen.table.rectForRow(at: IndexPath(row: 2, section: 0)).height == 40)
        client.close()
        await daemon.stop()
    }

    @Test func headerViewsAreTypedAndAHeaderChangeReconfiguresOnlyTheHeader() async throws {
        let (daemon, client, list) = try await Self.setUp("headers")
        let screen = Self.screen(list)
        screen.director.register(
            header: TableHeaderFooterAdapter<TeamHeader, TeamHeaderView> { adapter in
                adapter.events.dequeue = { ctx in
                    ctx.view?.shown = ctx.value
                    ctx.view?.configurations += 1
                }
                adapter.sizing = .fixed(40)
            })
        #expect(await eventually { screen.director.snapshot.numberOfModels == 8 })
        // A footer that appears changes the section's layout: that one reloads the section.
        _ = try await list.section(id: "friends")!.set(footer: "4 friends").committed()
        #expect(await eventually { screen.director.snapshot.director.sections[0].footer != nil })
        #expect(screen.table.animations.contains { $0.hasPrefix("reloadSections [0]") })
        screen.table.animations.removeAll()
        screen.table.layoutIfNeeded()
        let header = try #require(screen.table.headerView(forSection: 0) as? TeamHeaderView)
        #expect(header.shown == TeamHeader(title: "Friends", count: 4))
        let cell = try #require(screen.table.simulatedCell(at: IndexPath(row: 0, section: 0)) as? ContactCell)
        let cellConfigurations = cell.configurations
        // Header and footer of one section changed in one write: the section is touched
        // once, its header view is reconfigured in place and its footer title set in its
        // view, its cells are not reloaded.
        _ = try await list.perform { batch in
            try batch.section("friends").set(header: TeamHeader(title: "Pals", count: 4))
            try batch.section("friends").set(footer: "4 pals")
        }.committed()
        #expect(
            await eventually { (screen.table.headerView(forSection: 0) as? TeamHeaderView)?.shown?.title == "Pals" })
        screen.table.layoutIfNeeded()
        #expect(screen.table.headerView(forSection: 0) === header, "the header view was replaced, not reconfigured")
        #expect(
            screen.table.simulatedCell(at: IndexPath(row: 0, section: 0)) === cell
                && cell.configurations == cellConfigurations,
            "the section's cells were reloaded")
        #expect(!screen.table.animations.contains { $0.hasPrefix("reloadSections [0]") })
        #expect(screen.table.simulationFailures.isEmpty, "\(screen.table.simulationFailures)")
        #expect(screen.table.rectForHeader(inSection: 0).height == 40)
        // Without a footer adapter, the footer is its JSON string as a title.
        #expect(screen.director.tableView(screen.table, titleForFooterInSection: 0) == "4 pals")
        #expect(
            (screen.table.footerView(forSection: 0)?.contentConfiguration as? UIListContentConfiguration)?.text
                == "4 pals")
        client.close()
        await daemon.stop()
    }

    @Test func prefetchHandsTheAdapterItsModels() async throws {
        let (daemon, client, list) = try await Self.setUp("prefetch")
        _ = try await list.section(id: "work")!.add(
            models: (0..<60).map { Contact(id: "p\($0)", name: "P\($0)") }, at: 4
        ).committed()
        var prefetched: [String] = []
        let screen = Self.screen(list) { adapter in
            adapter.events.prefetch = { models, _ in prefetched += models.map(\.id) }
        }
        #expect(await eventually { screen.director.snapshot.numberOfModels == 68 })
        screen.table.layoutIfNeeded()
        screen.table.simulateScroll(to: CGPoint(x: 0, y: 400))
        #expect(!prefetched.isEmpty)
        #expect(prefetched.allSatisfy { $0.hasPrefix("p") || $0.hasPrefix("c") })
        #expect(screen.table.simulationFailures.isEmpty)
        client.close()
        await daemon.stop()
    }

    @Test func displayLeadingSwipeAccessoryRetargetAndFlowKitNames() async throws {
        let (daemon, client, list) = try await Self.setUp("events")
        var log: [String] = []
        let (window, table) = tableInWindow()
        let director = TableDirector(table: table, list: list)
        // FlowKit's spelling: TableAdapter and `on`.
        let adapter = TableAdapter<Contact, ContactCell> { adapter in
            adapter.on.dequeue = { ctx in ctx.cell?.shown = ctx.model }
            adapter.on.willDisplay = { ctx in log.append("show \(ctx.model.id)") }
            adapter.on.endDisplay = { ctx in log.append("hide \(ctx.model.id)") }
            adapter.on.tapOnAccessory = { ctx in log.append("accessory \(ctx.model.id)") }
            adapter.on.leadingSwipeActions = { ctx in
                UISwipeActionsConfiguration(actions: [
                    UIContextualAction(style: .normal, title: "Star \(ctx.model.id)") { _, _, done in done(true) }
                ])
            }
            adapter.on.moveAdjustDestination = { ctx, proposed in
                // Rows stay in their own section.
                proposed.section == ctx.indexPath.section ? proposed : IndexPath(row: 0, section: ctx.indexPath.section)
            }
            adapter.on.rowHeightEstimated = { _ in 33 }
            adapter.canReorder = true
        }
        director.register(adapter)
        #expect(await eventually { director.snapshot.numberOfModels == 8 })
        table.layoutIfNeeded()
        #expect(log.contains("show c0") && log.contains("show c7"))
        // A deleted row's cell ends its display with the model it showed.
        log.removeAll()
        _ = try await list.remove(modelID: "c1").committed()
        #expect(await eventually { log.contains("hide c1") })
        director.tableView(table, accessoryButtonTappedForRowWith: IndexPath(row: 0, section: 0))
        #expect(log.contains("accessory c0"))
        let star = try #require(table.simulateSwipe(.leading, at: IndexPath(row: 1, section: 0)))
        #expect(star.actions.map(\.title) == ["Star c2"])
        table.simulateEndSwipe()
        #expect(director.tableView(table, estimatedHeightForRowAt: IndexPath(row: 0, section: 0)) == 33)
        table.setEditing(true, animated: false)
        let landed = table.simulateMove(from: IndexPath(row: 0, section: 0), to: IndexPath(row: 2, section: 1))
        #expect(landed == IndexPath(row: 0, section: 0) || landed == nil)  // retargeted into its own section
        #expect(list.snapshot.director.rowPath(id: "c0")?.section == 0)
        #expect(table.simulationFailures.isEmpty, "\(table.simulationFailures)")
        _ = window
        client.close()
        await daemon.stop()
    }
}
