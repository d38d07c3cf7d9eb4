import FlowSyncCore
import FlowSyncLoop
import FlowSyncProtocol
import FlowSyncServer
import FlowSyncTestSupport
import Foundation
import Logging
import Testing

/// Issue #18, test 1: `ClusterStore` against the store conformance suite's checks
/// (`StoreConformanceTests`, FlowSyncStoreTests), through its asynchronous API on a loop
/// thread of its own: what is committed comes back after a "restart" (a new store of
/// the same node), with versions, digests, the history for resume and the idempotency
/// window, across snapshots in PostgreSQL; a forged batch is corruption; plus the
/// fencing cases (another node's claim fences; a stopped node's lists are released).
/// Part of the serialized `ClusterLogTests` suite.
extension ClusterLogTests {
    /// A `ClusterStore` on a loop thread, used from the test through async calls.
    final class ClusterHarness: @unchecked Sendable {
        let thread: EventLoopThread
        let conninfo: String
        let node: String
        let options: RecoveryOptions
        let snapshotEveryBatches: Int
        /// Used on `thread` only.
        private var store: ClusterStore!

        init(
            _ pg: PostgresServer, node: String = "a", options: RecoveryOptions = RecoveryOptions(),
            snapshotEveryBatches: Int = 0
        ) async throws {
            thread = try EventLoopThread()
            conninfo = pg.conninfo
            self.node = node
            self.options = options
            self.snapshotEveryBatches = snapshotEveryBatches
            try await open()
        }

        /// A new store of this node, recovered (it connects; lists load on first use).
        func open() async throws {
            let result: Result<Void, StoreError> = await runOnLoop(thread) { [self] done in
                store = ClusterStore(
                    options: .init(
                        conninfo: conninfo, node: node, leaseMilliseconds: 2_000,
                        snapshotEveryBatches: snapshotEveryBatches,
                        snapshotEveryBytes: 0),
                    loop: thread.loop, logger: Logger(label: "cluster-conformance"))
                do throws(StoreError) {
                    _ = try store.recover(options)
                    done(.success(()))
                } catch {
                    done(.failure(error))
                }
            }
            try result.get()
        }

        /// Closes (a clean stop releases the lists first, as the server does) or
        /// abandons the store, then opens a new one.
        func reopen(clean: Bool = true) async throws {
            await runOnLoop(thread) { [self] (done: @escaping (Void) -> Void) in
                if clean {
                    store.release { [self] in
                        try? store.close()
                        done(())
                    }
                } else {
                    store.abandon()
                    done(())
                }
            }
            try await open()
        }

        func load(_ name: String, create: Bool) async throws -> RecoveredList? {
            let result: Result<RecoveredList?, StoreError> = await runOnLoop(thread) { [self] done in
                store.load(name, create: create) { done($0) }
            }
            return try result.get()
        }

        /// Submits a batch; whether a snapshot is due after it (throws unless committed).
        func submit(_ batch: StoredBatch) async throws -> Bool {
            let result: Result<Bool, StoreError> = await runOnLoop(thread) { [self] done in
                store.submit(batch) { [self] outcome in
                    switch outcome {
                    case .committed: done(.success(store.snapshotDue(of: batch.listName)))
                    case .fenced: done(.failure(.unusable("fenced")))
                    case .failed(let error): done(.failure(error))
                    }
                }
            }
            return try result.get()
        }

        /// Stores a snapshot (as the server's compaction does) and waits until it is in
        /// PostgreSQL.
        func compact(_ snapshot: StoredSnapshot, sql: SQLSession) async throws {
            await runOnLoop(thread) { [self] (done: @escaping (Void) -> Void) in
                try? store.compact(snapshot)
                done(())
            }
            _ = try await ClusterLogTests.poll(
                sql,
                "SELECT count(*) FROM fs_snapshots WHERE list = '\(snapshot.listName)' AND version = \(snapshot.position.version)"
            ) {
                $0.int(0, 0) == 1 || snapshot.position.version == 0
            }
        }

