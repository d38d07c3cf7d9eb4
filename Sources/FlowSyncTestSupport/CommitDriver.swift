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
        sequencer = Sequencer(
            director: Director(), position: ListVersion(epoch: epoch, version: 0), historyLimits: historyLimits)
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
            sequencer.submit(
                MutationRequest(clientID: client, seq: seq, base: sequencer.position, operations: ops), tag: 0)
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
        for _ in 0..<count {
            guard let commit = nextCommit() else { break }
            if try store.append(StoredBatch(listName: name, commit: commit)) {
                due = true
                if compactWhenDue { try store.compact(snapshotAtOldestResumable()) }
            }
        }
        try store.sync()
        return due
    }

    /// Steps until a batch commits (at most 20 steps: a step whose mutations were all
    /// refused commits nothing).
    public mutating func nextCommit() -> Sequencer.Commit? {
        for _ in 0..<20 {
            if let commit = step() { return commit }
        }
        return nil
    }

    /// Retries the last `count` acknowledged mutations on `recovered` (a list rebuilt by
    /// a store): each must be answered with its original version and apply nothing.
    /// Returns what went wrong, if anything.
    public func retryProblems(last count: Int, on recovered: inout Sequencer) -> [String] {
        var problems: [String] = []
        let before = recovered.director
        for (id, version) in acked.suffix(count) {
            recovered.submit(
                MutationRequest(
                    clientID: id.clientID, seq: id.seq, base: ListVersion(epoch: 0, version: 0),
                    operations: [.removeAllSections]), tag: 0)
            let sealed = recovered.seal()
            if sealed.commit != nil { problems.append("retry of \(id) applied again") }
            switch sealed.outcomes[0].result {
            case .success(let original) where original == version: break
            case let other: problems.append("retry of \(id): \(other), acknowledged at \(version)")
            }
        }
        if recovered.director != before { problems.append("the retries changed the list") }
        return problems
    }

    /// The snapshot a server writes at compaction: the oldest state its history holds.
    public func snapshotAtOldestResumable() -> StoredSnapshot {
        let base = sequencer.oldestResumable
        let state = sequencer.state(at: base)!
        return StoredSnapshot(
            listName: name, position: base, digest: state.digest, sections: state.sections,
            dedupe: sequencer.dedupeRecords(through: base))
    }

    /// Steps until `count` batches are committed, handing each to `submit` (an
    /// asynchronous store: cluster mode) and compacting with `compact` when `submit`
    /// says a snapshot is due; returns whether one became due.
    @discardableResult
    public mutating func commit(
        _ count: Int, submit: (StoredBatch) async throws -> Bool,
        compact: ((StoredSnapshot) async throws -> Void)? = nil
    ) async throws -> Bool {
        var due = false
        for _ in 0..<count {
            guard let commit = nextCommit() else { break }
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
