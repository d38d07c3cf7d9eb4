import FlowSyncCore
import FlowSyncServer
import FlowSyncTestSupport
import Foundation
import Testing

/// A fresh temporary directory, removed by ``remove()``.
struct TemporaryDirectory {
    let path: String
    init(_ label: String = "store") {
        path = NSTemporaryDirectory() + "flowsync-\(label)-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

/// Drives a real sequencer with seeded random mutations from a few writers, appending
/// every commit to a store — what the server does, without the network.
struct CommitDriver {
    var sequencer: Sequencer
    var generator: DirectorGenerator
    let name: String
    var seqs: [String: UInt64] = [:]
    /// Every committed batch, in order.
    var commits: [Sequencer.Commit] = []
    /// Every acknowledged mutation and its version.
    var acked: [(MutationID, ListVersion)] = []

    init(name: String, seed: UInt64, epoch: UInt64 = 0xE90C, historyLimits: Sequencer.HistoryLimits = .init()) {
        self.name = name
        sequencer = Sequencer(director: Director(), position: ListVersion(epoch: epoch, version: 0), historyLimits: historyLimits)
        generator = DirectorGenerator(seed: seed, idPrefix: "\(name)-")
    }

    /// One batch of 1–3 mutations; returns the commit if any applied.
    @discardableResult
    mutating func step() -> Sequencer.Commit? {
        let writers = generator.random.int(1...3)
        for _ in 0..<writers {
            let client = "w\(generator.random.int(0..<4))"
            let seq = (seqs[client] ?? 0) + 1
            seqs[client] = seq
            let ops = generator.group(for: sequencer.director)
            sequencer.submit(MutationRequest(clientID: client, seq: seq, base: sequencer.position, operations: ops), tag: 0)
        }
        let sealed = sequencer.seal()
        for outcome in sealed.outcomes {
            if case .success(let v) = outcome.result { acked.append((outcome.id, v)) }
        }
        if let commit = sealed.commit { commits.append(commit) }
        return sealed.commit
    }

    /// Steps until `count` batches are committed, appending each to `store`; returns
    /// whether a snapshot became due at some point.
    @discardableResult
    mutating func commit(_ count: Int, to store: DirectorStore, compactWhenDue: Bool = false) throws -> Bool {
        var due = false
        var done = 0
        var attempts = 0
        while done < count && attempts < count * 20 {
            attempts += 1
            guard let commit = step() else { continue }
            done += 1
            if try store.append(StoredBatch(listName: name, commit: commit)) {
                due = true
                if compactWhenDue { try store.compact(snapshotAtOldestResumable()) }
            }
        }
        try store.sync()
        return due
    }

    /// The snapshot a server writes at compaction: the oldest state its history holds.
    func snapshotAtOldestResumable() -> StoredSnapshot {
        let base = sequencer.oldestResumable
        let state = sequencer.state(at: base)!
        return StoredSnapshot(listName: name, position: base, digest: state.digest, sections: state.sections,
                              dedupe: sequencer.dedupeRecords(through: base))
    }

    /// The state after the first `n` commits (replayed from the empty state).
    func state(afterCommits n: Int) -> Director {
        var director = Director()
        for commit in commits.prefix(n) { try! commit.changeset.apply(to: &director) }
        return director
    }
}

extension RecoveryReport {
    func list(_ name: String) -> RecoveredList? { lists.first { $0.name == name } }
}

@Suite(.timeLimit(.minutes(2))) struct StorageConfigurationTests {
    @Test func storageSectionParsesAndRefusesBadValues() throws {
        let parsed = try ServerConfiguration(toml: """
            [storage]
            engine = "memory"
            fsync = "interval"
            fsync_interval_ms = 250
            snapshot_every_batches = 0
            snapshot_every_bytes = 1048576
            """)
        #expect(parsed.storageEngine == .memory)
        #expect(parsed.fsyncPolicy == .interval)
        #expect(parsed.fsyncIntervalMilliseconds == 250)
        #expect(parsed.snapshotEveryBatches == 0 && parsed.snapshotEveryBytes == 1 << 20)
        #expect(ServerConfiguration().fsyncPolicy == .always && ServerConfiguration().storageEngine == .file)
        do {
            _ = try ServerConfiguration(toml: "[storage]\nfsync = \"sometimes\"\n")
            Issue.record("a bad policy was accepted")
        } catch {
            #expect(error.key == "storage.fsync" && error.problem.contains("\"always\""), "\(error)")
        }
        #expect(throws: ConfigurationError.self) { try ServerConfiguration(toml: "[storage]\nfsync_every = 3\n") }
    }
}

/// Failures collected by test work that runs off the pool (``offThePool(_:)``), where
/// `#expect` has no current test to record against; the test expects the list empty.
final class Problems: @unchecked Sendable {
    private(set) var list: [String] = []
    func check(_ condition: @autoclosure () throws -> Bool, _ message: @autoclosure () -> String = "",
               file: String = #fileID, line: Int = #line) rethrows {
        if try !condition() { list.append("\(file):\(line): \(message())") }
    }
    func fail(_ message: String, file: String = #fileID, line: Int = #line) { list.append("\(file):\(line): \(message)") }
}

struct Missing: Error {}

/// `#require` for work off the pool.
func required<T>(_ value: T?) throws -> T {
    guard let value else { throw Missing() }
    return value
}
