import FlowSyncCore
import FlowSyncLoop
import FlowSyncProtocol

/// A subscriber's first frame after a gap — a fresh subscriber's snapshot, a resume's
/// catch-up, a lagging subscriber's catch-up — built inline for small lists and on a
/// worker thread for large ones (docs/ARCHITECTURE.md, "Event loop", rule 12, and
/// "The daemon", "Snapshots off the loop").
extension Server {
    /// Why a subscriber needs a first frame (statistics and metrics).
    enum FirstFrameCause: String {
        case subscribe, resume, lag
    }

    /// What ``firstFrame(for:of:from:digest:cause:)`` decided: the flow to record, and
    /// the frame to queue now (`nil` when it is being built off the loop).
    struct FirstFrame {
        var flow: SubscriptionFlow
        var frame: [UInt8]?
    }

    /// Decides a subscriber's first frame: from nothing (`from == nil`: a snapshot) or
    /// from its position. The caller records the flow, then queues the frame — in that
    /// order, so a queue that passes the hard limit closes a connection whose flow is
    /// already recorded (and so is cleaned up with it).
    func firstFrame(
        for connection: Connection, of list: ListHost, from: ListVersion?, digest: StateDigest?, cause: FirstFrameCause
    ) -> FirstFrame {
        let plan = from.map { list.resumePlan(from: $0, digest: digest) } ?? .snapshot(.freshSubscribe)
        // Small lists stay inline: their encode costs less than the hand-off's extra turn.
        let inline = list.size < configuration.offloadSnapshotRows
        switch plan {
        case .snapshot(let reason):
            // Older than the history in memory: the log on disk may still have it
            // (read on a worker); a snapshot only when it does not.
            //
            // Not for a lagging subscriber (issue #33, item 8). The log read replays
            // every batch since the list's last snapshot, with their reversals, on a
            // worker — tens to hundreds of MiB for a list written hard, once per
            // subscriber (the build is not shared) — and holds the batches committed
            // meanwhile. That is exactly when a lag happens: the writer outran the
            // history in memory. Two paused subscribers took the daemon from 40 to 617
            // MiB that way, and a build that held too much sent its subscriber round
            // again (three catch-up snapshots, Diffs between them). A subscriber that fell
            // further behind than the history gets the current snapshot instead: one
            // frame per version, cached and shared by every subscriber at that version,
            // so its cost is the list's size, which the watermarks already account for.
            if reason == .resumeTooOld, cause != .lag, let from,
                let pending = startLogCatchUpBuild(for: list, from: from, digest: digest, cause: cause)
            {
                pending.join(connection.id)
                return FirstFrame(flow: SubscriptionFlow(awaiting: pending.id, at: pending.position), frame: nil)
            }
            countFirstFrame(isSnapshot: true, cause: cause)
            if let frame = list.cachedSnapshot(reason: reason) {
                return FirstFrame(flow: SubscriptionFlow(deliveredUpTo: list.position), frame: frame)
            }
            if inline {
                let (frame, encoded) = list.snapshotFrame(reason: reason, encoder: encoder)
                if encoded { events.snapshotsEncoded() }
                return FirstFrame(flow: SubscriptionFlow(deliveredUpTo: list.position), frame: frame)
            }
            // Joiners for one reason share one build (and so one encode), even after
            // the list moved on: the build holds the batches since its version.
            let pending = list.shareablePendingFrame(reason: reason) ?? startSnapshotBuild(for: list, reason: reason)
            pending.join(connection.id)
            return FirstFrame(flow: SubscriptionFlow(awaiting: pending.id, at: pending.position), frame: nil)
        case .upToDate, .catchUp:
            guard case .catchUp = plan, !inline, let from else {
                let frame = list.catchUpFrame(from: from!, digest: digest, encoder: encoder)
                if frame.encodedSnapshot { events.snapshotsEncoded() }
                countFirstFrame(isSnapshot: frame.isSnapshot, cause: cause)
                return FirstFrame(flow: SubscriptionFlow(deliveredUpTo: list.position), frame: frame.frame)
            }
            // A composed diff of a large list (O(n) to diff, maybe a snapshot to compare
            // with): off the loop, for this subscriber alone. Counted when it is known
            // whether it came out as a diff or a snapshot.
            let pending = startCatchUpBuild(for: list, from: from, digest: digest, cause: cause)
            pending.join(connection.id)
            return FirstFrame(flow: SubscriptionFlow(awaiting: pending.id, at: pending.position), frame: nil)
        }
    }

