import FlowSyncServer
import FlowSyncTestSupport
import Foundation
import Testing

@testable import FlowSyncClient

/// A phone's life: background and foreground (pause/resume), a network path that comes
/// back (reconnectNow), lists left (unsubscribe), the status stream for a banner, edits
/// the UI already shows (withoutNotifying), and the FlowKit conveniences.
@Suite(.serialized, .timeLimit(.minutes(2))) struct LifecycleTests {
    @Test func pauseClosesTheSocketKeepsTheReplicaAndResumeCatchesUp() async throws {
        let server = try await EmbeddedServer()
        let phone = try ClientTests.client(port: server.port, id: "phone")
        let desk = try ClientTests.client(port: server.port, id: "desk")
        defer {
            phone.close()
            desk.close()
        }
        var statuses = phone.statusUpdates.makeAsyncIterator()
        let list = phone.director("l")
        let recorder = LiveRecorder(list)
        try await list.add(section: NewSection(id: "s")).committed()
        #expect(await ClientTests.until { await server.withServer { $0.connectionCount } == 2 })

        phone.pause()
        #expect(phone.status == .paused)
        #expect(
            await ClientTests.until { await server.withServer { $0.connectionCount } == 1 },
            "the paused client's socket is closed")
        // Edits still show, and wait; others write meanwhile.
        let offline = try #require(list.section(id: "s")).add(model: Contact(id: "p", name: "while paused"))
        #expect(list.snapshot.pendingWrites == 1)
        let theirs = desk.director("l")
        try await theirs.waitUntilLoaded()
        _ = try await #require(theirs.section(id: "s")).add(model: Contact(id: "d", name: "desk"), at: 0).committed()
        #expect(phone.status == .paused, "nothing is tried while paused")

        phone.resume()
        _ = try await offline.committed()
        #expect(await ClientTests.settled(list, server: server))
        #expect(list.snapshot.section(id: "s")?.rows.map(\.id).sorted() == ["d", "p"])
        #expect(recorder.failures.isEmpty, "\(recorder.failures)")
        // The stream started with the status then, and showed the pause and the way back.
        var seen: [ConnectionStatus] = []
        while let status = await statuses.next() {
            seen.append(status)
            if seen.contains(.paused), case .connected = status { break }
        }
        #expect(seen.contains(.paused) && seen.contains(.connecting))
        #expect(await server.stop())
    }

    @Test func reconnectNowSkipsTheBackoff() async throws {
        let server = try await EmbeddedServer()
        let proxy = try await ChaosProxy(upstreamPort: server.port)
        defer { proxy.stop() }
        // A first retry after 20 s: only reconnectNow can bring it back within the test.
        let phone = try FlowSyncClient(
            configuration: .init(
                port: proxy.port, clientID: "phone",
                reconnect: ReconnectPolicy(initialDelayMilliseconds: 20_000, maxDelayMilliseconds: 20_000, jitter: 0),
                callbackQueue: DispatchQueue(label: "phone"), randomSeed: 1))
        defer { phone.close() }
        let list = phone.director("l")
        try await list.waitUntilLoaded()
        await proxy.cutAll()
        #expect(
            await ClientTests.until { if case .disconnected(_, let ms) = phone.status { ms == 20_000 } else { false } })
        phone.reconnectNow()
        #expect(await ClientTests.until(timeout: 10) { if case .connected = phone.status { true } else { false } })
        try await list.add(section: NewSection(id: "back")).committed()
        #expect(await server.stop())
    }

    @Test func unsubscribeEndsTheListAndOpeningItAgainStartsAfresh() async throws {
        let server = try await EmbeddedServer()
        let client = try ClientTests.client(port: server.port, id: "c")
        defer { client.close() }
        let list = client.director("gone")
        try await list.add(section: NewSection(id: "s")).committed()
        #expect(await server.withServer { $0.subscriberCount(of: "gone") } == 1)
        let stream = list.changes
        list.unsubscribe()
        var count = 0
        for try await _ in stream { count += 1 }  // ends
        #expect(count >= 1)
        #expect(await ClientTests.until { await server.withServer { $0.subscriberCount(of: "gone") } == 0 })
        #expect(throws: FlowSyncError.closed) { try list.add(section: NewSection(id: "late")) }
        let again = client.director("gone")
        try await again.waitUntilLoaded()
        #expect(again.snapshot.section(id: "s") != nil && again.failure == nil)
        #expect(await server.stop())
    }

    @Test func anEditTheUIAlreadyShowsIsNotDeliveredBackToIt() async throws {
        let server = try await EmbeddedServer()
        let client = try ClientTests.client(port: server.port, id: "ui")
        let other = try ClientTests.client(port: server.port, id: "other")
        defer {
            client.close()
            other.close()
        }
        let list = client.director("l")
        try await list.add(
            section: NewSection(id: "s", models: [Contact(id: "a", name: "A"), Contact(id: "b", name: "B")])
        ).committed()
        let table = Shared<[ListChange]>([]), log = Shared<[ListChange]>([])
        let queue = DispatchQueue(label: "ui")
        let tableView = list.observe(on: queue) { change in table.update { $0.append(change) } }
        list.observe(on: queue) { change in log.update { $0.append(change) } }
        // The user dragged row 0 below row 1: the table already shows it.
        _ = try await list.perform(withoutNotifying: [tableView]) { batch in try batch.section("s").move(from: 0, to: 1)
        }.committed()
        let theirs = other.director("l")
        try await theirs.waitUntilLoaded()
        _ = try await #require(theirs.section(id: "s")).add(model: Contact(id: "c", name: "C")).committed()
        #expect(await ClientTests.settled(list, server: server))
        queue.sync {}
        let seenByTable = table.get(), seenByLog = log.get()
        // (Empty changes carry the pending count when the edit commits as shown.)
        #expect(seenByTable.filter { !$0.changeset.isEmpty }.map(\.cause) == [.initial, .remote])
        #expect(seenByLog.map(\.cause).contains { if case .local = $0 { true } else { false } })
        // The table's next change starts from the list with its own edit.
        #expect(seenByTable.last?.previous.director.section(id: "s")?.rows.map(\.id) == ["b", "a"])
        #expect(seenByTable.last?.snapshot.director.section(id: "s")?.rows.map(\.id) == ["b", "a", "c"])
        #expect(await server.stop())
    }

    @Test func flowKitConveniences() throws {
        // Offline (nothing listens on port 1): every edit applies to the replica at once.
        let client = try FlowSyncClient(
            configuration: .init(port: 1, clientID: "k", callbackQueue: DispatchQueue(label: "k")))
        defer { client.close() }
        let list = client.director("l")
        #expect(list.section(at: 0) == nil && list.section(at: -1) == nil)
        try list.add(models: [Contact(id: "a", name: "A")], newSectionID: "first")
        #expect(list.sections.map(\.id) == ["first"] && list.numberOfModels == 1)
        try list.add(models: [Contact(id: "b", name: "B"), Contact(id: "c", name: "C")])
        #expect(list.section(at: 0)?.snapshot?.rows.map(\.id) == ["a", "b", "c"])
        try list.add(sections: [NewSection(id: "x"), NewSection(id: "y"), NewSection(id: "z")])
        try list.swap(sectionAt: 0, with: 3)
        #expect(list.sections.map(\.id) == ["z", "x", "y", "first"])
        try list.remove(sectionsAt: [0, 2])
        #expect(list.sections.map(\.id) == ["x", "first"])
        let first = try #require(list.section(id: "first"))
        try first.swap(at: 0, with: 2)
        #expect(first.snapshot?.rows.map(\.id) == ["c", "b", "a"])
        try first.remove(atIndexes: [0, 2])
        #expect(first.snapshot?.rows.map(\.id) == ["b"])
        try first.removeAll()
        #expect(first.count == 0 && list.numberOfSections == 2)
        #expect(throws: FlowSyncError.self) { try list.remove(sectionsAt: [5]) }
    }
}
