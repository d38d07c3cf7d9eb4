import FlowSyncCore
import FlowSyncProtocol

/// One named list on the server: its sequencer, who subscribes to it, and the encoded
/// snapshot frames of its current version. Loop-confined.
final class ListHost {
    let name: String
    var sequencer: Sequencer
    /// Connection IDs subscribed to this list, in subscription order.
    private(set) var subscribers: [Int] = []
    /// Declared in the config (never dropped when idle).
    var declared: Bool

    /// Encoded snapshot frames of ``cachedVersion``, one per reason (the reason is part
    /// of the frame). Why cache: every joiner at one version shares one encoding and
    /// one deflate, which for a large list is most of the cost of a subscribe.
    private var cachedSnapshots: [Snapshot.Reason: [UInt8]] = [:]
    private var cachedVersion: ListVersion?

    init(name: String, epoch: UInt64, limits: DirectorLimits, history: Sequencer.HistoryLimits, dedupe: DedupeWindow.Limits, declared: Bool) {
        self.name = name
        self.declared = declared
        sequencer = Sequencer(director: Director(limits: limits), position: ListVersion(epoch: epoch, version: 0), historyLimits: history, dedupeLimits: dedupe)
    }

    /// Recovered from the store: never dropped, even at version 0 of a new epoch (its
    /// state and its files are still there).
    private(set) var stored = false

    /// A list recovered from the store.
    init(name: String, sequencer: Sequencer, declared: Bool) {
        self.name = name
        self.declared = declared
        self.sequencer = sequencer
        self.stored = true
    }

    var position: ListVersion { sequencer.position }

    /// A list that nobody subscribes to, was never written and is not declared can be
    /// forgotten (subscribing to a name must not leak memory forever).
    var isDisposable: Bool {
        !declared && !stored && subscribers.isEmpty && sequencer.position.version == 0 && !sequencer.hasPending
    }

    func addSubscriber(_ connection: Int) {
        subscribers.append(connection)
    }

    func removeSubscriber(_ connection: Int) {
        subscribers.removeAll { $0 == connection }
    }

    /// The snapshot frame of the current version for `reason`, encoded once.
    func snapshotFrame(reason: Snapshot.Reason, encoder: FrameEncoder) -> [UInt8] {
        if cachedVersion != sequencer.position {
            cachedSnapshots = [:]
            cachedVersion = sequencer.position
        }
        if let frame = cachedSnapshots[reason] { return frame }
        let snapshot = Snapshot(listName: name, position: sequencer.position, digest: sequencer.director.digest, reason: reason, sections: sequencer.director.sections)
        let frame = encoder.encode(.snapshot(snapshot))
        cachedSnapshots[reason] = frame
        return frame
    }

    /// The frame that brings a subscriber at `from` to the current version: a diff from
    /// exactly `from`, or a snapshot when the position is unusable, when `digest` shows
    /// the subscriber's replica drifted, or when the snapshot is the smaller frame.
    func catchUpFrame(from: ListVersion, digest: StateDigest?, encoder: FrameEncoder) -> (frame: [UInt8], isSnapshot: Bool) {
        switch sequencer.catchUp(from: from) {
        case .snapshot(let reason):
            let wire: Snapshot.Reason = reason == .epochChanged ? .epochChanged : .resumeTooOld
            return (snapshotFrame(reason: wire, encoder: encoder), true)
        case .upToDate:
            if let digest, digest != sequencer.director.digest {
                return (snapshotFrame(reason: .resyncRequested, encoder: encoder), true)
            }
            return (diffFrame(from: from, changeset: Changeset(), encoder: encoder), false)
        case .changeset(let changeset):
            if let digest, let past = sequencer.state(at: from), past.digest != digest {
                return (snapshotFrame(reason: .resyncRequested, encoder: encoder), true)
            }
            let diff = diffFrame(from: from, changeset: changeset, encoder: encoder)
            // Only encode a snapshot to compare when it could plausibly be smaller.
            let rows = sequencer.director.rowCount + sequencer.director.sections.count
            if changeset.changeCount * 2 > rows {
                let snapshot = snapshotFrame(reason: .resumeTooOld, encoder: encoder)
                if snapshot.count < diff.count { return (snapshot, true) }
            }
            return (diff, false)
        }
    }

    private func diffFrame(from: ListVersion, changeset: Changeset, encoder: FrameEncoder) -> [UInt8] {
        let diff = Diff(listName: name, epoch: from.epoch, fromVersion: from.version, toVersion: sequencer.position.version,
                        digest: sequencer.director.digest, changeset: changeset, mutations: [])
        return encoder.encode(.diff(diff))
    }
}
