import Dispatch
import FlowSyncClient
import FlowSyncCore
import FlowSyncServer
import FlowSyncTestSupport
import Foundation
import Observation
import Synchronization
import Testing

@testable import FlowSyncUI

/// What the SwiftUI tests share: a model type, a client, and an inbox of a director's
/// changes that a test feeds to a model one by one (so the model is behind the director
/// exactly when the test wants it to be).
enum ModelEditing {
    struct Todo: FlowModel, Equatable {
        static let flowKind = "todo"
        var id: String
        var title: String
    }

    static func client(port: Int, id: String, token: String? = nil) throws -> FlowSyncClient {
        try FlowSyncClient(
            configuration: .init(
                port: port, token: token, clientID: id,
                reconnect: ReconnectPolicy(initialDelayMilliseconds: 20, maxDelayMilliseconds: 200),
                callbackQueue: DispatchQueue(label: "callbacks-\(id)"), randomSeed: 1))
    }

    static func todos(_ ids: [String]) -> [Todo] { ids.map { Todo(id: $0, title: $0) } }

    /// The row IDs of section `id`, in order (empty when there is no such section).
    static func ids(_ director: Director, _ id: String) -> [String] {
        director.section(id: id).map { $0.rows.map(\.id) } ?? []
    }

    /// SwiftUI's `move(fromOffsets:toOffset:)` on an array, written out as the oracle:
    /// the elements at `offsets`, in order, land before the element at `destination`
    /// of the original array.
    static func swiftUIMove(_ ids: [String], fromOffsets offsets: Set<Int>, toOffset destination: Int) -> [String] {
        let moved = offsets.sorted().map { ids[$0] }
        var rest = ids.enumerated().filter { !offsets.contains($0.offset) }.map(\.element)
        rest.insert(contentsOf: moved, at: destination - offsets.filter { $0 < destination }.count)
        return rest
    }

    /// A director's changes, as they come, until a test takes them. Observed on a queue
    /// of its own (never the main actor), so they pile up while the test holds the main
    /// actor; waiting for one suspends on an event, never polls.
    final class ChangeInbox: Sendable {
        private struct Waiter {
            let predicate: @Sendable (ListChange) -> Bool
            let continuation: CheckedContinuation<Void, Never>
        }

        private struct State {
            var queued: [ListChange] = []
            var waiters: [Waiter] = []
        }

        /// The state, in a class of its own so the observer can hold it (a `Mutex`
        /// cannot be captured).
        private final class Storage: Sendable {
            let state = Mutex(State())
        }

        private let storage = Storage()
        private let token: ObservationToken

        init(_ director: ListDirector) {
            let storage = self.storage
            token = director.observe(on: DispatchQueue(label: "inbox-\(director.name)")) { change in
                let ready = storage.state.withLock { state -> [CheckedContinuation<Void, Never>] in
                    state.queued.append(change)
                    var ready: [CheckedContinuation<Void, Never>] = []
                    state.waiters.removeAll { waiter in
                        guard waiter.predicate(change) else { return false }
                        ready.append(waiter.continuation)
                        return true
                    }
                    return ready
                }
                for continuation in ready { continuation.resume() }
            }
        }

        /// Takes up to `count` of the changes received and not taken yet, oldest first.
        func take(_ count: Int = .max) -> [ListChange] {
            storage.state.withLock { state in
                let taken = Array(state.queued.prefix(count))
                state.queued.removeFirst(taken.count)
                return taken
            }
        }

        /// How many changes are waiting.
        var count: Int { storage.state.withLock { $0.queued.count } }

        /// Returns once a change not taken yet satisfies `predicate`.
        func wait(for predicate: @escaping @Sendable (ListChange) -> Bool) async {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = storage.state.withLock { state -> Bool in
                    if state.queued.contains(where: predicate) { return true }
                    state.waiters.append(Waiter(predicate: predicate, continuation: continuation))
                    return false
                }
                if now { continuation.resume() }
            }
        }

        func cancel() { token.cancel() }
    }
}

