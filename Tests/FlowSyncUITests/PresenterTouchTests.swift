import Dispatch
import FlowSyncClient
import FlowSyncCore
import FlowSyncTestSupport
import FlowSyncUI
import Testing

/// Touches against a real daemon while another client writes: drags, deferred swipe
/// deletes and taps through a ``ListPresenter`` on a simulated view, seeded.
///
/// After every step: the view never got an invalid batch, the data source agrees with
/// what the view shows, no change was shown with `reloadData`; every drag left the
/// dragged row where it was dropped; every tap meant the row the view showed; every
/// deferred delete deleted the row the user swiped, never another. At the end both
/// replicas and the view agree. And the previously documented way (a drag written with
/// `withoutNotifying`, the delete reading the row ID at the index path from the
/// applier) is shown deleting the wrong row, so this test tells the two apart.
@Suite(.timeLimit(.minutes(3))) struct PresenterTouchTests {
    struct Contact: FlowModel {
        static let flowKind = "contact"
        var id: String
        var name: String
    }

    /// The presenter and its view, touched only on `queue` (the observer's queue, as
    /// the main queue is for UIKit).
    final class Screen: @unchecked Sendable {
        let queue = DispatchQueue(label: "screen")
        let view = SimulatedListView(displaying: Director())
        let presenter: ListPresenter<SimulatedListView, String>
        var findings: [String] = []
        var drags = 0, deletes = 0, taps = 0, refusedDrags = 0
        /// Row IDs this screen deleted, by the seq of the write.
        var deletedByUs: [UInt64: String] = [:]
        /// The delete tickets, to tell a refused delete in a failure message.
        var deleteTickets: [UInt64: WriteTicket] = [:]
        /// The row a swipe is open on, until its Delete is tapped.
        var openSwipe: RowHandle?

        init(list: ListDirector) {
            presenter = ListPresenter(list: list, target: view)
            presenter.register("contact", forKind: Contact.flowKind) { row in row.id }
            view.dataSource = { [unowned presenter] in presenter.snapshot.director }
        }

        /// Checks the invariants that hold after every step.
        func check(_ step: String) {
            if let problem = view.problems.first { findings.append("\(step): \(problem)") }
            if view.reloads != 0 { findings.append("\(step): reloadData") }
            if presenter.snapshot.director != view.displayed {
                findings.append("\(step): the data source differs from the view")
            }
        }

        func read<T>(_ body: (Screen) -> T) -> T { queue.sync { body(self) } }
    }

    @Test(arguments: [11, 12, 13] as [UInt64])
    func touchesWhileAnotherClientWrites(seed: UInt64) async throws {
        let server = try await EmbeddedServer()
        let a = try FlowSyncClient(
            configuration: .init(
                port: server.port, clientID: "a", callbackQueue: DispatchQueue(label: "a"), randomSeed: seed))
        let b = try FlowSyncClient(
            configuration: .init(
                port: server.port, clientID: "b", callbackQueue: DispatchQueue(label: "b"), randomSeed: seed + 100))
        let listA = a.director("touch"), listB = b.director("touch")
        try await listA.waitUntilLoaded()
        try await listB.waitUntilLoaded()
        let contacts = (0..<12).map { Contact(id: "c\($0)", name: "C\($0)") }
        _ = try await listA.set(sections: [
            NewSection(id: "s0", models: Array(contacts[0..<6])),
            NewSection(id: "s1", models: Array(contacts[6...])),
        ]).committed()
        try #require(await eventually { listB.snapshot.numberOfModels == 12 })

        let screen = Screen(list: listA)
        screen.queue.sync { screen.presenter.follow(on: screen.queue) }
        #expect(await eventually { screen.read { $0.presenter.snapshot.numberOfModels == 12 } })

        // The other writer: inserts, deletes, moves and updates of its own, by identity.
        let writer = Task {
            var random = SeededRandom(seed: seed &* 31)
            var tickets: [WriteTicket] = []
            for n in 0..<120 {
                let snapshot = listB.snapshot
                let ids = snapshot.director.sections.flatMap { $0.rows.map(\.id) }
                let ticket: WriteTicket?
                switch random.int(0..<4) {
                case 0:
                    ticket = try? listB.section(id: random.chance(0.5) ? "s0" : "s1")?.add(
                        model: Contact(id: "b\(n)", name: "B\(n)"), at: 0)
                case 1 where ids.count > 6: ticket = try? listB.remove(modelID: ids[random.int(0..<ids.count)])
                case 2 where !ids.isEmpty:
                    ticket = try? listB.update(model: Contact(id: ids[random.int(0..<ids.count)], name: "B-edit-\(n)"))
                default:
                    let section = snapshot.director.sections[random.int(0..<snapshot.director.sections.count)]
                    ticket =
                        section.rows.count > 1
                        ? try? listB.section(id: section.id)?.move(from: 0, to: random.int(1..<section.rows.count))
                        : nil
                }
                if let ticket { tickets.append(ticket) }
                if n % 10 == 0 { await Task.yield() }
            }
            for ticket in tickets { _ = try? await ticket.committed() }
        }

        // The user, on the screen's queue: taps, drags and swipes that are confirmed a few
        // turns later (changes land in between).
        // What each of this client's writes deleted, as the list delivers it.
        let localDeletes = Shared<[UInt64: [String]]>([:])
        // Every change that brought a row in, for a failure message: which change made a
        // deleted row come back, if one did.
        let arrivals = Shared<[String: [String]]>([:])
        let audit = listA.observe(on: DispatchQueue(label: "audit"), includingCurrent: false) { change in
            let before = Set(change.previous.director.sections.flatMap { $0.rows.map(\.id) })
            for row in change.snapshot.director.sections.flatMap(\.rows) where !before.contains(row.id) {
                arrivals.update {
                    $0[row.id, default: []].append(
                        "\(change.cause) v\(change.snapshot.version.map { "\($0)" } ?? "-") pending \(change.snapshot.pendingWrites) stages \(change.changeset.stages.count)"
                    )
                }
            }
            guard case .local(let seq) = change.cause else { return }
            var ids: [String] = []
            var state = change.previous.director
            for stage in change.changeset.stages {
                ids += stage.rowDeletes.map { state[$0].id }
                try? stage.apply(to: &state)
            }
            // A move is a delete and an insert of the same row in a diffed stage: not a deletion.
            ids.removeAll { change.snapshot.director.rowPath(id: $0) != nil }
            localDeletes.update { $0[seq] = ids }
        }
        var random = SeededRandom(seed: seed)
        for step in 0..<250 {
            let action = random.int(0..<10)
            let pick = random.next()
            screen.queue.async {
                let director = screen.presenter.snapshot.director
                let paths = director.sections.enumerated().flatMap { s, section in
                    section.rows.indices.map { RowPath(section: s, row: $0) }
                }
                guard !paths.isEmpty else { return }
                let path = paths[Int(pick % UInt64(paths.count))]
                switch action {
                case 0...2:  // a tap means the row the view shows there
                    screen.taps += 1
                    if screen.presenter.item(at: path)?.row.id != screen.view.displayed[path].id {
                        screen.findings.append("step \(step): a tap at \(path) meant another row")
                    }
                case 3...5:  // a drag: the view moves the row, then tells the data source
                    let sections = director.sections
                    let toSection = Int((pick >> 20) % UInt64(sections.count))
                    let count = sections[toSection].rows.count - (toSection == path.section ? 1 : 0)
                    let to = RowPath(section: toSection, row: Int((pick >> 40) % UInt64(count + 1)))
                    guard to != path else { return }
                    let id = director[path].id
                    screen.view.userMoved(from: path, to: to)
                    switch screen.presenter.viewDidMoveRow(from: path, to: to) {
                    case .written: screen.drags += 1
                    case .refused(_, let token):
                        screen.refusedDrags += 1
                        screen.queue.async { screen.presenter.undoViewMove(token) }
                    case .unchanged: screen.findings.append("step \(step): a drag \(path) → \(to) wrote nothing")
                    }
                    if screen.presenter.row(at: to)?.id != id {
                        screen.findings.append("step \(step): the dragged row is not where it was dropped")
                    }
                case 6...7:  // a swipe opens on a row…
                    screen.openSwipe = screen.presenter.item(at: path)?.handle
                default:  // …and its Delete is tapped later, whatever landed meanwhile
                    guard let handle = screen.openSwipe else { return }
                    screen.openSwipe = nil
                    if let ticket = try? screen.presenter.remove(handle) {
                        screen.deletes += 1
                        screen.deletedByUs[ticket.seq] = handle.rowID
                        screen.deleteTickets[ticket.seq] = ticket
                    }
                }
                screen.check("step \(step)")
            }
            if step % 5 == 0 { try await Task.sleep(for: .milliseconds(1)) }
        }
        await writer.value
        // The user's last steps first: they were queued on the screen's queue and may not
        // have run yet on a loaded machine (then their deletes would land after `final`
        // below was taken). Twice, for the undo a refused drag queues behind them.
        for _ in 0..<2 { await withCheckedContinuation { done in screen.queue.async { done.resume() } } }
        // Quiet: both replicas agree, and the view shows the list.
        let converged = await eventually {
            listA.snapshot.pendingWrites == 0 && listB.snapshot.pendingWrites == 0
                && listA.snapshot.director == listB.snapshot.director
        }
        #expect(converged, "seed \(seed)")
        let final = listA.snapshot.director
        let shownConverged = await eventually {
            screen.read { $0.presenter.snapshot.director == final && !$0.presenter.applier.hasViewEdits }
        }
        #expect(
            shownConverged,
            "seed \(seed): view edits \(screen.read { $0.presenter.applier.hasViewEdits }), shown \(screen.read { UIKitBatchSimulator.dump($0.presenter.snapshot.director) }) final \(UIKitBatchSimulator.dump(final))"
        )
        let (findings, drags, deletes, taps, deleted) = screen.read {
            ($0.findings, $0.drags, $0.deletes, $0.taps, $0.deletedByUs)
        }
        #expect(findings.isEmpty, "seed \(seed): \(findings.prefix(3))")
        // Every delete deleted the swiped row and nothing else, and it is gone.
        audit.cancel()
        let seen = localDeletes.get()
        for (seq, id) in deleted {
            #expect(seen[seq] == [id], "seed \(seed): the delete of \(id) deleted \(seen[seq] ?? [])")
            if final.rowPath(id: id) != nil {
                // The server's own state, through a client that never wrote.
                let c = try FlowSyncClient(
                    configuration: .init(port: server.port, clientID: "c", callbackQueue: DispatchQueue(label: "c")))
                let listC = c.director("touch")
                try await listC.waitUntilLoaded()
                Issue.record(
                    "seed \(seed): swiped row \(id) is still there; its delete: \(screen.read { $0.deleteTickets[seq]?.description ?? "-" }); on the server: \(listC.snapshot.director.rowPath(id: id).map { "\($0)" } ?? "absent") at \(listC.snapshot.version.map { "\($0)" } ?? "-"); A at \(listA.snapshot.version.map { "\($0)" } ?? "-"); its arrivals in A: \(arrivals.get()[id] ?? [])"
                )
                c.close()
            }
        }
        #expect(
            drags > 10 && taps > 10 && deletes > 3, "seed \(seed): \(drags) drags, \(taps) taps, \(deletes) deletes")
        print(
            "presenter touches, seed \(seed): \(drags) drags, \(deletes) deferred deletes, \(taps) taps, \(findings.count) findings"
        )
        screen.queue.sync { screen.presenter.stopFollowing() }
        a.close()
        b.close()
        #expect(await server.stop())
    }

    /// The way the docs showed before FlowSyncUI had directors: a drag written with
    /// `perform(withoutNotifying:)` (the applier keeps the old snapshot), then a swipe
    /// to delete that reads the row ID at the index path from the applier. The user
    /// swipes the row the view shows at 0 — `b`, after dragging `a` down — and the old
    /// way deletes `a`. The presenter deletes `b`.
    @Test func theOldDocumentedWayDeletesTheWrongRowAfterADrag() async throws {
        let server = try await EmbeddedServer()
        let client = try FlowSyncClient(
            configuration: .init(
                port: server.port, clientID: "old", callbackQueue: DispatchQueue(label: "old"),
                randomSeed: 5))
        let list = client.director("old-way")
        try await list.waitUntilLoaded()
        let rows = ["a", "b", "c", "d"].map { Contact(id: $0, name: $0.uppercased()) }
        _ = try await list.set(sections: [NewSection(id: "s", models: rows)]).committed()

        // The old way: an applier fed by an observer on its screen queue; the drag is
        // written without notifying that observer, as the docs recommended.
        final class OldScreen: @unchecked Sendable {
            let view: SimulatedListView
            let applier: ListUpdateApplier<SimulatedListView>
            init(_ snapshot: ListSnapshot) {
                view = SimulatedListView(displaying: snapshot.director)
                applier = ListUpdateApplier(target: view, snapshot: snapshot)
                view.dataSource = { [unowned applier] in applier.snapshot.director }
            }
        }
        let screen = DispatchQueue(label: "old-screen")
        let old = OldScreen(list.snapshot)
        let observation = list.observe(on: screen, includingCurrent: false) { change in old.applier.apply(change) }
        let oldWayID = try screen.sync { () throws -> String in
            old.view.userMoved(from: RowPath(section: 0, row: 0), to: RowPath(section: 0, row: 2))
            _ = try list.perform(withoutNotifying: [observation]) { batch in try batch.section("s").move(from: 0, to: 2)
            }
            // The user swipes the row the view shows at 0 and taps Delete: the old data
            // source reads the ID at that index path from the applier.
            #expect(old.view.displayed[RowPath(section: 0, row: 0)].id == "b")
            return old.applier.snapshot.director[RowPath(section: 0, row: 0)].id
        }
        #expect(oldWayID == "a", "the old way reads the ID from a snapshot without the drag: it would delete a, not b")
        _ = try await list.section(id: "s")!.add(model: Contact(id: "z", name: "Z"), at: 4).committed()
        observation.cancel()

        // The presenter, on the same drag and swipe.
        final class Box: @unchecked Sendable {
            var presenter: ListPresenter<SimulatedListView, String>?
            let view = SimulatedListView(displaying: Director())
        }
        let box = Box()
        let queue = DispatchQueue(label: "new-screen")
        queue.sync {
            let presenter = ListPresenter<SimulatedListView, String>(list: list, target: box.view)
            box.view.dataSource = { [unowned presenter] in presenter.snapshot.director }
            presenter.follow(on: queue)
            box.presenter = presenter
        }
        #expect(await eventually { queue.sync { box.presenter!.snapshot.numberOfModels == 5 } })
        let (newWayID, problems) = queue.sync { () -> (String?, [String]) in
            let presenter = box.presenter!
            // The list now has a at 2 (the old way's drag); drag it back up to 0, as the
            // user would, then swipe the row shown at 2.
            box.view.userMoved(from: RowPath(section: 0, row: 2), to: RowPath(section: 0, row: 0))
            _ = presenter.viewDidMoveRow(from: RowPath(section: 0, row: 2), to: RowPath(section: 0, row: 0))
            let handle = presenter.item(at: RowPath(section: 0, row: 2))?.handle
            #expect(handle?.rowID == box.view.displayed[RowPath(section: 0, row: 2)].id)
            return (handle?.rowID, box.view.problems)
        }
        #expect(newWayID == "c" && problems.isEmpty, "\(problems)")
        queue.sync { box.presenter = nil }
        client.close()
        #expect(await server.stop())
    }
}
