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
///
/// The hard limit is enforced per connection by the shell (any frame, not just diffs).
struct SubscriptionFlow {
    enum State: Equatable { case live, lagging }

    /// What to do with a committed batch.
    enum Decision: Equatable { case send, skip }

    private(set) var state: State = .live
    /// The last version queued to the subscriber (what its replica will be at).
    private(set) var delivered: ListVersion

    init(deliveredUpTo version: ListVersion) {
        delivered = version
    }

    /// A batch `from → to` was committed; `queued` is the connection's queued bytes now.
    mutating func batchCommitted(from: ListVersion, to: ListVersion, queued: Int, policy: BackpressurePolicy) -> Decision {
        switch state {
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
    /// must now send a catch-up from ``delivered`` and then call ``caughtUp(to:)``.
    mutating func queueShrank(to queued: Int, policy: BackpressurePolicy) -> Bool {
        guard state == .lagging, queued <= policy.lowWatermark else { return false }
        state = .live
        return true
    }

    /// A catch-up (diff or snapshot) to `version` was queued.
    mutating func caughtUp(to version: ListVersion) {
        delivered = version
    }
}