    func countFirstFrame(isSnapshot: Bool, cause: FirstFrameCause) {
        switch cause {
        case .subscribe:
            events.snapshotSent()
        case .resume, .lag:
            events.caughtUp(snapshot: isSnapshot, cause: cause.rawValue)
        }
    }

    // MARK: Builds

    private func startSnapshotBuild(for list: ListHost, reason: Snapshot.Reason) -> PendingFrame {
        // A copy of the state at this version: a value, so the worker reads it while the
        // loop goes on committing (copy-on-write: the loop's next edit of a section copies
        // that section's storage once, instead of the worker seeing it change).
        let sequencer = list.sequencer
        let name = list.name
        return startBuild(for: list, sharedReason: reason, cause: nil) { encoder in
            BuiltFrame.Parts(
                frame: ListHost.snapshotFrame(name: name, sequencer: sequencer, reason: reason, encoder: encoder),
                isSnapshot: true, encodedSnapshots: 1)
        }
    }

    private func startCatchUpBuild(
        for list: ListHost, from: ListVersion, digest: StateDigest?, cause: FirstFrameCause
    ) -> PendingFrame {
        let sequencer = list.sequencer
        let name = list.name
        return startBuild(for: list, sharedReason: nil, cause: cause) { encoder in
            var encoded = 0
            let built = ListHost.catchUpFrame(
                name: name, sequencer: sequencer, from: from, digest: digest, encoder: encoder
            ) { reason in
                encoded += 1
                return ListHost.snapshotFrame(name: name, sequencer: sequencer, reason: reason, encoder: encoder)
            }
            return BuiltFrame.Parts(frame: built.frame, isSnapshot: built.isSnapshot, encodedSnapshots: encoded)
        }
    }

    /// A catch-up from `from`, older than the list's history in memory, rebuilt from the
    /// store's log on a worker (``LogCatchUpStore``): the same frame the history would
    /// have given — a diff, or a snapshot when smaller or the digest differs. `nil` when
    /// the store's log does not reach `from` (then the caller sends a snapshot at once).
    /// Should the files change under the worker (a compaction), it falls back to a
    /// snapshot of the state it was handed.
    private func startLogCatchUpBuild(
        for list: ListHost, from: ListVersion, digest: StateDigest?, cause: FirstFrameCause
    ) -> PendingFrame? {
        guard from.epoch == list.position.epoch, from.version < list.position.version,
            let plan = storage.logCatchUp?.logReadPlan(for: list.name, from: from, to: list.position)
        else { return nil }
        let sequencer = list.sequencer
        let name = list.name
        let options = RecoveryOptions(
            directorLimits: configuration.director, historyLimits: configuration.historyLimits,
            dedupeLimits: configuration.dedupeLimits)
        events.catchUpFromLog()
        return startBuild(for: list, sharedReason: nil, cause: cause) { encoder in
            var encoded = 0
            let source = plan.read(options: options) ?? sequencer
            let built = ListHost.catchUpFrame(
                name: name, sequencer: source, from: from, digest: digest, encoder: encoder
            ) { reason in
                encoded += 1
                return ListHost.snapshotFrame(name: name, sequencer: source, reason: reason, encoder: encoder)
            }
            return BuiltFrame.Parts(frame: built.frame, isSnapshot: built.isSnapshot, encodedSnapshots: encoded)
        }
    }

