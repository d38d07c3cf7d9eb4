import Dispatch
import FlowSyncClient
import FlowSyncCore
import Foundation
import Testing
@_spi(Simulation) import UIKit

@testable import FlowSyncUI

final class ContactItemCell: UICollectionViewCell {
    var shown: Contact?
    var configurations = 0
}

final class TeamHeaderItemView: UICollectionReusableView {
    var shown: TeamHeader?
    var configurations = 0
}

/// CollectionDirector on the simulated UICollectionView against a real daemon: cells by
/// kind with the fallback, flow-layout sizing, supplementary headers reconfigured in
/// place, selection, swipes through a list layout's providers, interactive reorder with a
/// remote change in flight, and a seeded run of remote changes and touches.
@Suite(.serialized, .timeLimit(.minutes(2))) @MainActor struct CollectionDirectorTests {
    struct Screen {
        let window: UIWindow
        let view: UICollectionView
        let director: CollectionDirector
        let adapter: CollectionCellAdapter<Contact, ContactItemCell>
    }

    static func screen(
        _ list: ListDirector, layout: UICollectionViewLayout? = nil,
        configure: (CollectionCellAdapter<Contact, ContactItemCell>) -> Void = { _ in }
    ) -> Screen {
        let flow = UICollectionViewFlowLayout()
        flow.itemSize = CGSize(width: 390, height: 50)
        let view = UICollectionView(
            frame: CGRect(x: 0, y: 0, width: 390, height: 844), collectionViewLayout: layout ?? flow)
        let window = UIWindow(frame: CGRect(x: 0, y: 0, width: 390, height: 844))
        window.addSubview(view)
        let director = CollectionDirector(collection: view, list: list)
        let adapter = CollectionCellAdapter<Contact, ContactItemCell> { adapter in
            adapter.events.dequeue = { ctx in
                ctx.cell?.shown = ctx.model
                ctx.cell?.configurations += 1
            }
        }
        configure(adapter)
        director.register(adapter)
        return Screen(window: window, view: view, director: director, adapter: adapter)
    }

    static func disagreements(_ view: UICollectionView, _ director: CollectionDirector) -> [String] {
        var lines: [String] = []
        for path in view.simulatedVisibleIndexPaths {
            guard let shown = (view.simulatedCell(at: path) as? ContactItemCell)?.shown else { continue }
            let id = director.presenter.row(at: RowPath(section: path.section, row: path.item))?.id
            if id != shown.id {
                lines.append("\(path): cell shows \(shown.id), the data source has \(id ?? "nothing")")
            }
        }
        return lines
    }

    @Test func displayEventsAndPrefetchReachTheAdapter() async throws {
        let (daemon, client, list) = try await TableDirectorTests.setUp("collection-display")
        _ = try await list.section(id: "work")!.add(models: (0..<40).map { Contact(id: "p\($0)", name: "P") }, at: 4)
            .committed()
        var log: [String] = []
        var prefetched: [String] = []
        let screen = Self.screen(list) { adapter in
            adapter.on.willDisplay = { ctx in log.append("show \(ctx.model.id)") }
            adapter.on.endDisplay = { ctx in log.append("hide \(ctx.model.id)") }
            adapter.on.prefetch = { models, _ in prefetched += models.map(\.id) }
        }
        #expect(await eventually { screen.director.snapshot.numberOfModels == 48 })
        screen.view.layoutIfNeeded()
        #expect(log.contains("show c0"))
        screen.view.simulateScroll(to: CGPoint(x: 0, y: 1_200))
        #expect(log.contains("hide c0"))
        #expect(!prefetched.isEmpty)
        #expect(screen.view.simulationFailures.isEmpty)
        client.close()
        await daemon.stop()
    }

    @Test func itemsByKindSizingAndFallback() async throws {
        let (daemon, client, list) = try await TableDirectorTests.setUp("items")
        _ = try await list.section(id: "friends")!.add(model: Banner(id: "b1", text: "hello"), at: 0).committed()
        let screen = Self.screen(list) { adapter in adapter.sizing = .fixed(CGSize(width: 100, height: 70)) }
        #expect(await eventually { screen.director.snapshot.numberOfModels == 9 })
        screen.view.layoutIfNeeded()
        #expect(screen.view.simulationFailures.isEmpty, "\(screen.view.simulationFailures)")
        #expect(Self.disagreements(screen.view, screen.director).isEmpty)
        #expect(
            screen.view.simulatedCell(at: IndexPath(item: 0, section: 0))?.reuseIdentifier
                == CollectionDirector.fallbackReuseIdentifier)
        #expect(
            screen.view.simulatedFrame(ofItemAt: IndexPath(item: 1, section: 0))?.size == CGSize(width: 100, height: 70)
        )
        #expect(
            screen.director.collectionView(
                screen.view, layout: screen.view.collectionViewLayout,
                sizeForItemAt: IndexPath(item: 0, section: 0)) == .zero)  // the fallback's size
        // Automatic sizing sets the flow layout's estimatedItemSize.
        let automatic = CollectionCellAdapter<Banner, ContactItemCell> { adapter in
            adapter.sizing = .automatic(estimated: CGSize(width: 390, height: 44))
        }
        screen.director.register(automatic)
        #expect(
            (screen.view.collectionViewLayout as? UICollectionViewFlowLayout)?.estimatedItemSize
                == UICollectionViewFlowLayout.automaticSize)
        client.close()
        await daemon.stop()
    }

    @Test func headersAreSupplementaryViewsReconfiguredInPlace() async throws {
        let (daemon, client, list) = try await TableDirectorTests.setUp("collection-headers")
        let screen = Self.screen(list)
        screen.director.register(
            header: CollectionSupplementaryAdapter<TeamHeader, TeamHeaderItemView> { adapter in
                adapter.events.dequeue = { ctx in
                    ctx.view?.shown = ctx.value
                    ctx.view?.configurations += 1
                }
                adapter.sizing = .fixed(CGSize(width: 390, height: 30))
            })
        #expect(await eventually { screen.director.snapshot.numberOfModels == 8 })
        screen.view.layoutIfNeeded()
        let kind = UICollectionView.elementKindSectionHeader
        let header = try #require(
            screen.view.simulatedSupplementaryView(ofKind: kind, at: IndexPath(item: 0, section: 0))
                as? TeamHeaderItemView)
        #expect(header.shown?.title == "Friends")
        let cell = try #require(screen.view.simulatedCell(at: IndexPath(item: 0, section: 0)) as? ContactItemCell)
        let configurations = cell.configurations
        _ = try await list.section(id: "friends")!.set(header: TeamHeader(title: "Pals", count: 4)).committed()
        #expect(await eventually { header.shown?.title == "Pals" })
        screen.view.layoutIfNeeded()
        #expect(screen.view.simulatedSupplementaryView(ofKind: kind, at: IndexPath(item: 0, section: 0)) === header)
        #expect(
            screen.view.simulatedCell(at: IndexPath(item: 0, section: 0)) === cell
                && cell.configurations == configurations)
        #expect(screen.view.simulationFailures.isEmpty, "\(screen.view.simulationFailures)")
        client.close()
        await daemon.stop()
    }

    @Test func selectionSwipesThroughAListLayoutAndInteractiveReorder() async throws {
        let (daemon, client, list) = try await TableDirectorTests.setUp("collection-touch")
        var selected: [String] = []
        var moves: [String] = []
        var configuration = UICollectionLayoutListConfiguration(appearance: .plain)
        let screenBox = ScreenBox()
        configuration.trailingSwipeActionsConfigurationProvider = { indexPath in
            screenBox.director?.trailingSwipeActionsProvider(indexPath)
        }
        let screen = Self.screen(list, layout: UICollectionViewCompositionalLayout.list(using: configuration)) {
            adapter in
            adapter.events.didSelect = { ctx in selected.append(ctx.model.id) }
            adapter.events.trailingSwipeActions = { ctx in UISwipeActionsConfiguration(actions: [ctx.deleteAction()]) }
            adapter.canReorder = true
            adapter.events.moveItem = { ctx in moves.append("\(ctx.model.id) \(ctx.from.item)→\(ctx.to.item)") }
        }
        screenBox.director = screen.director
        #expect(await eventually { screen.director.snapshot.numberOfModels == 8 })
        screen.view.layoutIfNeeded()
        screen.view.simulateTap(at: IndexPath(item: 2, section: 0))
        #expect(selected == ["c2"])
        // A swipe on c1, then a remote insert above it, then Delete: c1 goes.
        let actions = try #require(screen.view.simulateSwipe(.trailing, at: IndexPath(item: 1, section: 0)))
        let other = try daemon.client("other", seed: 9)
        let remote = other.director("collection-touch")
        try await remote.waitUntilLoaded()
        _ = try await remote.section(id: "friends")!.add(model: Contact(id: "x", name: "X"), at: 0).committed()
        #expect(await eventually { screen.director.snapshot.numberOfModels == 9 })
        screen.view.simulatePerform(try #require(actions.actions.first))
        #expect(await eventually { remote.snapshot.director.rowPath(id: "c1") == nil })
        #expect(remote.snapshot.director.rowPath(id: "c0") != nil && remote.snapshot.director.rowPath(id: "x") != nil)
        // Interactive reorder of the item now at 0 (x) to the end of "work", with a remote
        // change queued behind it.
        #expect(await eventually { screen.director.snapshot.numberOfModels == 8 })
        _ = try remote.section(id: "work")!.add(model: Contact(id: "y", name: "Y"), at: 0)
        let deadline = ContinuousClock.now.advanced(by: .seconds(10))
        while list.snapshot.numberOfModels != 9 && ContinuousClock.now < deadline { usleep(500) }
        #expect(screen.director.snapshot.numberOfModels == 8, "the remote change is still queued")
        let landed = screen.view.simulateInteractiveMove(
            from: IndexPath(item: 0, section: 0), to: IndexPath(item: 3, section: 1))
        #expect(landed == IndexPath(item: 3, section: 1))
        #expect(moves == ["x 0→3"])
        #expect(await eventually { remote.snapshot.director.rowPath(id: "x")?.section == 1 })
        #expect(
            await eventually {
                screen.director.snapshot.director == list.snapshot.director
                    && !screen.director.presenter.applier.hasViewEdits
            })
        screen.view.layoutIfNeeded()
        #expect(screen.view.simulationFailures.isEmpty, "\(screen.view.simulationFailures)")
        #expect(Self.disagreements(screen.view, screen.director).isEmpty)
        other.close()
        client.close()
        await daemon.stop()
    }

    @Test(arguments: [31, 32] as [UInt64])
    func remoteChangesAndTouchesKeepItemsAndTheListTogether(seed: UInt64) async throws {
        let (daemon, client, list) = try await TableDirectorTests.setUp("collection-property-\(seed)")
        var selected: [String] = [], expected: [String] = []
        let screen = Self.screen(list) { adapter in
            adapter.events.didSelect = { ctx in selected.append(ctx.model.id) }
            adapter.canReorder = true
        }
        let other = try daemon.client("other", seed: seed)
        let remote = other.director("collection-property-\(seed)")
        try await remote.waitUntilLoaded()
        #expect(await eventually { screen.director.snapshot.numberOfModels == 8 })
        var random = SplitMix64(seed: seed)
        var findings: [String] = []
        for step in 0..<120 {
            screen.view.layoutIfNeeded()
            let visible = screen.view.simulatedVisibleIndexPaths
            if random.chance(0.4) || visible.isEmpty {
                let rows = remote.snapshot.director.sections.flatMap { Array($0.rows) }
                switch random.int(0..<3) {
                case 0:
                    _ = try? remote.section(id: random.chance(0.5) ? "friends" : "work")?.add(
                        model: Contact(id: "r\(step)", name: "R"), at: 0)
                case 1 where rows.count > 4: _ = try? remote.remove(modelID: rows[random.int(0..<rows.count)].id)
                default:
                    if !rows.isEmpty {
                        _ = try? remote.update(
                            model: Contact(id: rows[random.int(0..<rows.count)].id, name: "E\(step)"))
                    }
                }
            } else {
                let path = visible[random.int(0..<visible.count)]
                let under = (screen.view.simulatedCell(at: path) as? ContactItemCell)?.shown?.id
                if random.chance(0.5) {
                    if screen.view.simulateTap(at: path) != nil, let under { expected.append(under) }
                    screen.view.deselectItem(at: path, animated: false)
                } else {
                    let counts = screen.view.simulatedItemCounts
                    let section = random.int(0..<counts.count)
                    let limit = counts[section] - (section == path.section ? 1 : 0)
                    if limit >= 0,
                        let landed = screen.view.simulateInteractiveMove(
                            from: path, to: IndexPath(item: random.int(0...limit), section: section)),
                        let under,
                        screen.director.presenter.row(at: RowPath(section: landed.section, row: landed.item))?.id
                            != under
                    {
                        findings.append("step \(step): dragged \(under) is not at \(landed)")
                    }
                }
            }
            screen.view.layoutIfNeeded()
            findings += screen.view.simulationFailures.map { "step \(step): \($0)" }
            screen.view.simulationFailures.removeAll()
            findings += Self.disagreements(screen.view, screen.director).map { "step \(step): \($0)" }
            findings += screen.view.simulatedDisagreementsWithDataSource().map { "step \(step): \($0)" }
            if random.chance(0.3) { try? await Task.sleep(for: .milliseconds(1)) }
        }
        #expect(selected == expected)
        let converged = await eventually {
            list.snapshot.pendingWrites == 0 && list.snapshot.director == remote.snapshot.director
                && screen.director.snapshot.director == remote.snapshot.director
        }
        #expect(converged, "seed \(seed)")
        #expect(findings.isEmpty, "seed \(seed): \(findings.prefix(4))")
        other.close()
        client.close()
        await daemon.stop()
    }
}

/// Lets a list configuration's provider, made before the director, reach it.
@MainActor final class ScreenBox {
    var director: CollectionDirector?
}
