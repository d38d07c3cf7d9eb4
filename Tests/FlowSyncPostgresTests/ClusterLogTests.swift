import FlowSyncLoop
import FlowSyncPostgres
import FlowSyncTestSupport
import Foundation
import Testing

/// libpq on the loop and the cluster log, against a real PostgreSQL 15 on 127.0.0.1
/// (a throwaway `initdb` per test, see `PostgresServer`). Outside CI, a machine without
/// PostgreSQL skips them; under CI (`CI=true`) they must run (`make deps` installs it).
@Suite(
    .serialized, .timeLimit(.minutes(3)),
    .enabled(
        if: PostgresServer.isInstalled || ProcessInfo.processInfo.environment["CI"] == "true",
        "PostgreSQL 15 is not installed (make deps installs it)"))
struct ClusterLogTests {
    @Test func pipelinedStatementsCompleteInOrderWithoutBlockingTheLoop() async throws {
        try await PostgresServer.with { server in
            let thread = try EventLoopThread()
            defer { _ = thread.shutdown() }
            let connection = try await connect(thread, server.conninfo)
            // 500 statements sent in one loop job: results come back in order.
            let values: [Result<Int64?, PostgresError>] = await onLoop(thread) { done in
                var results: [Result<Int64?, PostgresError>] = []
                for i in 0..<500 {
                    connection.send("SELECT $1::int * 2", [.text("\(i)")]) { result in
                        results.append(result.map { $0.int(0, 0) })
                        if results.count == 500 { done(results) }
                    }
                }
            }
            #expect(values.map { try? $0.get() } == (0..<500).map { Int64($0 * 2) })
            // While a statement sleeps 300 ms, a 10 ms timer keeps firing: the loop is free.
            let ticks: Int = await onLoop(thread) { done in
                var ticks = 0
                let timer = LoopTimer(loop: thread.loop)
                timer.start(after: 10, repeat: 10) { ticks += 1 }
                connection.send("SELECT pg_sleep(0.3)") { _ in
                    timer.close()
                    done(ticks)
                }
            }
            #expect(ticks >= 10, "the loop ran \(ticks) timer ticks during a 300 ms statement")
            await onLoop(thread) { (done: @escaping (Void) -> Void) in
                connection.close()
                done(())
            }
        }
    }

    @Test func aFailingStatementAbortsNoOther() async throws {
        try await PostgresServer.with { server in
            let thread = try EventLoopThread()
            defer { _ = thread.shutdown() }
            let connection = try await connect(thread, server.conninfo)
            let results: [Result<PostgresResult, PostgresError>] = await onLoop(thread) { done in
                var results: [Result<PostgresResult, PostgresError>] = []
                for sql in ["SELECT 1", "SELEC oops", "SELECT 3"] {
                    connection.send(sql) { result in
                        results.append(result)
                        if results.count == 3 { done(results) }
                    }
                }
            }
            #expect((try? results[0].get())?.int(0, 0) == 1)
            guard case .failure(.server(let state, _)) = results[1] else {
                Issue.record("no syntax error: \(results[1])")
                return
            }
            #expect(state == "42601")
            #expect((try? results[2].get())?.int(0, 0) == 3)
            await onLoop(thread) { (done: @escaping (Void) -> Void) in
                connection.close()
                done(())
            }
        }
    }