    /// Registers a build at the list's current version and hands `work` to the thread
    /// pool; the result comes back in ``pendingFrameBuilt(_:of:_:cause:)`` on the loop.
    private func startBuild(
        for list: ListHost, sharedReason: Snapshot.Reason?, cause: FirstFrameCause?,
        work: @escaping @Sendable (FrameEncoder) -> BuiltFrame.Parts
    ) -> PendingFrame {
        // The batches held for the waiting subscribers are bounded by the high watermark,
        // not the hard limit: each of them would take held frames only while its queue
        // (the built frame first) stays under the high mark, so more is never sent, and
        // an unshared build (a catch-up) holding up to the hard limit per subscriber let
        // a few lagging subscribers pin 32 MiB each (issue #33, item 8).
        let pending = PendingFrame(
            id: nextPendingFrameID, position: list.position, sharedReason: sharedReason,
            maxHeldBytes: configuration.highWatermarkBytes)
        nextPendingFrameID += 1
        list.addPendingFrame(pending)
        events.frameBuiltOffLoop()
        offloadsOutstanding += 1
        let compression = encoder.configuration
        loop.offload(
            work: {
                let started = MonotonicClock.nanoseconds()
                // A FrameEncoder (its deflate stream) is not Sendable: one per job. Encoding is
                // deterministic, so the bytes equal what the loop's encoder would produce.
                let parts = work(FrameEncoder(configuration: compression))
                return BuiltFrame(
                    frame: parts.frame, isSnapshot: parts.isSnapshot, encodedSnapshots: parts.encodedSnapshots,
                    nanoseconds: MonotonicClock.nanoseconds() - started)
            },
            then: { [weak self, weak list] built in
                // Loop thread, a later turn. Weak: the server or the list may be gone.
                guard let self else { return }
                offloadsOutstanding -= 1
                if let list { pendingFrameBuilt(pending, of: list, built, cause: cause) }
                // A shutdown waits for outstanding work (see finishShutdownIfDone).
                finishShutdownIfDone()
            })
        return pending
    }

    /// A build finished: each subscriber still waiting for it gets the frame, then every
    /// batch held since — through its flow, so back-pressure applies as for any batch.
    /// The frames leave with this turn's flush (which syncs the store first, rule 1 of
    /// "Storage"; the held batches were synced in their own turns anyway).
    private func pendingFrameBuilt(
        _ pending: PendingFrame, of list: ListHost, _ built: BuiltFrame, cause: FirstFrameCause?
    ) {
        list.removePendingFrame(pending.id)
        events.snapshotsEncoded(built.encodedSnapshots)
        // A list dropped (nobody left) or a failed store: nobody is served.
        guard storageFailure == nil, lists[list.name] === list else { return }
        if built.isSnapshot, let reason = pending.sharedReason {
            list.cache(snapshot: built.frame, reason: reason, at: pending.position)
        }
        let policy = configuration.backpressure
        for id in pending.waiting {
            // Only a flow still waiting for *this* build: the connection may have gone,
            // unsubscribed, or subscribed again (then it waits for another build, or for
            // this one and appears twice in `waiting`: served once).
            guard let connection = connections[id],
                connection.machine.flow(of: list.name)?.state == .awaitingFrame(pending.id)
            else { continue }
            if let cause { countFirstFrame(isSnapshot: built.isSnapshot, cause: cause) }
            var frames = [built.frame]
            var queued = connection.queuedBytes + built.frame.count
            var paused = 0
            // The flow first, then the frames (the hard limit may close the connection,
            // which then ends this subscription with the rest).
            let lagging = connection.machine.updateFlow(of: list.name) { flow -> Bool in
                flow.frameArrived(at: pending.position)
                if pending.overflowed {
                    // Too much was committed meanwhile to hold: catch up from the frame's
                    // version once the queue is low, like any slow consumer.
                    flow.fellBehind()
                } else {
                    for batch in pending.held {
                        let wasLive = flow.state == .live
                        switch flow.batchCommitted(from: batch.from, to: batch.to, queued: queued, policy: policy) {
                        case .send:
                            frames.append(batch.frame)
                            queued += batch.frame.count
                        case .skip:
                            if wasLive { paused += 1 }
                        case .held:
                            preconditionFailure("Internal inconsistency in Server: a served flow held a batch")
                        }
                    }
                }
                return flow.state == .lagging
            }
            for _ in 0..<paused {
                events.slowConsumer()
            }
            if lagging == true { laggingConnections.insert(connection.id) }
            for frame in frames { enqueue(frame, to: connection, about: list.name) }
        }
    }
}

extension BuiltFrame {
    /// What a build's work returns (the timing is added around it).
    struct Parts {
        let frame: [UInt8]
        let isSnapshot: Bool
        let encodedSnapshots: Int
    }
}