        func close() async {
            await runOnLoop(thread) { [self] (done: @escaping (Void) -> Void) in
                try? store.close()
                done(())
            }
            _ = thread.shutdown()
        }
    }

    /// A driver on the list the store claimed (its epoch is the store's).
    static func driver(
        _ harness: ClusterHarness, _ name: String, seed: UInt64, history: Sequencer.HistoryLimits = .init()
    ) async throws -> CommitDriver {
        let list = try #require(try await harness.load(name, create: true))
        return CommitDriver(name: name, seed: seed, epoch: list.sequencer.position.epoch, historyLimits: history)
    }

    @Test func conformanceAnUnknownListLoadsAsNothing() async throws {
        try await PostgresServer.with { pg in
            let h = try await ClusterHarness(pg)
            #expect(try await h.load("nothing", create: false) == nil)
            try await h.reopen()
            #expect(try await h.load("nothing", create: false) == nil)
            await h.close()
        }
    }

    @Test func conformanceBatchesComeBackExactlyAfterACleanAndAnUncleanStop() async throws {
        try await PostgresServer.with { pg in
            let h = try await ClusterHarness(pg)
            var a = try await Self.driver(h, "alpha", seed: 1)
            var b = try await Self.driver(h, "beta/β with spaces", seed: 2)
            try await a.commit(60, submit: h.submit)
            try await b.commit(25, submit: h.submit)
            try await a.commit(15, submit: h.submit)
            for clean in [true, false] {
                // An unclean stop leaves the lease alive: the same node takes its lists back.
                try await h.reopen(clean: clean)
                for driver in [a, b] {
                    let list = try #require(try await h.load(driver.name, create: false))
                    #expect(list.sequencer.position == driver.sequencer.position)
                    #expect(list.sequencer.director == driver.sequencer.director)
                    #expect(list.sequencer.director.digest == driver.sequencer.director.digest)
                    #expect(list.sequencer.oldestResumable == driver.sequencer.oldestResumable)
                    let middle = ListVersion(
                        epoch: driver.sequencer.position.epoch, version: driver.sequencer.position.version / 2)
                    #expect(list.sequencer.state(at: middle) == driver.state(afterCommits: Int(middle.version)))
                }
            }
            await h.close()
        }
    }

    @Test func conformanceTheIdempotencyWindowSurvivesSnapshots() async throws {
        try await PostgresServer.with { pg in
            let sql = try await SQLSession.open(pg.conninfo)
            let h = try await ClusterHarness(pg, snapshotEveryBatches: 20)
            var a = try await Self.driver(h, "tasks", seed: 3, history: .init(maxBatches: 8))
            try await a.commit(50, submit: h.submit, compact: { try await h.compact($0, sql: sql) })
            #expect(try await sql.query("SELECT count(*) FROM fs_snapshots WHERE list = 'tasks'").int(0, 0) ?? 0 >= 1)
            try await h.reopen()
            var recovered = try #require(try await h.load("tasks", create: false)).sequencer
            let problems = a.retryProblems(last: 40, on: &recovered)
            #expect(problems.isEmpty, "\(problems.prefix(5))")
            await h.close()
            await sql.close()
        }
    }

