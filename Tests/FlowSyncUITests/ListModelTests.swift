import Dispatch
import FlowSyncClient
import FlowSyncCore
import FlowSyncTestSupport
import FlowSyncUI
import Observation
import Testing

/// The SwiftUI model: Observation tracks its snapshot on Linux as on Apple platforms.
@Suite(.timeLimit(.minutes(1))) @MainActor struct ListModelTests {
    final class Flag: @unchecked Sendable {
        // Set from the onChange callback, which runs synchronously inside `apply`.
        var fired = 0
    }

    @Test func applyingAChangeNotifiesObservers() throws {
        let model = ListModel(snapshot: ListSnapshot(name: "l"))
        let flag = Flag()
        withObservationTracking {
            _ = model.sections.count
        } onChange: {
            flag.fired += 1
        }
        let new = try Director(sections: [Section(id: "s", rows: [Row(id: "a")])])
        let change = ListChange(
            cause: .initial, previous: ListSnapshot(name: "l"), changeset: Changeset.diff(from: Director(), to: new),
            snapshot: ListSnapshot(name: "l", director: new))
        model.apply(change)
        #expect(flag.fired == 1)
        #expect(model.snapshot.director == new)
        #expect(model.sections.map(\.id) == ["s"])
        #expect(model.lastChange?.cause == .initial)
        #expect(!model.isLoaded)
    }

    @Test func readersOfOtherPropertiesAreNotNotifiedOfFailures() {
        let model = ListModel(snapshot: ListSnapshot(name: "l"))
        let flag = Flag()
        withObservationTracking {
            _ = model.failure
        } onChange: {
            flag.fired += 1
        }
        model.apply(
            ListChange(
                cause: .remote, previous: ListSnapshot(name: "l"), changeset: Changeset(),
                snapshot: ListSnapshot(name: "l")))
        #expect(flag.fired == 0)
    }

    /// Waits, by observation (no polling), until `predicate` holds.
    func waitUntil(_ model: ListModel, _ predicate: (ListModel) -> Bool) async {
        while !predicate(model) {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                // Changes come only on the main actor, where this runs: none can slip in
                // between the check above and the tracking.
                withObservationTracking {
                    _ = model.snapshot
                } onChange: {
                    continuation.resume()
                }
            }
        }
    }

    @Test func aModelFollowsADirectorFromItsCurrentState() async throws {
        let server = try await EmbeddedServer()
        let client = try FlowSyncClient(
            configuration: .init(port: server.port, callbackQueue: DispatchQueue(label: "model")))
        let list = client.director("model")
        try await list.waitUntilLoaded()
        _ = try await list.add(section: NewSection(id: "a")).committed()
        let model = ListModel(director: list)  // late: the list is loaded and edited
        await waitUntil(model) { $0.sections.map(\.id) == ["a"] }
        #expect(model.isLoaded)
        _ = try list.add(section: NewSection(id: "b"))
        await waitUntil(model) { $0.sections.map(\.id) == ["a", "b"] }
        #expect(model.lastChange?.previous.director.sections.map(\.id) == ["a"])
        client.close()
        #expect(await server.stop())
    }
}