    /// The zombie owner in miniature: A owns the list and appends; its lease lapses; B
    /// claims it (term 2) and appends; A's late append at term 1 changes nothing.
    @Test func aStaleOwnersAppendIsFencedAndChangesNothing() async throws {
        try await PostgresServer.with { server in
            let thread = try EventLoopThread()
            defer { _ = thread.shutdown() }
            let a = ClusterLog(connection: try await connect(thread, server.conninfo), node: "A")
            let b = ClusterLog(connection: try await connect(thread, server.conninfo), node: "B")
            try await call(thread) { a.createSchema($0) }
            try await call(thread) { a.renewLease(milliseconds: 60_000, $0) }
            try await call(thread) { b.renewLease(milliseconds: 60_000, $0) }
            let ownedByA = try #require(try await call(thread) { a.claim(list: "board", epoch: 7, $0) })
            #expect(ownedByA == ClusterLog.Ownership(term: 1, epoch: 7, head: 0))
            #expect(
                try await call(thread) {
                    a.append(list: "board", ownership: ownedByA, version: 1, body: [1, 0, 255], $0)
                } == .appended)
            // B cannot take it while A's lease is alive.
            #expect(try await call(thread) { b.claim(list: "board", epoch: 7, $0) } == nil)
            // A's lease lapses (A stopped renewing: SIGSTOP, a partition).
            try await call(thread) { a.renewLease(milliseconds: -1_000, $0) }
            let ownedByB = try #require(try await call(thread) { b.claim(list: "board", epoch: 7, $0) })
            #expect(ownedByB == ClusterLog.Ownership(term: 2, epoch: 7, head: 1))
            // A write forwarded now is B's to take. A, still believing it owns the list
            // at term 1, takes nothing and learns that it does not (Placement, rule 6);
            // B takes it, and then the inbox is empty, still owned.
            try await call(thread) { a.forward(list: "board", body: [0xF0], origin: "A", $0) }
            let byA = try await call(thread) { a.takeInbox(list: "board", term: 1, $0) }
            #expect(byA == ClusterLog.InboxTake(entries: [], owned: false))
            let byB = try await call(thread) { b.takeInbox(list: "board", term: 2, $0) }
            #expect(byB.owned && byB.entries.map(\.body) == [[0xF0]] && byB.entries.map(\.origin) == ["A"])
            #expect(
                try await call(thread) { b.takeInbox(list: "board", term: 2, $0) } == .init(entries: [], owned: true))
            // A wakes up and appends version 2 under its old term: fenced.
            #expect(
                try await call(thread) { a.append(list: "board", ownership: ownedByA, version: 2, body: [0xAA], $0) }
                    == .fenced)
            // B appends 2; a repeat of 2 or a gap (4) is fenced too.
            #expect(
                try await call(thread) { b.append(list: "board", ownership: ownedByB, version: 2, body: [0xBB], $0) }
                    == .appended)
            #expect(
                try await call(thread) { b.append(list: "board", ownership: ownedByB, version: 2, body: [0xCC], $0) }
                    == .fenced)
            #expect(
                try await call(thread) { b.append(list: "board", ownership: ownedByB, version: 4, body: [0xDD], $0) }
                    == .fenced)
            let state = try await call(thread) { a.head(list: "board", $0) }
            #expect(
                state.map { ClusterLog.ListState(epoch: $0.epoch, head: $0.head, owner: $0.owner, term: $0.term) }
                    == ClusterLog.ListState(epoch: 7, head: 2, owner: "B", term: 2))
            let log = try await call(thread) { a.batches(list: "board", epoch: 7, after: 0, $0) }
            #expect(log.map(\.version) == [1, 2])
            #expect(log.map(\.body) == [[1, 0, 255], [0xBB]])
            await onLoop(thread) { (done: @escaping (Void) -> Void) in
                a.connection.close()
                b.connection.close()
                done(())
            }
        }
    }

    /// A connection lost mid-statement fails it as "outcome unknown" and reports the
    /// loss; a new connection reads the state back.
    @Test func aLostConnectionFailsItsStatementsAsUnknown() async throws {
        try await PostgresServer.with { server in
            let thread = try EventLoopThread()
            defer { _ = thread.shutdown() }
            let victim = try await connect(thread, server.conninfo)
            let killer = try await connect(thread, server.conninfo)
            let pid = try #require(
                try await call(thread) { done in
                    victim.send("SELECT pg_backend_pid()") { done($0.map { $0.int(0, 0) }) }
                })
            let (sleep, lost): (Result<PostgresResult, PostgresError>, PostgresError?) = await onLoop(thread) { done in
                var outcome: Result<PostgresResult, PostgresError>?
                var lostWith: PostgresError?
                victim.onLost = { error in
                    lostWith = error
                    if let outcome { done((outcome, lostWith)) }
                }
                victim.send("SELECT pg_sleep(30)") { result in
                    outcome = result
                    if lostWith != nil || victim.pendingCount == 0 { done((result, lostWith)) }
                }
                killer.send("SELECT pg_terminate_backend($1::int)", [.text("\(pid)")]) { _ in }
            }
            guard case .failure(let error) = sleep else {
                Issue.record("the statement succeeded")
                return
            }
            #expect(error.outcomeUnknown, "\(error)")
            #expect(lost == nil || lost!.outcomeUnknown)
            #expect(try await call(thread) { done in killer.send("SELECT 42") { done($0.map { $0.int(0, 0) }) } } == 42)
            await onLoop(thread) { (done: @escaping (Void) -> Void) in
                killer.close()
                done(())
            }
        }
    }

    @Test func aRefusedConnectionIsATypedError() async throws {
        let thread = try EventLoopThread()
        defer { _ = thread.shutdown() }
        let port = try freeLoopbackPort()
        let result: Result<PostgresConnection, PostgresError> = await onLoop(thread) { done in
            PostgresConnection.connect(
                loop: thread.loop, conninfo: "host=127.0.0.1 port=\(port) user=flowsync connect_timeout=5"
            ) { done($0) }
        }
        guard case .failure(.connection(let message)) = result else {
            Issue.record("connected to a closed port")
            return
        }
        #expect(message.contains("refused") || message.contains("connect"), "\(message)")
    }

    // MARK: Helpers

    /// Opens a connection on the loop.
    private func connect(_ thread: EventLoopThread, _ conninfo: String) async throws -> PostgresConnection {
        let result: Result<PostgresConnection, PostgresError> = await onLoop(thread) { done in
            PostgresConnection.connect(loop: thread.loop, conninfo: conninfo) { done($0) }
        }
        return try result.get()
    }

    /// Runs `start` on the loop thread and waits for the value it hands to `done`.
    private func onLoop<T>(_ thread: EventLoopThread, _ start: @escaping (@escaping (T) -> Void) -> Void) async -> T {
        let box = Box<T>()
        let job = Unchecked(start)
        return await withCheckedContinuation { continuation in
            let resume = Unchecked(continuation)
            thread.loop.execute {
                job.value { value in
                    guard !box.resumed else { return }
                    box.resumed = true
                    resume.value.resume(returning: Unchecked(value).value)
                }
            }
        }
    }

    /// A cluster-log call on the loop, its result unwrapped.
    private func call<T>(
        _ thread: EventLoopThread, _ start: @escaping (@escaping (Result<T, PostgresError>) -> Void) -> Void
    ) async throws -> T {
        try await onLoop(thread, start).get()
    }
}

/// Carries a loop-confined value (a closure over connections, a result) to the loop
/// thread and back: every use is on that thread or after its hand-off.
private struct Unchecked<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}

/// Loop-confined flag: a continuation is resumed once.
private final class Box<T>: @unchecked Sendable {
    var resumed = false
}
