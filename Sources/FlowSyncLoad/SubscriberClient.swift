import FlowSyncCore
import FlowSyncLoop
import FlowSyncProtocol

/// A subscriber of one list. It keeps the list's position and digest and checks that
/// versions follow each other with no gap; a **full** subscriber also keeps a replica
/// (a ``Director``), applies every Snapshot and Diff to it (`changeset.apply(to:)`)
/// and compares the replica's digest with the frame's after each one.
///
/// After a reconnect it subscribes with `resumeFrom` (its position) and its digest,
/// and expects the answer to start exactly there (a catch-up Diff) or to be a Snapshot.
final class SubscriberClient: LoadConnection {
    let listName: String
    let listIndex: Int
    /// Keeps a replica and applies every change to it.
    let isFull: Bool
    private(set) var director: Director?
    private(set) var position: ListVersion?
    private(set) var digest: StateDigest?
    /// Problems found (gaps, digest mismatches, changesets that do not apply).
    private(set) var problems = 0
    /// Waiting for the answer to a Subscribe: nil (live), or the resume position (a
    /// fresh Subscribe waits with `ListVersion(0, 0)` and accepts only a Snapshot).
    private var awaitingAnswer: ListVersion?
    private var awaitingFresh = false
    /// Set when the connection was dropped on purpose (resume storm): the time, and
    /// how the resubscription was answered.
    private var droppedAt: UInt64?
    var onRecovered: ((_ viaDiff: Bool, _ nanoseconds: UInt64) -> Void)?
    /// True once it holds a position (a first Snapshot arrived).
    var hasPosition: Bool { position != nil }

    init(context: LoadContext, listName: String, listIndex: Int, serial: Int, isFull: Bool) {
        self.listName = listName
        self.listIndex = listIndex
        self.isFull = isFull
        super.init(context: context, clientID: "load-sub-\(serial)")
    }

    override func didBecomeReady() {
        if droppedAt == nil { context.metrics.subscribersEstablished += 1 }  // reconnects are counted apart
        if let position {
            awaitingAnswer = position
            awaitingFresh = false
        } else {
            awaitingFresh = true
        }
        send([
            context.encoder.encode(
                .subscribe(Subscribe(listName: listName, resumeFrom: position, digest: position == nil ? nil : digest)))
        ])
    }

    /// Drops the connection and reconnects with resume (the resume storm).
    func dropAndResume() {
        guard isReady else { return }
        droppedAt = MonotonicClock.nanoseconds()
        isRecovering = true
        droppingOnPurpose = true
        close()
        droppingOnPurpose = false
        context.metrics.reconnects += 1
        context.enqueueConnect(self)
    }

    private var droppingOnPurpose = false
    private var reconnectTimer: LoopTimer?
    /// True from an unexpected end until the resubscription is answered: the final check
    /// waits for it rather than counting the subscriber as gone.
    private(set) var isRecovering = false