    @Test func conformanceSnapshotsKeepStateAndResumableHistoryAndTrimTheLog() async throws {
        try await PostgresServer.with { pg in
            let sql = try await SQLSession.open(pg.conninfo)
            let history = Sequencer.HistoryLimits(maxBatches: 12)
            let h = try await ClusterHarness(
                pg, options: RecoveryOptions(historyLimits: history), snapshotEveryBatches: 30)
            var a = try await Self.driver(h, "big", seed: 4, history: history)
            #expect(try await a.commit(100, submit: h.submit, compact: { try await h.compact($0, sql: sql) }))
            try await h.reopen()
            let list = try #require(try await h.load("big", create: false))
            #expect(list.sequencer.position == a.sequencer.position)
            #expect(list.sequencer.director == a.sequencer.director)
            #expect(list.sequencer.history.count == 12)
            let old = a.sequencer.oldestResumable
            #expect(list.sequencer.state(at: old) == a.state(afterCommits: Int(old.version)))
            #expect(
                try await sql.query("SELECT count(*) FROM fs_batches WHERE list = 'big'").int(0, 0) ?? 100 < 100,
                "the log before the previous snapshot was dropped")
            // Writing continues after the reload.
            var b = a
            b.sequencer = list.sequencer
            try await b.commit(10, submit: h.submit, compact: { try await h.compact($0, sql: sql) })
            try await h.reopen()
            let again = try #require(try await h.load("big", create: false))
            #expect(
                again.sequencer.director == b.sequencer.director && again.sequencer.position == b.sequencer.position)
            await h.close()
            await sql.close()
        }
    }

    /// Not like the file store: a new epoch is refused in cluster mode (documented).
    @Test func conformanceANewEpochIsRefusedInClusterMode() async throws {
        try await PostgresServer.with { pg in
            let h = try await ClusterHarness(pg)
            let a = try await Self.driver(h, "e", seed: 5)
            let refused: Bool = await runOnLoop(h.thread) { done in
                let store = ClusterStore(
                    options: .init(conninfo: pg.conninfo, node: "x"), loop: h.thread.loop, logger: Logger(label: "x"))
                do throws(StoreError) {
                    try store.startEpoch(
                        StoredSnapshot(
                            listName: "e", position: ListVersion(epoch: 0x5EC0, version: 0),
                            digest: a.sequencer.director.digest,
                            sections: [], dedupe: []))
                    done(false)
                } catch {
                    done(true)
                }
            }
            #expect(refused)
            await h.close()
        }
    }

    @Test func conformanceAForgedDigestIsCorruption() async throws {
        try await PostgresServer.with { pg in
            let h = try await ClusterHarness(pg)
            var a = try await Self.driver(h, "d", seed: 6)
            try await a.commit(5, submit: h.submit)
            let last = a.commits.last!
            guard let next = a.step() else { return }
            let forged = Sequencer.Commit(
                from: next.from, to: next.to, changeset: next.changeset,
                digest: StateDigest(rawValue: last.digest.rawValue &+ 1),
                mutations: next.mutations)
            _ = try await h.submit(StoredBatch(listName: "d", commit: forged))
            try await h.reopen()
            do {
                _ = try await h.load("d", create: false)
                Issue.record("a forged digest loaded")
            } catch {
                #expect((error as? StoreError)?.isCorruption == true, "\(error)")
            }
            await h.close()
        }
    }

    /// Fencing: after A's clean stop (its lists released), B claims A's list and
    /// appends; a store of A opened before that and still holding its old term is
    /// fenced, and nothing it submits commits.
    @Test func conformanceAStoreWhoseListAnotherNodeClaimedIsFenced() async throws {
        try await PostgresServer.with { pg in
            let a = try await ClusterHarness(pg, node: "a")
            var driver = try await Self.driver(a, "shared", seed: 7)
            try await driver.commit(5, submit: a.submit)
            let b = try await ClusterHarness(pg, node: "b")
            // A's lease lapses as if it had paused: B may take the list.
            let sql = try await SQLSession.open(pg.conninfo)
            _ = try await sql.query(
                "UPDATE fs_leases SET expires_at = clock_timestamp() - interval '1 second' WHERE node = 'a'")
            _ = try await sql.query("UPDATE fs_lists SET owner = NULL WHERE list = 'shared'")
            let taken = try #require(try await b.load("shared", create: false))
            #expect(taken.sequencer.position == driver.sequencer.position)
            var fenced = false
            do {
                _ = try await driver.commit(1, submit: a.submit)
            } catch {
                fenced = "\(error)".contains("fenced")
            }
            #expect(fenced, "A's append after B's claim is fenced")
            let row = try await sql.query("SELECT head, owner FROM fs_lists WHERE list = 'shared'")
            #expect(row.int(0, 0) == 5 && row.rows.first?[1] == "b")
            await a.close()
            await b.close()
            await sql.close()
        }
    }
}
