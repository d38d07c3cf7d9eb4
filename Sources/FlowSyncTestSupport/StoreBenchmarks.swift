import FlowSyncCore
import FlowSyncServer

/// The store work of `flowsync-server-bench --storage` that runs in process: it lives
/// here because the bench depends on this module only (a module imported transitively
/// is not rebuilt when it changes).
public enum StoreBenchmarks {
    /// What ``writeSyntheticLog(directory:mutations:perBatch:)`` wrote.
    public struct SyntheticLog: Sendable {
        public var batches: UInt64
        public var rows: Int
    }

    /// Writes one list ("big") of `mutations` mutations, `perBatch` per batch, through a
    /// `FileStore` with no snapshot, as the daemon writes its records: a `Sequencer` seals
    /// each batch and the store appends the commit. Each mutation is one operation on a
    /// list of 256 sections: 70% insert a ~60-byte row at a random index, 20% replace a
    /// row, 10% remove one. Seeded: the same log every time.
    public static func writeSyntheticLog(directory: String, mutations: Int, perBatch: Int) throws -> SyntheticLog {
        let store = FileStore(
            directory: directory, options: .init(fsync: .never, snapshotEveryBatches: 0, snapshotEveryBytes: 0))
        _ = try store.recover(RecoveryOptions())
        var sequencer = Sequencer(
            director: Director(limits: DirectorLimits(maxRows: 100_000_000)),
            position: ListVersion(epoch: 42, version: 0))
        var random = SeededRandom(seed: 99)
        sequencer.submit(
            MutationRequest(
                clientID: "gen", seq: 1, base: sequencer.position,
                operations: [.setSections((0..<256).map { Section(id: "s\($0)") })]), tag: 0)
        if let commit = sequencer.seal().commit { _ = try store.append(StoredBatch(listName: "big", commit: commit)) }
        var seq: UInt64 = 2
        var done = 1
        while done < mutations {
            for _ in 0..<perBatch {
                let s = random.int(0..<256)
                let rows = sequencer.director.sections[s].rows.count
                let roll = random.int(0..<10)
                let op: Operation
                if rows == 0 || roll < 7 {
                    op = .insertRows(
                        [
                            Row(
                                id: "r\(seq)", kind: "item",
                                payload: Array("{\"title\":\"row \(seq)\",\"done\":false}".utf8))
                        ], in: .index(s), at: random.int(0...rows))
                } else if roll < 9 {
                    let r = random.int(0..<rows)
                    op = .replaceRow(
                        .index(r, in: .index(s)),
                        with: Row(
                            id: sequencer.director.sections[s].rows[r].id, kind: "item",
                            payload: Array("{\"title\":\"edited \(seq)\"}".utf8)))
                } else {
                    op = .removeRows([.index(random.int(0..<rows), in: .index(s))])
                }
                sequencer.submit(
                    MutationRequest(
                        clientID: "gen-\(seq % 100)", seq: seq, base: ListVersion(epoch: 0, version: 0),
                        operations: [op]), tag: 0)
                seq += 1
            }
            let sealed = sequencer.seal()
            done += sealed.outcomes.count
            if let commit = sealed.commit { _ = try store.append(StoredBatch(listName: "big", commit: commit)) }
        }
        try store.close()
        return SyntheticLog(batches: sequencer.position.version, rows: sequencer.director.rowCount)
    }

    /// Recovers the store in `directory` in process; returns the batches replayed.
    public static func recover(directory: String) throws -> Int {
        let store = FileStore(directory: directory)
        defer { store.abandon() }
        return try store.recover(RecoveryOptions()).replayedBatches
    }

    /// Recovers, then compacts every list into a snapshot of its current state (what the
    /// loop thread pays when a snapshot is due); returns the seconds the compaction took
    /// and the rows written.
    public static func compactAll(directory: String, clock: () -> Double) throws -> (seconds: Double, rows: Int) {
        let store = FileStore(directory: directory)
        let report = try store.recover(RecoveryOptions(historyLimits: .init(maxBatches: 0)))
        var seconds = 0.0
        var rows = 0
        for list in report.lists {
            let sequencer = list.sequencer
            let t0 = clock()
            try store.compact(
                StoredSnapshot(
                    listName: list.name, position: sequencer.position, digest: sequencer.director.digest,
                    sections: sequencer.director.sections, dedupe: sequencer.dedupeRecords()))
            seconds += clock() - t0
            rows += sequencer.director.rowCount
        }
        try store.close()
        return (seconds, rows)
    }
}
