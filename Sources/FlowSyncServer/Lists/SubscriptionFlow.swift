import FlowSyncCore

/// Watermarks on a connection's queued bytes (see `[backpressure]` in the config).
struct BackpressurePolicy: Hashable, Sendable {
    var lowWatermark: Int
    var highWatermark: Int
    var hardLimit: Int
}

/// Flow control of one subscription, as a pure state machine.
///
/// - `live`: every batch's frame is queued to the subscriber.
/// - `lagging`: the connection's queue went above the high watermark; batches are
///   skipped (nothing more is queued for it, so memory stays bounded) until the queue
///   falls to the low watermark, when the subscriber gets **one** catch-up from the
///   last version it was sent — a composed diff or a snapshot.
/// - `awaitingFrame(build)`: the subscriber's first frame (a snapshot, or a resume's
///   catch-up) is being built off the loop thread (``PendingFrame``). Batches committed
///   meanwhile are *held* by that build, not queued here, and follow its frame in order
///   when it arrives (``frameArrived(at:)``), so the subscriber sees no gap.
///
/// The hard limit is enforced per connection by the shell (any frame, not just diffs).
struct SubscriptionFlow {
    enum State: Equatable {
        case live, lagging
        /// Waiting for the pending frame with this ID (``PendingFrame/id``).
        case awaitingFrame(UInt64)
    }

    /// What to do with a committed batch.
    enum Decision: Equatable {
        case send, skip
        /// Nothing now: the pending frame the subscriber waits for holds the batch.
        case held
    }

    private(set) var state: State = .live
    /// The last version queued to the subscriber (what its replica will be at).
    private(set) var delivered: ListVersion

    init(deliveredUpTo version: ListVersion) {
        delivered = version
    }

    /// A subscription whose first frame, the state at `version`, is built off the loop
    /// by the pending frame `build`.
    init(awaiting build: UInt64, at version: ListVersion) {
        delivered = version
        state = .awaitingFrame(build)
    }

    /// A batch `from → to` was committed; `queued` is the connection's queued bytes now.
    mutating func batchCommitted(
        from: ListVersion, to: ListVersion, queued: Int, policy: BackpressurePolicy
    ) -> Decision {
        switch state {
        case .awaitingFrame:
            return .held
        case .lagging:
            return .skip
        case .live:
            if queued >= policy.highWatermark || from != delivered {
                // Over the mark — or a frame was skipped before — so the next thing this
                // subscriber gets must be a catch-up, never a batch that leaves a gap.
                state = .lagging
                return .skip
            }
            delivered = to
            return .send
        }
    }

    /// The connection's queue shrank to `queued` bytes. Returns `true` when the caller
    /// must now send a catch-up from ``delivered`` and record the flow that follows it
    /// (live at the version it brings, or awaiting its build off the loop).
    mutating func queueShrank(to queued: Int, policy: BackpressurePolicy) -> Bool {
        guard state == .lagging, queued <= policy.lowWatermark else { return false }
        state = .live
        return true
    }

    /// The pending frame this subscription awaited (the state at `version`) was queued;
    /// the batches it held follow through ``batchCommitted(from:to:queued:policy:)``.
    mutating func frameArrived(at version: ListVersion) {
        guard case .awaitingFrame = state else {
            preconditionFailure("Internal inconsistency in SubscriptionFlow: frame arrived in state \(state)")
        }
        state = .live
        delivered = version
    }

    /// The subscriber missed batches it can no longer get one by one (too many were
    /// held while its first frame was built): it catches up like a slow consumer.
    mutating func fellBehind() {
        guard state == .live else {
            preconditionFailure("Internal inconsistency in SubscriptionFlow: fell behind in state \(state)")
        }
        state = .lagging
    }

}
