import FlowSyncCore
import FlowSyncServer
import FlowSyncTestSupport
import Foundation
import Testing

/// One suite, both stores: what is appended and synced comes back after a "restart"
/// (a new FileStore over the same directory; the same InMemoryStore instance), with
/// versions, epochs, digests, the history for resume and the idempotency window.
enum StoreKind: String, CaseIterable, CustomTestStringConvertible {
    case memory, file
    var testDescription: String { rawValue }
}

/// A store under test and how to reopen it.
final class StoreHarness {
    let kind: StoreKind
    let directory: TemporaryDirectory?
    private(set) var store: DirectorStore
    let snapshotEveryBatches: Int

    init(_ kind: StoreKind, snapshotEveryBatches: Int = 0) {
        self.kind = kind
        self.snapshotEveryBatches = snapshotEveryBatches
        switch kind {
        case .memory:
            directory = nil
            store = InMemoryStore(snapshotEveryBatches: snapshotEveryBatches)
        case .file:
            let directory = TemporaryDirectory()
            self.directory = directory
            store = FileStore(
                directory: directory.path,
                options: .init(fsync: .always, snapshotEveryBatches: snapshotEveryBatches, snapshotEveryBytes: 0))
        }
    }

    /// Closes cleanly (or not) and opens the same data again, recovered.
    func reopen(clean: Bool = true, options: RecoveryOptions = RecoveryOptions()) throws -> RecoveryReport {
        switch kind {
        case .memory:
            return try store.recover(options)
        case .file:
            if clean { try store.close() } else { (store as! FileStore).abandon() }
            store = FileStore(
                directory: directory!.path,
                options: .init(fsync: .always, snapshotEveryBatches: snapshotEveryBatches, snapshotEveryBytes: 0))
            return try store.recover(options)
        }
    }

    func remove() { directory?.remove() }
}

