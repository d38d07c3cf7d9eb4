import FlowSyncCore
import FlowSyncServer

/// Drives a real sequencer with seeded random mutations from a few writers, appending
/// every commit to a store — what the server does, without the network.
public struct CommitDriver {
    public var sequencer: Sequencer
    public var generator: DirectorGenerator
    public let name: String
    public var seqs: [String: UInt64] = [:]
    /// Every committed batch, in order.
    public var commits: [Sequencer.Commit] = []
    /// Every acknowledged mutation and its version.
    public var acked: [(MutationID, ListVersion)] = []

    public init(name: String, seed: UInt64, epoch: UInt64 = 0xE90C, historyLimits: Sequencer.HistoryLimits = .init()) {
        self.name = name
        sequencer = Sequencer(director: Director(), position: ListVersion(epoch: epoch, version: 0), historyLimits: historyLimits)
        generator = DirectorGenerator(seed: seed, idPrefix: "\(name)-")
    }

    /// One batch of 1–3 mutations; returns the commit if any applied.
    @discardableResult
    public mutating func step() -> Sequencer.Commit? {
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
    public mutating func commit(_ count: Int, to store: DirectorStore, compactWhenDue: Bool = false) throws -> Bool {
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
    public func snapshotAtOldestResumable() -> StoredSnapshot {
        let base = sequencer.oldestResumable
        let state = sequencer.state(at: base)!
        return StoredSnapshot(listName: name, position: base, digest: state.digest, sections: state.sections,
                              dedupe: sequencer.dedupeRecords(through: base))
    }

    /// Steps until `count` batches are committed, handing each to `submit` (an
    /// asynchronous store: cluster mode) and compacting with `compact` when `submit`
    /// says a snapshot is due; returns whether one became due.
    @discardableResult
    public mutating func commit(_ count: Int, submit: (StoredBatch) async throws -> Bool, compact: ((StoredSnapshot) async throws -> Void)? = nil) async throws -> Bool {
        var due = false
        var done = 0
        var attempts = 0
        while done < count && attempts < count * 20 {
            attempts += 1
            guard let commit = step() else { continue }
            done += 1
            if try await submit(StoredBatch(listName: name, commit: commit)) {
                due = true
                if let compact { try await compact(snapshotAtOldestResumable()) }
            }
        }
        return due
    }

    /// The state after the first `n` commits (replayed from the empty state).
    public func state(afterCommits n: Int) -> Director {
        var director = Director()
        for commit in commits.prefix(n) { try! commit.changeset.apply(to: &director) }
        return director
    }
}
