import FlowSyncCore

/// The delivery of one list's batches to one webhook receiver: in version order, one at a
/// time, at least once, with backoff, and a bounded queue (docs/GATEWAY.md, "Webhooks").
/// Pure: the shell subscribes, POSTs, sleeps and saves the cursor when told to.
///
/// Ordering rules, each with its reason:
/// 1. **One delivery in flight.** The next batch is sent only after the receiver answered
///    2xx for this one, so the receiver sees versions in order without sorting.
/// 2. **The delivery is saved before it is POSTed, and the cursor moves only on a 2xx**,
///    to the delivered batch's `to` (``WebhookProgress``: the cursor and the delivery in
///    flight, one durable write). A crash at any point leaves a saved delivery that a
///    restart POSTs again first, the same body under the same key, before it resumes
///    after it: at least once, never a gap, and a duplicate is always the same delivery.
///    (Saving only the cursor after the 2xx, a crash before that save resumed from the
///    older cursor, and the daemon's resume coalesced the delivered batch with the next
///    ones: the receiver saw its changes again under a newer key.)
/// 3. **Contiguity.** A Diff is accepted only if its `from` is the last accepted `to`
///    (a batch already covered is dropped). Anything else (a gap, which the daemon never
///    sends on one subscription, or another epoch's Diff) means the subscription can no
///    longer be trusted: drop the queue and resubscribe from the cursor. A Snapshot that
///    does not pass the last accepted position in its epoch is dropped too: a node that
///    has not replayed up to the cursor (in a cluster, a replica behind the owner that
///    just died) answers a resume with a Snapshot at its own head (PROTOCOL.md:
///    `resumeTooOld`, "newer than the current version"). Delivered, it would take the
///    receiver back, and the batches after it would repeat keys with other bodies. The
///    Diffs that node sends next are covered up to the cursor, and the one after it is
///    delivered.
/// 4. **Bounded queue.** Past `maxQueued` batches waiting behind a slow or dead receiver,
///    the queue is dropped and the upstream subscription ended (`.unsubscribe`): memory
///    stays bounded, and only this hook waits. When the in-flight delivery finally
///    succeeds, the machine asks to resubscribe from the cursor, and the daemon's
///    catch-up brings everything dropped as one coalesced Diff (or a snapshot).
/// 5. **A lost daemon link** (a daemon failover, a restart) is the same as rule 4: the
///    in-flight delivery goes on; what follows comes from a resubscription at the cursor.
///
/// Not guaranteed: that every batch arrives as its own delivery. After a restart, an
/// overflow or a failover, the batches since the cursor arrive as one `catchUp` (or a
/// `snapshot`), because that is what the protocol's resume gives.
///
/// ```
///            received ─▶ [idle] ──deliver──▶ [delivering] ──failed──▶ (retry timer) ─┐
///                          ▲                    │ ▲                                  │
///                          └──succeeded, empty──┘ └─────────────retryDue─────────────┘
/// ```
public struct WebhookListMachine: Sendable {
    /// What the shell must do.
    public enum Action: Hashable, Sendable {
        case none
        /// POST this batch (attempt 1, 2, …).
        case deliver(WebhookBatch, attempt: Int)
        /// Save this progress durably, then handle `then` (rule 2).
        indirect case save(WebhookProgress, then: Action)
        /// Wait this long, then send ``WebhookListMachine/retryDue()``.
        case retry(afterMilliseconds: UInt64)
        /// End the upstream subscription (the queue overflowed).
        case unsubscribe
        /// Subscribe again, resuming from this position (nil: a fresh snapshot).
        case resubscribe(from: ListVersion?)
    }

    /// The upstream subscription's phase: whether batches arriving now can be trusted.
    private enum Upstream: Hashable, Sendable {
        /// Live: batches arrive and are queued.
        case live
        /// Ended (overflow, lost link); resubscribe from the cursor once nothing is in flight.
        case needsResubscribe
        /// A resubscription was requested; batches are accepted again.
        case resubscribing
    }

    private enum State: Sendable {
        /// Nothing in flight.
        case idle
        /// `inFlight` is being POSTed (or waits for its retry); `queue` follows it.
        case delivering(inFlight: WebhookBatch, attempt: Int, queue: [WebhookBatch])
    }

    public let list: String
    public let maxQueued: Int
    /// The last delivered position (saved), nil before the first delivery.
    public private(set) var cursor: ListVersion?
    /// The `to` of the last accepted batch (queued, in flight or delivered).
    private var lastAccepted: ListVersion?
    private var state: State = .idle
    private var upstream: Upstream = .live
    private var backoff: WebhookBackoff
    /// Times the queue overflowed (a metric).
    public private(set) var overflows = 0

    /// A machine resuming from `progress` (what was saved; nil: nothing yet). Call
    /// ``start()`` for its first action.
    public init(list: String, progress: WebhookProgress?, maxQueued: Int = 1_000, backoff: WebhookBackoff) {
        precondition(maxQueued >= 1, "Internal inconsistency in WebhookListMachine: maxQueued < 1")
        self.list = list
        self.cursor = progress?.cursor
        self.lastAccepted = progress?.cursor
        self.maxQueued = maxQueued
        self.backoff = backoff
        self.journaled = progress?.pending
    }

    /// A machine resuming from `cursor` alone (nothing was in flight).
    public init(list: String, cursor: ListVersion?, maxQueued: Int = 1_000, backoff: WebhookBackoff) {
        self.init(list: list, progress: WebhookProgress(cursor: cursor), maxQueued: maxQueued, backoff: backoff)
    }

