import FlowSyncCore
import FlowSyncProtocol

/// A store whose log can rebuild a list's history further back than memory holds, for a
/// catch-up older than the in-memory history (``FileStore``: the segments after the
/// snapshot). ``InMemoryStore`` is not one: its history is memory.
public protocol LogCatchUpStore: AnyObject {
    /// How to rebuild the list `name` at `to` (its current position) with every batch
    /// after `from` in its history, read on a worker — or `nil` when the stored log does
    /// not reach back to `from` (compacted away, another epoch). Loop thread.
    func logReadPlan(for name: String, from: ListVersion, to: ListVersion) -> LogReadPlan?
}

/// The files to read to rebuild one list's history from its log: a value a worker runs
/// (``read(options:)``). Reads only; what the loop appends meanwhile is ignored (reading
/// stops at ``to``).
public struct LogReadPlan: Sendable {
    let name: String
    let snapshotPath: String?
    let segmentPaths: [String]
    /// The subscriber's position: only the batches after it are kept while replaying.
    let from: ListVersion
    let to: ListVersion
    let io: FileIO

    /// The list at ``to`` with its history back to the snapshot (or version 0), or `nil`
    /// when the files no longer allow it (a compaction deleted a segment meanwhile, a
    /// record fails): the caller sends a snapshot instead. Blocking file I/O: call it on
    /// a worker.
    public func read(options: RecoveryOptions) -> Sequencer? {
        // The history the catch-up composes from is every batch after `from`, and only
        // those: older ones are dropped as the replay goes (issue #33), so the worker holds
        // the changes the subscriber missed, not everything since the list's snapshot.
        var unbounded = options
        let needed = to.version > from.version ? to.version - from.version : 1
        unbounded.historyLimits = Sequencer.HistoryLimits(maxBatches: Int(clamping: needed), maxBytes: .max)
        var rebuilder: ListRebuilder
        do {
            if let snapshotPath {
                rebuilder = try ListRebuilder(
                    snapshot: try StoreFormat.decodeSnapshot(try io.readFile(snapshotPath)), options: unbounded)
            } else {
                rebuilder = ListRebuilder(epoch: to.epoch, options: unbounded)
            }
        } catch {
            return nil
        }
        let decoder = FrameDecoder(limits: StoreFormat.decoderLimits, dictionary: .standard)
        for path in segmentPaths {
            guard rebuilder.sequencer.position.version < to.version, let bytes = try? io.readFile(path),
                let (header, headerLength) = try? StoreFormat.decodeSegmentHeader(bytes), header.epoch == to.epoch
            else { return nil }
            var failed = false
            bytes.withUnsafeBytes { raw in
                var offset = headerLength
                while offset < raw.count, rebuilder.sequencer.position.version < to.version {
                    guard let length = StoreFormat.validRecord(in: raw, at: offset) else {
                        failed = true
                        return
                    }
                    decoder.feed(
                        UnsafeRawBufferPointer(
                            rebasing: raw[
                                (offset + StoreFormat.recordHeaderBytes + 1)..<(offset + StoreFormat.recordHeaderBytes
                                    + length)]))
                    offset += StoreFormat.recordHeaderBytes + length
                    guard case .diff(let diff)? = try? decoder.next() else {
                        failed = true
                        return
                    }
                    // Records at or before the snapshot's version are skipped, as at recovery.
                    guard diff.toVersion > rebuilder.sequencer.position.version else { continue }
                    do {
                        try rebuilder.replay(
                            Sequencer.Commit(
                                from: diff.from, to: diff.to, changeset: diff.changeset, digest: diff.digest,
                                mutations: diff.mutations))
                    } catch {
                        failed = true
                        return
                    }
                }
            }
            if failed { return nil }
        }
        return rebuilder.sequencer.position == to ? rebuilder.sequencer : nil
    }
}

extension FileStore: LogCatchUpStore {
    public func logReadPlan(for name: String, from: ListVersion, to: ListVersion) -> LogReadPlan? {
        guard let files = lists[name], from.epoch == to.epoch, from.version < to.version else { return nil }
        let segments = files.segments.filter { $0.epoch == to.epoch }
        // The log reaches back to `from` when it starts at or before it: from the
        // snapshot's version (decoded by the worker; its generation orders it), or from
        // version 1 with no snapshot.
        guard let first = segments.first else { return nil }
        if files.snapshots.isEmpty {
            guard first.firstVersion == 1 else { return nil }
        } else {
            // The snapshot is at most at the first kept segment's start − 1 … or later:
            // segments wholly before it are deleted at install, so the first kept one
            // may start before it. Reaching `from` needs a snapshot at or before it,
            // which the worker checks (position after the snapshot ≤ from, below).
            guard first.firstVersion <= from.version + 1 else { return nil }
        }
        return LogReadPlan(
            name: name, snapshotPath: files.snapshots.last?.path, segmentPaths: segments.map(\.path), from: from,
            to: to, io: io)
    }
}