    override func didReceive(_ frame: DecodedFrame) {
        let metrics = context.metrics
        switch frame.message {
        case .snapshot(let snapshot) where snapshot.listName == listName:
            if isFull {
                do {
                    director = try Director(
                        sections: snapshot.sections,
                        limits: DirectorLimits(maxSections: 1_000_000, maxRows: 100_000_000))
                    if director!.digest != snapshot.digest {
                        fail("snapshot digest mismatch at \(snapshot.position)", digest: true)
                    }
                } catch {
                    fail("snapshot at \(snapshot.position) does not load: \(error)", apply: true)
                }
            }
            position = snapshot.position
            digest = snapshot.digest
            awaitingFresh = false
            awaitingAnswer = nil
            if metrics.measuring {
                metrics.snapshots += 1
                metrics.wireBytes += frame.wireBytes
                metrics.rawBytes += frame.rawBytes
            }
            recovered(viaDiff: false)
        case .diff(let diff) where diff.listName == listName:
            if awaitingFresh { return }  // cannot happen on a fresh connection; ignore like the spec says
            if let resume = awaitingAnswer {
                awaitingAnswer = nil
                guard diff.from == resume else {
                    fail("resume from \(resume) answered with a Diff from \(diff.from)", gap: true)
                    return
                }
                recovered(viaDiff: true)
            } else if position != diff.from {
                fail("gap: replica at \(position.map { "\($0)" } ?? "nothing"), Diff from \(diff.from)", gap: true)
                return
            }
            if isFull, director != nil {
                do {
                    try diff.changeset.apply(to: &director!)
                    if director!.digest != diff.digest { fail("digest mismatch after \(diff.to)", digest: true) }
                } catch {
                    fail("Diff \(diff.from)→\(diff.to) does not apply: \(error)", apply: true)
                }
            }
            position = diff.to
            digest = diff.digest
            guard metrics.measuring else { return }
            metrics.wireBytes += frame.wireBytes
            metrics.rawBytes += frame.rawBytes
            metrics.rowChangesDelivered += frame.rowChanges
            if diff.mutations.isEmpty {
                if diff.toVersion != diff.fromVersion { metrics.catchUpDiffs += 1 }
                return
            }
            metrics.batchDeliveries += 1
            if frame.intendedTimes == nil { frame.intendedTimes = context.intendedTimes(of: diff.mutations) }
            let now = MonotonicClock.nanoseconds()
            if context.targets.count > 1 {
                // Which endpoint each mutation was written on, against this subscriber's.
                for (k, t) in frame.intendedTimes!.enumerated() where t >= metrics.windowStart {
                    let ns = Int64(bitPattern: now &- t)
                    metrics.recordDelivery(nanoseconds: ns)
                    if context.writerEndpoint(of: diff.mutations[k]) == endpointIndex {
                        metrics.sameEndpointDelivery.record(nanoseconds: ns)
                    } else {
                        metrics.crossEndpointDelivery.record(nanoseconds: ns)
                    }
                }
            } else {
                for t in frame.intendedTimes! where t >= metrics.windowStart {
                    metrics.recordDelivery(nanoseconds: Int64(bitPattern: now &- t))
                }
            }
        case .error(let error):
            // The daemon closing a subscriber it cannot keep up with (or shutting down) is
            // a documented reaction, not a protocol error: back off and resume (below).
            if [.slowConsumer, .writeTimeout, .serverShuttingDown].contains(error.code), error.closesConnection {
                metrics.serverCloses += 1
                metrics.problem("\(clientID) (\(listName)): closed by the daemon: \(error.code) \(error.message)")
            } else {
                metrics.protocolError("\(clientID) (\(listName)): \(error.code) \(error.message)")
            }
        default:
            break
        }
    }

    private func recovered(viaDiff: Bool) {
        isRecovering = false
        guard let droppedAt else { return }
        self.droppedAt = nil
        onRecovered?(viaDiff, MonotonicClock.nanoseconds() &- droppedAt)
    }

    private func fail(_ text: String, gap: Bool = false, digest: Bool = false, apply: Bool = false) {
        problems += 1
        let metrics = context.metrics
        if gap { metrics.gaps += 1 }
        if digest { metrics.digestMismatches += 1 }
        if apply { metrics.applyFailures += 1 }
        metrics.problem("\(clientID) (\(listName)): \(text)")
    }

    /// An end we did not ask for (the daemon closed us: back-pressure's hard limit, a
    /// write timeout, a restart): as the protocol tells clients, back off 1 s and
    /// resubscribe from the replica's position. Not after a protocol error (the run
    /// fails anyway) nor once the run is shutting its clients down.
    override func didEnd(failed: Bool) {
        guard !failed, !droppingOnPurpose, !context.shuttingDown, reconnectTimer == nil else { return }
        context.metrics.unexpectedDisconnects += 1
        isRecovering = true
        let timer = LoopTimer(loop: context.loop)
        reconnectTimer = timer
        timer.start(after: 1_000) { [weak self] in
            guard let self else { return }
            self.reconnectTimer?.close()
            self.reconnectTimer = nil
            guard !self.context.shuttingDown else { return }
            self.context.metrics.reconnects += 1
            self.context.metrics.reconnectsAfterDisconnect += 1
            self.context.enqueueConnect(self)
        }
    }
}
