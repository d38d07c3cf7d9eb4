import Dispatch
import FlowSyncClient
import FlowSyncCore
import FlowSyncTestSupport
import FlowSyncUI
import Testing

/// The applier fed by a real client: two writers edit one list at once (so changes
/// arrive as local edits, remote batches and diffs over pending writes), an observer
/// starts late, and every change goes through the applier into the simulated view.
@Suite(.timeLimit(.minutes(2))) struct ClientApplierTests {
    /// The applier and its view, touched only on `queue` (the observer's queue).
    final class Screen: @unchecked Sendable {
        let queue = DispatchQueue(label: "screen")
        let view = SimulatedListView(displaying: Director())
        lazy var applier: ListUpdateApplier<SimulatedListView> = {
            let applier = ListUpdateApplier(target: view)
            view.dataSource = { [unowned applier] in applier.snapshot.director }
            return applier
        }()
        var outcomes: [ListUpdateApplier<SimulatedListView>.Outcome] = []
        var multiStage = 0
        func apply(_ change: ListChange) {
            if change.changeset.stages.count > 1 { multiStage += 1 }
            outcomes.append(applier.apply(change))
        }
        func read<T>(_ body: (Screen) -> T) -> T { queue.sync { body(self) } }
    }

    @Test func concurrentWritersThroughTheApplierRaiseNoInvalidUpdate() async throws {
        let server = try await EmbeddedServer()
        let a = try FlowSyncClient(
            configuration: .init(
                port: server.port, clientID: "a", callbackQueue: DispatchQueue(label: "a"), randomSeed: 1))
        let b = try FlowSyncClient(
            configuration: .init(
                port: server.port, clientID: "b", callbackQueue: DispatchQueue(label: "b"), randomSeed: 2))
        let listA = a.director("shared"), listB = b.director("shared")
        try await listA.waitUntilLoaded()
        try await listB.waitUntilLoaded()
        _ = try await listA.set(sections: [NewSection(id: "s0"), NewSection(id: "s1")]).committed()

        let screen = Screen()
        let observation = listA.observe(on: screen.queue) { change in screen.apply(change) }
        // Seeded random edits from both clients at once, as raw operations generated
        // against each writer's own replica.
        func write(_ list: ListDirector, seed: UInt64, prefix: String) async throws {
            var generator = DirectorGenerator(seed: seed, idPrefix: prefix)
            var tickets: [WriteTicket] = []
            for _ in 0..<150 {
                let group = generator.group(for: list.snapshot.director, maxOps: 3)
                if let ticket = try? list.submit(group) { tickets.append(ticket) }
            }
            for ticket in tickets { _ = try? await ticket.committed() }
        }
        async let writerA: Void = write(listA, seed: 41, prefix: "a")
        async let writerB: Void = write(listB, seed: 42, prefix: "b")
        _ = try await (writerA, writerB)
        // Both replicas converge on the server's state; then the screen shows it.
        let converged = await eventually {
            listA.snapshot.director == listB.snapshot.director && listA.snapshot.pendingWrites == 0
        }
        #expect(converged)
        let final = listA.snapshot.director
        #expect(await eventually { screen.read { $0.view.displayed == final } })
        observation.cancel()
        let (problems, outcomes, multiStage) = screen.read { ($0.view.problems, $0.outcomes, $0.multiStage) }
        #expect(problems.isEmpty, "\(problems.prefix(2))")
        let reloads = outcomes.filter { if case .reloaded = $0 { return true } else { return false } }
        #expect(reloads.isEmpty, "\(reloads)")
        #expect(outcomes.count > 10)
        print("client → applier: \(outcomes.count) changes, \(multiStage) of several stages")
        a.close()
        b.close()
        #expect(await server.stop())
    }
}
