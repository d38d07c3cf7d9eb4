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
/// 6. **A refused subscription waits.** When the daemon answers the Subscribe with an
///    Error (forbidden, no such list, overloaded, draining), the link is ended as in
///    rule 5, and the next resubscription waits: 0.5 s after the first refusal in a row,
///    doubling to 30 s, with jitter (``WebhookBackoff/subscriptionRefusal(seed:)``). A
///    hook whose list the daemon refuses once asked again as fast as the daemon answered.
///    Any batch received (an empty Diff included: the subscription was accepted) ends the
///    run of refusals. The pause holds back only this list's subscription: the delivery
///    in flight, its retries and its cursor go on meanwhile, and other lists have machines
///    of their own.
///
/// Not guaranteed: that every batch arrives as its own delivery. After a restart, an
/// overflow or a failover, the batches since the cursor arrive as one `catchUp` (or a
/// `snapshot`), because that is what the protocol's resume gives.
///
/// ```
///            received ─▶ [idle] ──deliver──▶ [delivering] ──failed──▶ (retry timer) ─┐
///                          ▲                    │ ▲                                  │
///                          └──succeeded, empty──┘ └─────────────retryDue─────────────┘
///
///   upstream:  live ──gap, overflow, link lost, refused──▶ needsResubscribe(refusals)
///                ▲                                              │ nothing in flight
///                └──any batch── resubscribing(refusals) ◀──resubscribe after the pause
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
        /// Subscribe again, resuming from this position (nil: a fresh snapshot), once
        /// `afterMilliseconds` have passed (0: at once; more after refusals, rule 6).
        case resubscribe(from: ListVersion?, afterMilliseconds: UInt64)
    }

    /// The upstream subscription's phase: whether batches arriving now can be trusted, and
    /// how many subscriptions in a row the daemon refused (rule 6).
    private enum Upstream: Hashable, Sendable {
        /// Live: batches arrive and are queued.
        case live
        /// Ended (overflow, lost link, refusal); resubscribe from the cursor once nothing is
        /// in flight, after a pause if `refusals` > 0.
        case needsResubscribe(refusals: Int)
        /// A resubscription was requested; batches are accepted again, and the first one
        /// ends the run of `refusals`.
        case resubscribing(refusals: Int)

        /// Refusals in a row so far (0 once a batch arrived).
        var refusals: Int {
            switch self {
            case .live: return 0
            case .needsResubscribe(let refusals), .resubscribing(let refusals): return refusals
            }
        }
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
    /// The pause before a resubscription after refusals (rule 6).
    private var refusalBackoff: WebhookBackoff
    /// Times the queue overflowed (a metric).
    public private(set) var overflows = 0

    /// - Parameters:
    ///   - backoff: the retry delays of a failed delivery.
    ///   - refusalBackoff: the pauses before subscribing again after refusals in a row
    ///     (rule 6); ``WebhookBackoff/subscriptionRefusal(seed:)`` is the gateway's.
    ///   - progress: what was saved (nil: nothing yet); call ``start()`` for the first
    ///     action.
    public init(
        list: String, progress: WebhookProgress?, maxQueued: Int = 1_000, backoff: WebhookBackoff,
        refusalBackoff: WebhookBackoff
    ) {
        precondition(maxQueued >= 1, "Internal inconsistency in WebhookListMachine: maxQueued < 1")
        self.list = list
        self.cursor = progress?.cursor
        self.lastAccepted = progress?.cursor
        self.maxQueued = maxQueued
        self.backoff = backoff
        self.refusalBackoff = refusalBackoff
        self.journaled = progress?.pending
    }

    /// A machine resuming from `cursor` alone (nothing was in flight).
    public init(
        list: String, cursor: ListVersion?, maxQueued: Int = 1_000, backoff: WebhookBackoff,
        refusalBackoff: WebhookBackoff
    ) {
        self.init(
            list: list, progress: WebhookProgress(cursor: cursor), maxQueued: maxQueued, backoff: backoff,
            refusalBackoff: refusalBackoff)
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
            upstream = .needsResubscribe(refusals: 0)
            return .deliver(batch, attempt: 1)
        }
        upstream = .resubscribing(refusals: 0)
        lastAccepted = cursor
        return .resubscribe(from: cursor, afterMilliseconds: 0)
    }

    /// Subscriptions the daemon refused in a row, since the last batch received (rule 6).
    public var refusalsInARow: Int { upstream.refusals }

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
        switch upstream {
        case .needsResubscribe: return .none  // rule 4/5: dropped, the catch-up brings it
        case .resubscribing: upstream = .live  // rule 6: accepted, the refusals end
        case .live: break
        }
        if batch.kind != .snapshot && batch.from == batch.to {
            return .none  // an empty Diff (already current): it confirms the subscription only
        }
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
                return lostUpstream(refusals: 0)  // rule 3: a gap or another epoch (upstream is live)
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
                upstream = .needsResubscribe(refusals: 0)
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
        lostUpstream(refusals: upstream.refusals)
    }

    /// The daemon answered the Subscribe with an Error (rule 6): the link is ended as in
    /// rule 5, and the resubscription waits, longer after each refusal in a row.
    public mutating func subscriptionRefused() -> Action {
        lostUpstream(refusals: upstream.refusals + 1)
    }

    private mutating func lostUpstream(refusals: Int) -> Action {
        switch state {
        case .idle:
            lastAccepted = cursor
            upstream = .needsResubscribe(refusals: refusals)
            return resubscribeIfNeeded()
        case .delivering(let inFlight, let attempt, _):
            state = .delivering(inFlight: inFlight, attempt: attempt, queue: [])
            lastAccepted = inFlight.to
            let wasSubscribed: Bool
            if case .needsResubscribe = upstream { wasSubscribed = false } else { wasSubscribed = true }
            upstream = .needsResubscribe(refusals: refusals)
            return wasSubscribed ? .unsubscribe : .none
        }
    }

    private mutating func resubscribeIfNeeded() -> Action {
        guard case .needsResubscribe(let refusals) = upstream else { return .none }
        upstream = .resubscribing(refusals: refusals)
        lastAccepted = cursor
        let pause = refusals > 0 ? refusalBackoff.delay(afterFailures: refusals) : 0
        return .resubscribe(from: cursor, afterMilliseconds: pause)
    }
}