/// `ListModel`'s edits with SwiftUI's shapes (`onMove`, `onDelete`): the offsets, the
/// echo filter, and the model against a real daemon.
@Suite(.timeLimit(.minutes(1))) @MainActor struct ListModelEditingTests {
    typealias Todo = ModelEditing.Todo

    // MARK: Offsets (pure)

    @Test(.timeLimit(.minutes(1)), arguments: [UInt64(1), 2, 3])
    func offsetMovesLeaveTheSectionAsSwiftUIsMoveDoes(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        for _ in 0..<3_000 {
            let n = random.int(1...12)
            let ids = (0..<n).map { "r\($0)" }
            var offsets = Set<Int>()
            for _ in 0..<random.int(1...3) { offsets.insert(random.int(0..<n)) }
            let destination = random.int(0...n)
            let shown = try Director(sections: [
                Section(id: "other", rows: [Row(id: "o0"), Row(id: "o1")]),
                Section(id: "s", rows: ids.map { Row(id: $0) }),
            ])
            let operations = try OffsetEdits.move(
                fromOffsets: Array(offsets), toOffset: destination, inSection: "s", of: shown)
            let expected = ModelEditing.swiftUIMove(ids, fromOffsets: offsets, toOffset: destination)
            var state = shown
            _ = try state.apply(operations)
            #expect(
                ModelEditing.ids(state, "s") == expected, "seed \(seed): \(ids) \(offsets.sorted()) → \(destination)")
            #expect(ModelEditing.ids(state, "other") == ["o0", "o1"])
            // One operation per moved row, none when nothing changes place.
            #expect(operations.count == (expected == ids ? 0 : offsets.count))
            // Anchored where the user saw them and resolved there, they mean the same.
            var anchoring = shown
            let anchored = try anchoring.anchor(operations)
            var resolved = shown
            try resolved.applyResolving(anchored)
            #expect(resolved == state)
        }
    }

    @Test(.timeLimit(.minutes(1))) func offsetDeletesNameTheShownRowsByIDAndRefuseWhatIsNotShown() throws {
        let shown = try Director(sections: [Section(id: "s", rows: [Row(id: "a"), Row(id: "b"), Row(id: "c")])])
        #expect(
            try OffsetEdits.delete(atOffsets: [2, 0], inSection: "s", of: shown) == [.removeRows([.id("c"), .id("a")])])
        #expect(try OffsetEdits.delete(atOffsets: [], inSection: "s", of: shown).isEmpty)
        #expect(throws: MutationError.self) { try OffsetEdits.delete(atOffsets: [3], inSection: "s", of: shown) }
        #expect(throws: MutationError.self) { try OffsetEdits.delete(atOffsets: [0], inSection: "t", of: shown) }
        #expect(throws: MutationError.self) {
            try OffsetEdits.move(fromOffsets: [0], toOffset: 4, inSection: "s", of: shown)
        }
        #expect(throws: MutationError.self) {
            try OffsetEdits.move(fromOffsets: [-1], toOffset: 0, inSection: "s", of: shown)
        }
        #expect(try OffsetEdits.move(fromOffsets: [1], toOffset: 1, inSection: "s", of: shown).isEmpty)
        #expect(try OffsetEdits.move(fromOffsets: [1], toOffset: 2, inSection: "s", of: shown).isEmpty)
    }

    // MARK: The echo filter (pure)

    @Test(.timeLimit(.minutes(1))) func theEchoFilterSkipsUpToTheLastWritesOwnChange() {
        var filter = ListModelEchoFilter()
        #expect(filter.received(.remote) == .show)
        filter.showedWrite(seq: 10)
        #expect(filter.isAhead)
        #expect(filter.received(.remote) == .skip)
        #expect(filter.received(.local(seq: 9)) == .skip)  // an earlier write, by the app
        #expect(filter.received(.resync(.gap)) == .skip)
        filter.showedWrite(seq: 12)  // a second edit before the echo
        #expect(filter.received(.local(seq: 10)) == .skip)
        #expect(filter.isAhead)
        #expect(filter.received(.local(seq: 12)) == .skip)  // the echo: in step again
        #expect(!filter.isAhead)
        #expect(filter.received(.local(seq: 13)) == .show)
        #expect(filter.received(.rollback(seq: 12, error: .closed)) == .show)
        // A rollback cannot come before its echo; if it does, it is shown and ends the wait.
        filter.showedWrite(seq: 20)
        #expect(filter.received(.rollback(seq: 20, error: .closed)) == .show)
        #expect(!filter.isAhead)
    }

    // MARK: A model without a director (previews)

    @Test(.timeLimit(.minutes(1))) func aPreviewModelShowsItsEditsAtOnceAndWritesNothing() throws {
        let director = try Director(sections: [Section(id: "s", rows: ["a", "b", "c"].map { Row(id: $0) })])
        let model = ListModel(snapshot: ListSnapshot(name: "preview", director: director))
        let fired = Mutex(0)
        withObservationTracking {
            _ = model.sections
        } onChange: {
            fired.withLock { $0 += 1 }
        }
        #expect(try model.move(fromOffsets: [0], toOffset: 3, inSection: "s") == nil)
        #expect(fired.withLock { $0 } == 1, "observers hear of the move inside the call")
        #expect(ModelEditing.ids(model.snapshot.director, "s") == ["b", "c", "a"])
        #expect(try model.delete(atOffsets: [1], inSection: "s") == nil)
        #expect(ModelEditing.ids(model.snapshot.director, "s") == ["b", "a"])
        #expect(throws: FlowSyncError.self) { try model.delete(atOffsets: [5], inSection: "s") }
        #expect(ModelEditing.ids(model.snapshot.director, "s") == ["b", "a"], "a refused edit changes nothing")
    }

    // MARK: Against a daemon

    /// The model is behind its director (a remote batch is queued for it) when the user
    /// deletes and drags: the offsets mean the rows the model shows, the edits show at
    /// once, and the changes that were queued neither undo them nor apply them twice.
    @Test(.timeLimit(.minutes(1))) func offsetsMeanTheRowsTheModelShowsNotTheDirectorsNewerState() async throws {
        let server = try await EmbeddedServer()
        let a = try ModelEditing.client(port: server.port, id: "a")
        let b = try ModelEditing.client(port: server.port, id: "b")
        let listA = a.director("todos"), listB = b.director("todos")
        try await listA.waitUntilLoaded()
        try await listB.waitUntilLoaded()
        _ = try await listA.add(
            section: NewSection(id: "s", models: ModelEditing.todos(["r0", "r1", "r2", "r3", "r4"]))
        ).committed()
        // B sees it too before it edits.
        let inboxB = ModelEditing.ChangeInbox(listB)
        await inboxB.wait { ModelEditing.ids($0.snapshot.director, "s").count == 5 }
        inboxB.cancel()

        let model = ListModel(director: listA, following: false)
        let inbox = ModelEditing.ChangeInbox(listA)
        #expect(ModelEditing.ids(model.snapshot.director, "s") == ["r0", "r1", "r2", "r3", "r4"])

        // B: x at the top, r4 moved to the top. A's replica gets it; the model does not.
        _ = try await listB.perform { batch in
            try batch.section("s").add(model: Todo(id: "x", title: "x"), at: 0)
            try batch.section("s").move(from: 5, to: 0)
        }.committed()
        await inbox.wait { ModelEditing.ids($0.snapshot.director, "s").first == "r4" }
        #expect(ModelEditing.ids(listA.snapshot.director, "s") == ["r4", "x", "r0", "r1", "r2", "r3"])
        #expect(
            ModelEditing.ids(model.snapshot.director, "s") == ["r0", "r1", "r2", "r3", "r4"], "the model is behind")

        // The user drags r0 (offset 0 as shown) between r2 and r3 (offset 3 as shown).
        let fired = Mutex(0)
        withObservationTracking {
            _ = model.sections
        } onChange: {
            fired.withLock { $0 += 1 }
        }
        let move = try #require(try model.move(fromOffsets: [0], toOffset: 3, inSection: "s"))
        #expect(fired.withLock { $0 } == 1, "SwiftUI sees the move inside onMove")
        #expect(
            ModelEditing.ids(model.snapshot.director, "s") == ["r4", "x", "r1", "r2", "r0", "r3"],
            "r0 lands after r2, B's edits kept")
        #expect(model.snapshot.pendingWrites == 1)

        // B deletes r3 and appends y; again the model is behind when the user deletes
        // offset 1 as shown (x).
        _ = try await listB.perform { batch in
            try batch.remove(modelID: "r3")
            try batch.section("s").add(model: Todo(id: "y", title: "y"))
        }.committed()
        await inbox.wait { ModelEditing.ids($0.snapshot.director, "s").last == "y" }
        #expect(ModelEditing.ids(model.snapshot.director, "s") == ["r4", "x", "r1", "r2", "r0", "r3"])
        let delete = try #require(try model.delete(atOffsets: [1], inSection: "s"))
        #expect(ModelEditing.ids(model.snapshot.director, "s") == ["r4", "r1", "r2", "r0", "y"])

        // A row the model shows but the replica lost: the drag is refused, nothing changes.
        _ = try await listB.perform { batch in try batch.remove(modelID: "r1") }.committed()
        await inbox.wait { !ModelEditing.ids($0.snapshot.director, "s").contains("r1") }
        let before = model.snapshot.director
        #expect(throws: FlowSyncError.self) { try model.move(fromOffsets: [1], toOffset: 0, inSection: "s") }
        #expect(model.snapshot.director == before)

        // The queued changes, fed one by one: the model already shows them up to the
        // delete's echo and never changes on the way; from the echo on it is in step.
        let shown = model.snapshot.director
        var skipped = 0
        for change in inbox.take() {
            let wasAhead = model.echoes.isAhead
            model.apply(change)
            if wasAhead {
                skipped += 1
                #expect(model.snapshot.director == shown, "\(change.cause) shown while the model is ahead")
            } else {
                #expect(model.snapshot.director == change.snapshot.director)
            }
            #expect(!ModelEditing.ids(model.snapshot.director, "s").contains("x"), "the deleted row never comes back")
        }
        #expect(skipped >= 4, "B's first batch, the move's echo, B's second batch and the delete's echo")
        #expect(!model.echoes.isAhead)

        // Committed, the server agrees with what the model shows.
        _ = try await move.committed()
        _ = try await delete.committed()
        let expected = ["r4", "r2", "r0", "y"]
        #expect(
            ModelEditing.ids(try #require(await server.withServer { $0.state(of: "todos") }).director, "s") == expected)
        while ModelEditing.ids(model.snapshot.director, "s") != expected {
            await inbox.wait { _ in true }
            for change in inbox.take() { model.apply(change) }
        }
        inbox.cancel()
        a.close()
        b.close()
        #expect(await server.stop())
    }

    /// The server refuses the model's writes (a token that may read the list, not write
    /// it): each edit shows at once, then its rollback puts the row back.
    @Test(.timeLimit(.minutes(1))) func aRefusedWriteIsUndoneInTheModel() async throws {
        let secret = "flowsync-ui-test-secret-0123456789abcdef"
        var configuration = ServerConfiguration()
        configuration.auth.mode = .required
        configuration.auth.keys = [.init(kid: "dev", algorithm: "HS256", secret: secret)]
        let server = try await EmbeddedServer(configuration: configuration)
        let writerToken = try await TestTokens.make(
            kid: "dev", signer: .hs256(secret), sub: "writer", read: ["todos"], write: ["todos"])
        let readerToken = try await TestTokens.make(
            kid: "dev", signer: .hs256(secret), sub: "reader", read: ["todos"], write: [])
        let writer = try ModelEditing.client(port: server.port, id: "writer", token: writerToken)
        let reader = try ModelEditing.client(port: server.port, id: "reader", token: readerToken)
        _ = try await writer.director("todos").add(
            section: NewSection(id: "s", models: ModelEditing.todos(["a", "b", "c"]))
        ).committed()
        let list = reader.director("todos")
        try await list.waitUntilLoaded()

        let model = ListModel(director: list)  // follows for real
        await waitUntil(model) { ModelEditing.ids($0.snapshot.director, "s") == ["a", "b", "c"] }
        let delete = try #require(try model.delete(atOffsets: [0], inSection: "s"))
        #expect(ModelEditing.ids(model.snapshot.director, "s") == ["b", "c"], "shown at once")
        await #expect(throws: FlowSyncError.self) { _ = try await delete.committed() }
        if case .failure(let error)? = delete.result {
            #expect(error.code == .forbidden, "\(error)")
        } else {
            Issue.record("the delete was not refused: \(delete)")
        }
        await waitUntil(model) { ModelEditing.ids($0.snapshot.director, "s") == ["a", "b", "c"] }
        #expect(
            model.lastChange.map { if case .rollback(let seq, _) = $0.cause { seq == delete.seq } else { false } }
                == true)

        let move = try #require(try model.move(fromOffsets: [2], toOffset: 0, inSection: "s"))
        #expect(ModelEditing.ids(model.snapshot.director, "s") == ["c", "a", "b"])
        await #expect(throws: FlowSyncError.self) { _ = try await move.committed() }
        await waitUntil(model) { ModelEditing.ids($0.snapshot.director, "s") == ["a", "b", "c"] }
        #expect(model.snapshot.pendingWrites == 0)
        reader.close()
        writer.close()
        #expect(await server.stop())
    }

    /// A model that follows its director for real: edits write through it, the user
    /// sees them at once, and the model ends where the server ends.
    @Test(.timeLimit(.minutes(1))) func aFollowingModelWritesThroughItsDirector() async throws {
        let server = try await EmbeddedServer()
        let a = try ModelEditing.client(port: server.port, id: "a")
        let list = a.director("todos")
        _ = try await list.add(sections: [
            NewSection(id: "today", models: ModelEditing.todos(["t0", "t1", "t2"])),
            NewSection(id: "later", models: ModelEditing.todos(["l0", "l1"])),
        ]).committed()
        let model = ListModel(director: list)
        #expect(model.sections.map(\.id) == ["today", "later"], "a loaded list is there in the first frame")
        let move = try #require(try model.move(fromOffsets: [0, 2], toOffset: 2, inSection: "today"))
        #expect(ModelEditing.ids(model.snapshot.director, "today") == ["t1", "t0", "t2"])
        let delete = try #require(try model.delete(atOffsets: [0, 1], inSection: "later"))
        #expect(ModelEditing.ids(model.snapshot.director, "later") == [])
        #expect(model.snapshot.pendingWrites >= 1)
        _ = try await move.committed()
        _ = try await delete.committed()
        let server0 = try #require(await server.withServer { $0.state(of: "todos") })
        await waitUntil(model) { $0.snapshot.director == server0.director && $0.snapshot.pendingWrites == 0 }
        #expect(try model.sections[0].models(as: Todo.self).map(\.id) == ["t1", "t0", "t2"])
        a.close()
        #expect(await server.stop())
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
}