    /// The delivery the saved progress held (a crash before its 2xx was saved), until
    /// ``start()`` sends it again.
    private var journaled: WebhookBatch?

    /// The first action: POST the delivery a crash left unanswered (rule 2), the same
    /// body under the same key, and subscribe after it once it succeeds; else subscribe
    /// from the cursor.
    public mutating func start() -> Action {
        if let batch = journaled {
            journaled = nil
            state = .delivering(inFlight: batch, attempt: 1, queue: [])
            lastAccepted = batch.to
            upstream = .needsResubscribe
            return .deliver(batch, attempt: 1)
        }
        upstream = .resubscribing
        lastAccepted = cursor
        return .resubscribe(from: cursor)
    }

    /// Batches waiting behind the one in flight.
    public var queued: Int {
        if case .delivering(_, _, let queue) = state { return queue.count }
        return 0
    }

    /// Whether a delivery is in flight or waiting for its retry.
    public var isDelivering: Bool {
        if case .delivering = state { return true }
        return false
    }

    /// A Diff or Snapshot arrived from the daemon, as a delivery.
    public mutating func received(_ batch: WebhookBatch) -> Action {
        precondition(
            batch.list == list, "Internal inconsistency in WebhookListMachine: \(batch.list) on \(list)'s machine")
        if upstream == .needsResubscribe { return .none }  // rule 4/5: dropped, the catch-up brings it
        if upstream == .resubscribing { upstream = .live }
        if batch.kind == .snapshot {
            if let last = lastAccepted, batch.to.epoch == last.epoch, batch.to.version <= last.version {
                return .none  // rule 3: a node behind the cursor; its next Diffs catch up
            }
        } else {
            guard let from = batch.from else {
                preconditionFailure("Internal inconsistency in WebhookListMachine: a diff without from")
            }
            if let last = lastAccepted, from.epoch == last.epoch, batch.to.version <= last.version {
                return .none  // rule 3: already covered (a duplicate after a resubscription)
            }
            guard let last = lastAccepted, from == last else {
                return lostUpstream()  // rule 3: a gap or another epoch
            }
        }
        lastAccepted = batch.to
        switch state {
        case .idle:
            state = .delivering(inFlight: batch, attempt: 1, queue: [])
            return .save(WebhookProgress(cursor: cursor, inFlight: batch), then: .deliver(batch, attempt: 1))
        case .delivering(let inFlight, let attempt, var queue):
            guard queue.count < maxQueued else {
                // Rule 4: drop what waits; the in-flight one keeps going.
                overflows += 1
                state = .delivering(inFlight: inFlight, attempt: attempt, queue: [])
                lastAccepted = inFlight.to
                upstream = .needsResubscribe
                return .unsubscribe
            }
            queue.append(batch)
            state = .delivering(inFlight: inFlight, attempt: attempt, queue: queue)
            return .none
        }
    }

    /// The receiver answered 2xx for the batch in flight.
    public mutating func deliverySucceeded() -> Action {
        guard case .delivering(let inFlight, _, var queue) = state else {
            preconditionFailure("Internal inconsistency in WebhookListMachine: success with nothing in flight")
        }
        cursor = inFlight.to
        guard !queue.isEmpty else {
            state = .idle
            return .save(WebhookProgress(cursor: inFlight.to), then: resubscribeIfNeeded())
        }
        // The new cursor and the next delivery in one write (rule 2).
        let head = queue.removeFirst()
        state = .delivering(inFlight: head, attempt: 1, queue: queue)
        return .save(WebhookProgress(cursor: inFlight.to, inFlight: head), then: .deliver(head, attempt: 1))
    }

    /// The receiver failed (no answer, a timeout, a non-2xx status).
    public mutating func deliveryFailed() -> Action {
        guard case .delivering(_, let attempt, _) = state else {
            preconditionFailure("Internal inconsistency in WebhookListMachine: failure with nothing in flight")
        }
        return .retry(afterMilliseconds: backoff.delay(afterFailures: attempt))
    }

    /// The retry timer fired.
    public mutating func retryDue() -> Action {
        guard case .delivering(let inFlight, let attempt, let queue) = state else {
            preconditionFailure("Internal inconsistency in WebhookListMachine: retry with nothing in flight")
        }
        state = .delivering(inFlight: inFlight, attempt: attempt + 1, queue: queue)
        return .deliver(inFlight, attempt: attempt + 1)
    }

    /// The daemon link carrying the subscription closed (rule 5).
    public mutating func upstreamClosed() -> Action {
        lostUpstream()
    }

    private mutating func lostUpstream() -> Action {
        switch state {
        case .idle:
            lastAccepted = cursor
            upstream = .needsResubscribe
            return resubscribeIfNeeded()
        case .delivering(let inFlight, let attempt, _):
            state = .delivering(inFlight: inFlight, attempt: attempt, queue: [])
            lastAccepted = inFlight.to
            let wasLive = upstream != .needsResubscribe
            upstream = .needsResubscribe
            return wasLive ? .unsubscribe : .none
        }
    }

    private mutating func resubscribeIfNeeded() -> Action {
        guard upstream == .needsResubscribe else { return .none }
        upstream = .resubscribing
        lastAccepted = cursor
        return .resubscribe(from: cursor)
    }
}