@Suite(.timeLimit(.minutes(2))) struct StoreConformanceTests {
    @Test(arguments: StoreKind.allCases) func emptyStoreRecoversNothing(_ kind: StoreKind) throws {
        let h = StoreHarness(kind)
        defer { h.remove() }
        #expect(try h.store.recover(RecoveryOptions()).lists.isEmpty)
        #expect(try h.reopen().lists.isEmpty)
    }

    @Test(arguments: StoreKind.allCases) func batchesComeBackExactly(_ kind: StoreKind) throws {
        let h = StoreHarness(kind)
        defer { h.remove() }
        _ = try h.store.recover(RecoveryOptions())
        var a = CommitDriver(name: "alpha", seed: 1)
        var b = CommitDriver(name: "beta/β with spaces", seed: 2, epoch: 0xBE7A)
        try a.commit(60, to: h.store)
        try b.commit(25, to: h.store)
        try a.commit(15, to: h.store)

        for clean in [true, false] {
            let report = try h.reopen(clean: clean)
            #expect(report.lists.map(\.name).sorted() == ["alpha", "beta/β with spaces"])
            for driver in [a, b] {
                let list = try #require(report.list(driver.name))
                #expect(list.sequencer.position == driver.sequencer.position)
                #expect(list.sequencer.director == driver.sequencer.director)
                #expect(list.sequencer.director.digest == driver.sequencer.director.digest)
                #expect(!list.needsNewEpoch)
                // The history for resume is rebuilt: every version resumable before is
                // resumable now, with the same state.
                #expect(list.sequencer.oldestResumable == driver.sequencer.oldestResumable)
                let middle = ListVersion(
                    epoch: driver.sequencer.position.epoch, version: driver.sequencer.position.version / 2)
                #expect(list.sequencer.state(at: middle) == driver.state(afterCommits: Int(middle.version)))
            }
        }
    }

    @Test(arguments: StoreKind.allCases) func idempotencyWindowSurvives(_ kind: StoreKind) throws {
        let h = StoreHarness(kind, snapshotEveryBatches: 20)
        defer { h.remove() }
        _ = try h.store.recover(RecoveryOptions())
        var a = CommitDriver(name: "todo", seed: 3, historyLimits: .init(maxBatches: 8))
        try a.commit(50, to: h.store, compactWhenDue: true)
        let report = try h.reopen()
        var recovered = try #require(report.list("todo")).sequencer
        // Retry every acknowledged mutation: each gets its original version, nothing applies.
        let problems = a.retryProblems(last: 40, on: &recovered)
        #expect(problems.isEmpty, "\(problems.prefix(5))")
    }

    @Test(arguments: StoreKind.allCases) func compactionKeepsStateAndResumableHistory(_ kind: StoreKind) throws {
        let h = StoreHarness(kind, snapshotEveryBatches: 30)
        defer { h.remove() }
        _ = try h.store.recover(RecoveryOptions())
        var a = CommitDriver(name: "big", seed: 4, historyLimits: .init(maxBatches: 12))
        let due = try a.commit(100, to: h.store, compactWhenDue: true)
        #expect(due)
        let report = try h.reopen(options: RecoveryOptions(historyLimits: .init(maxBatches: 12)))
        let list = try #require(report.list("big"))
        #expect(list.sequencer.position == a.sequencer.position)
        #expect(list.sequencer.director == a.sequencer.director)
        // At least the 12 batches of the history are in the log after the snapshot.
        #expect(list.sequencer.history.count == 12)
        let old = a.sequencer.oldestResumable
        #expect(list.sequencer.state(at: old) == a.state(afterCommits: Int(old.version)))
        if kind == .file {
            #expect(report.replayedBatches < 100, "the log before the snapshot was dropped")
        }
        // And writing continues after the recovery.
        var b = a
        b.sequencer = list.sequencer
        try b.commit(10, to: h.store, compactWhenDue: true)
        let again = try h.reopen(options: RecoveryOptions(historyLimits: .init(maxBatches: 12)))
        #expect(try #require(again.list("big")).sequencer.director == b.sequencer.director)
        #expect(try #require(again.list("big")).sequencer.position == b.sequencer.position)
    }

    @Test(arguments: StoreKind.allCases) func newEpochReplacesTheHistory(_ kind: StoreKind) throws {
        let h = StoreHarness(kind)
        defer { h.remove() }
        _ = try h.store.recover(RecoveryOptions())
        var a = CommitDriver(name: "e", seed: 5)
        try a.commit(20, to: h.store)
        var sequencer = a.sequencer
        sequencer.startEpoch(0x5EC0)
        try h.store.startEpoch(
            StoredSnapshot(
                listName: "e", position: sequencer.position, digest: sequencer.director.digest,
                sections: sequencer.director.sections, dedupe: sequencer.dedupeRecords()))
        var b = a
        b.sequencer = sequencer
        try b.commit(5, to: h.store)
        let report = try h.reopen()
        let list = try #require(report.list("e"))
        #expect(list.sequencer.position == ListVersion(epoch: 0x5EC0, version: 5))
        #expect(list.sequencer.director == b.sequencer.director)
    }

    @Test(arguments: StoreKind.allCases) func digestMismatchIsCorruption(_ kind: StoreKind) throws {
        let h = StoreHarness(kind)
        defer { h.remove() }
        _ = try h.store.recover(RecoveryOptions())
        var a = CommitDriver(name: "d", seed: 6)
        try a.commit(5, to: h.store)
        // A batch whose recorded digest does not match what its changeset produces.
        let last = a.commits.last!
        guard let next = a.step() else { return }
        let forged = Sequencer.Commit(
            from: next.from, to: next.to, changeset: next.changeset,
            digest: StateDigest(rawValue: last.digest.rawValue &+ 1), mutations: next.mutations)
        _ = try h.store.append(StoredBatch(listName: "d", commit: forged))
        try h.store.sync()
        #expect(throws: StoreError.self) { try h.reopen() }
    }
}

/// File-store specifics: descriptors are bounded, and a restart continues the last
/// segment instead of starting a new one.
@Suite(.timeLimit(.minutes(2))) struct FileStoreDescriptorTests {
    @Test func manyListsWithFewDescriptorsAndContinuedSegments() throws {
        let directory = TemporaryDirectory("fds")
        defer { directory.remove() }
        let options = FileStore.Options(fsync: .always, snapshotEveryBatches: 0, snapshotEveryBytes: 0, maxOpenLogs: 2)
        var store = FileStore(directory: directory.path, options: options)
        _ = try store.recover(RecoveryOptions())
        var drivers = (0..<5).map { CommitDriver(name: "list-\($0)", seed: UInt64(100 + $0)) }
        for round in 0..<6 {
            for k in drivers.indices { try drivers[k].commit(3, to: store) }
            if round == 2 {
                // A crash in the middle: the next start continues each list's segment.
                store.abandon()
                store = FileStore(directory: directory.path, options: options)
                let report = try store.recover(RecoveryOptions())
                #expect(report.lists.count == 5)
            }
        }
        try store.close()
        let reopened = FileStore(directory: directory.path, options: options)
        defer { reopened.abandon() }
        let report = try reopened.recover(RecoveryOptions())
        for driver in drivers {
            let list = try #require(report.list(driver.name))
            #expect(list.sequencer.position == driver.sequencer.position)
            #expect(list.sequencer.director == driver.sequencer.director)
            let files = try FileManager.default.contentsOfDirectory(atPath: directory.path + "/lists/" + driver.name)
                .filter { $0.hasSuffix(".fsl") }
            #expect(files.count == 1, "\(driver.name): \(files)")
        }
    }
}
