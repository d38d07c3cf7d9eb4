import Dispatch
import FlowSyncClient
import FlowSyncCore
import FlowSyncTestSupport
import Testing

/// `observe(includingCurrent:)` and `changes(includingCurrent:)`: an observer that
/// starts late begins with the current state and then sees every change exactly once,
/// however its start interleaves with edits.
@Suite(.timeLimit(.minutes(2))) struct LateObserverTests {
    @Test func aLateObserverStartsFromTheCurrentState() async throws {
        let server = try await EmbeddedServer()
        let client = try ClientTests.client(port: server.port)
        let list = client.director("late")
        try await list.waitUntilLoaded()
        _ = try await list.add(section: NewSection(id: "a", models: [Contact(id: "c1", name: "Ann")])).committed()
        let recorder = LiveRecorder(list)
        _ = try await list.add(section: NewSection(id: "b")).committed()
        #expect(recorder.failures.isEmpty, "\(recorder.failures.prefix(2))")
        #expect(recorder.causes.first == .initial)
        #expect(recorder.table == list.snapshot.director)
        #expect(recorder.table.sections.map(\.id) == ["a", "b"])

        // Without the current state, the first change starts where the list was.
        let queue = DispatchQueue(label: "old-style")
        let seen = Shared<[ListChange]>([])
        let observation = list.observe(on: queue, includingCurrent: false) { change in seen.update { $0.append(change) }
        }
        _ = try await list.remove(sectionID: "b").committed()
        queue.sync {}
        observation.cancel()
        let first = try #require(seen.get().first)
        #expect(first.previous.director.sections.map(\.id) == ["a", "b"])
        #expect(first.snapshot.director.sections.map(\.id) == ["a"])
        client.close()
        #expect(await server.stop())
    }

    @Test func observersStartingDuringEditsMissNothingAndSeeNothingTwice() async throws {
        let server = try await EmbeddedServer()
        let client = try ClientTests.client(port: server.port)
        let list = client.director("race")
        try await list.waitUntilLoaded()
        _ = try await list.add(section: NewSection(id: "s")).committed()
        let writer = Task.detached {
            var tickets: [WriteTicket] = []
            for i in 0..<200 {
                tickets.append(
                    try list.section(id: "s")!.add(model: Contact(id: "c\(i)", name: "n\(i)"), at: i % 3 == 0 ? 0 : nil)
                )
                if i % 7 == 0, let first = list.snapshot.director.sections.first?.rows.first {
                    tickets.append(try list.remove(modelID: first.id))
                }
            }
            for ticket in tickets { _ = try await ticket.committed() }
        }
        var recorders: [LiveRecorder] = []
        for _ in 0..<20 {
            recorders.append(LiveRecorder(list))
            await Task.yield()
        }
        try await writer.value
        let final = list.snapshot.director
        for (index, recorder) in recorders.enumerated() {
            #expect(recorder.failures.isEmpty, "observer \(index): \(recorder.failures.prefix(1))")
            #expect(recorder.table == final, "observer \(index) ends elsewhere")
        }
        client.close()
        #expect(await server.stop())
    }

    @Test func aLateStreamStartsFromTheCurrentState() async throws {
        let server = try await EmbeddedServer()
        let client = try ClientTests.client(port: server.port)
        let list = client.director("late-stream")
        try await list.waitUntilLoaded()
        _ = try await list.add(section: NewSection(id: "a")).committed()
        let changes = list.changes(includingCurrent: true)
        let t = try list.add(section: NewSection(id: "b"))
        var iterator = changes.makeAsyncIterator()
        let first = try #require(try await iterator.next())
        #expect(first.cause == .initial)
        #expect(first.snapshot.director.sections.map(\.id) == ["a"])
        let second = try #require(try await iterator.next())
        #expect(second.cause == .local(seq: t.seq))
        #expect(second.previous.director == first.snapshot.director)
        #expect(second.snapshot.director.sections.map(\.id) == ["a", "b"])
        client.close()
        #expect(await server.stop())
    }
}
