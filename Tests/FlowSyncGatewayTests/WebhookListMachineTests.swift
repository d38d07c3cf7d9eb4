import FlowSyncCore
import FlowSyncGatewayCore
import Testing

/// The per-list webhook machine, event by event, with no socket and no clock.
@Suite(.timeLimit(.minutes(2))) struct WebhookListMachineTests {
    static func v(_ version: UInt64, epoch: UInt64 = 1) -> ListVersion { ListVersion(epoch: epoch, version: version) }

    static func batch(_ from: UInt64, _ to: UInt64, epoch: UInt64 = 1) -> WebhookBatch {
        WebhookBatch(
            list: "l", kind: to == from + 1 ? .batch : .catchUp, from: v(from, epoch: epoch), to: v(to, epoch: epoch),
            body: [])
    }

    static func snapshot(_ at: UInt64, epoch: UInt64 = 1) -> WebhookBatch {
        WebhookBatch(list: "l", kind: .snapshot, from: nil, to: v(at, epoch: epoch), body: [])
    }

    /// A 2xx with `next` waiting: the new cursor and the next delivery, saved in one write.
    static func delivered(_ cursor: ListVersion, next: WebhookBatch) -> WebhookListMachine.Action {
        .save(WebhookProgress(cursor: cursor, inFlight: next), then: .deliver(next, attempt: 1))
    }

    /// A delivery starting while nothing was in flight: saved, then POSTed.
    static func starts(_ batch: WebhookBatch, cursor: ListVersion?) -> WebhookListMachine.Action {
        .save(WebhookProgress(cursor: cursor, inFlight: batch), then: .deliver(batch, attempt: 1))
    }

    func machine(cursor: ListVersion? = v(0), maxQueued: Int = 8, list: String = "l") -> WebhookListMachine {
        WebhookListMachine(
            list: list, cursor: cursor, maxQueued: maxQueued, backoff: WebhookBackoff(seed: 7),
            refusalBackoff: .subscriptionRefusal(seed: 11))
    }

    @Test func oneInFlightThenInOrderAndTheCursorMovesOnlyOnSuccess() {
        var m = machine()
        #expect(m.received(Self.batch(0, 1)) == Self.starts(Self.batch(0, 1), cursor: Self.v(0)))
        #expect(m.received(Self.batch(1, 2)) == .none)
        #expect(m.received(Self.batch(2, 3)) == .none)
        #expect(m.queued == 2 && m.cursor == Self.v(0))
        #expect(m.deliverySucceeded() == Self.delivered(Self.v(1), next: Self.batch(1, 2)))
        #expect(m.deliverySucceeded() == Self.delivered(Self.v(2), next: Self.batch(2, 3)))
        #expect(m.deliverySucceeded() == .save(WebhookProgress(cursor: Self.v(3)), then: .none))
        #expect(!m.isDelivering && m.cursor == Self.v(3))
    }

    @Test func failuresRetryTheSameBatchWithGrowingBackoff() {
        var m = machine()
        _ = m.received(Self.batch(0, 1))
        _ = m.received(Self.batch(1, 2))
        var delays: [UInt64] = []
        for attempt in 1...12 {
            guard case .retry(let ms) = m.deliveryFailed() else {
                Issue.record("expected a retry")
                return
            }
            delays.append(ms)
            #expect(m.retryDue() == .deliver(Self.batch(0, 1), attempt: attempt + 1))
        }
        #expect(m.cursor == Self.v(0), "no success, no cursor move")
        // Equal jitter: attempt n waits in [step/2, step], step = min(30 s, 100 ms · 2^(n-1)).
        for (i, d) in delays.enumerated() {
            let step = min(30_000, UInt64(100) << UInt64(i))
            #expect(d >= step / 2 && d <= step, "attempt \(i + 1): \(d)")
        }
        #expect(delays.last! >= 15_000)
        #expect(m.deliverySucceeded() == Self.delivered(Self.v(1), next: Self.batch(1, 2)))
    }

    @Test func backoffIsSeededAndReplays() {
        var a = WebhookBackoff(seed: 3)
        var b = WebhookBackoff(seed: 3)
        #expect((1...20).map { a.delay(afterFailures: $0) } == (1...20).map { b.delay(afterFailures: $0) })
    }

    @Test func theQueueIsBoundedAndAnOverflowResumesFromTheCursor() {
        var m = machine(maxQueued: 2)
        _ = m.received(Self.batch(0, 1))  // in flight
        #expect(m.received(Self.batch(1, 2)) == .none)
        #expect(m.received(Self.batch(2, 3)) == .none)
        #expect(m.received(Self.batch(3, 4)) == .unsubscribe)
        #expect(m.queued == 0 && m.overflows == 1)
        // Frames already in flight from the ended subscription are ignored.
        #expect(m.received(Self.batch(4, 5)) == .none)
        #expect(m.queued == 0)
        // The in-flight one completes; then resubscribe from the cursor.
        #expect(
            m.deliverySucceeded()
                == .save(WebhookProgress(cursor: Self.v(1)), then: .resubscribe(from: Self.v(1), afterMilliseconds: 0)))
        // The daemon's catch-up: one coalesced diff 1→5, delivered next.
        #expect(m.received(Self.batch(1, 5)) == Self.starts(Self.batch(1, 5), cursor: Self.v(1)))
        #expect(m.deliverySucceeded() == .save(WebhookProgress(cursor: Self.v(5)), then: .none))
    }

    @Test func aGapOrAnotherEpochMeansResubscribe() {
        var m = machine()
        _ = m.received(Self.batch(0, 1))
        #expect(m.received(Self.batch(2, 3)) == .unsubscribe, "gap 1→2 missing")
        #expect(
            m.deliverySucceeded()
                == .save(WebhookProgress(cursor: Self.v(1)), then: .resubscribe(from: Self.v(1), afterMilliseconds: 0)))
        // A new epoch: the daemon answers the resume with a snapshot; it is delivered.
        #expect(m.received(Self.snapshot(0, epoch: 2)) == Self.starts(Self.snapshot(0, epoch: 2), cursor: Self.v(1)))
        #expect(m.received(Self.batch(0, 1, epoch: 2)) == .none)
        #expect(
            m.deliverySucceeded()
                == Self.delivered(Self.v(0, epoch: 2), next: Self.batch(0, 1, epoch: 2)))
    }

    @Test func duplicatesAfterAResubscriptionAreDropped() {
        var m = machine()
        _ = m.received(Self.batch(0, 1))
        _ = m.received(Self.batch(1, 2))
        #expect(m.received(Self.batch(1, 2)) == .none, "already covered")
        #expect(m.received(Self.batch(0, 1)) == .none)
        #expect(m.queued == 1)
    }

    @Test func aLostDaemonLinkResumesFromTheCursorWhenIdleOrAfterTheInFlight() {
        var idle = machine(cursor: Self.v(4))
        #expect(idle.upstreamClosed() == .resubscribe(from: Self.v(4), afterMilliseconds: 0))
        var busy = machine()
        _ = busy.received(Self.batch(0, 1))
        _ = busy.received(Self.batch(1, 2))
        #expect(busy.upstreamClosed() == .unsubscribe)
        #expect(busy.upstreamClosed() == .none, "once")
        #expect(
            busy.deliverySucceeded()
                == .save(WebhookProgress(cursor: Self.v(1)), then: .resubscribe(from: Self.v(1), afterMilliseconds: 0)))
    }

    @Test func aFirstSightWithoutCursorStartsFromASnapshot() {
        var m = machine(cursor: nil)
        #expect(m.received(Self.snapshot(9)) == Self.starts(Self.snapshot(9), cursor: nil))
        #expect(m.received(Self.batch(9, 10)) == .none)
        #expect(m.deliverySucceeded() == Self.delivered(Self.v(9), next: Self.batch(9, 10)))
    }

    /// A resume through a node that has not reached the cursor yet (a cluster replica
    /// behind the owner that died) is answered with a snapshot at that node's head
    /// (PROTOCOL.md: `resumeTooOld`, "newer than the current version"). Delivering it would
    /// take the receiver back, and the batches after it would repeat keys it saw, with
    /// other bodies. It is dropped; the batches the node replays next are covered up to the
    /// cursor, and the one after it is delivered.
    @Test func aSnapshotBehindTheCursorFromALaggingNodeIsDroppedNotDeliveredBackwards() {
        var m = machine(cursor: Self.v(3))
        _ = m.received(Self.batch(3, 4))
        #expect(m.deliverySucceeded() == .save(WebhookProgress(cursor: Self.v(4)), then: .none))
        #expect(m.upstreamClosed() == .resubscribe(from: Self.v(4), afterMilliseconds: 0))
        #expect(m.received(Self.snapshot(2)) == .none, "behind the cursor")
        #expect(m.received(Self.snapshot(4)) == .none, "at the cursor: nothing new")
        #expect(m.received(Self.batch(2, 3)) == .none)
        #expect(m.received(Self.batch(3, 4)) == .none)
        #expect(m.received(Self.batch(4, 5)) == Self.starts(Self.batch(4, 5), cursor: Self.v(4)))
        // Past the cursor, a snapshot is news; another epoch's is always.
        #expect(m.received(Self.snapshot(5, epoch: 2)) == .none, "queued behind the one in flight")
        #expect(m.queued == 1)
    }

    /// The pause a resubscription asks for, or nil when the action is not (or does not end
    /// in) a resubscription.
    static func pause(_ action: WebhookListMachine.Action) -> UInt64? {
        switch action {
        case .resubscribe(_, let milliseconds): return milliseconds
        case .save(_, let then): return pause(then)
        default: return nil
        }
    }

    /// Rule 6: refusals in a row pause each resubscription 0.5 s doubling to 30 s (equal
    /// jitter: refusal n waits in [step/2, step], step = min(30 s, 0.5 s · 2^(n-1))), never
    /// more than 30 s however long the daemon refuses.
    @Test func refusalsInARowPauseTheResubscriptionDoublingToThirtySeconds() throws {
        var m = machine(cursor: Self.v(4))
        var pauses: [UInt64] = []
        for n in 1...14 {
            let action = m.subscriptionRefused()
            let pause = try #require(Self.pause(action), "refusal \(n): \(action)")
            #expect(action == .resubscribe(from: Self.v(4), afterMilliseconds: pause))
            #expect(m.refusalsInARow == n)
            pauses.append(pause)
        }
        for (i, pause) in pauses.enumerated() {
            let step = min(30_000, UInt64(500) << UInt64(i))
            #expect(pause >= step / 2 && pause <= step, "refusal \(i + 1): \(pause) ms")
        }
        #expect(pauses[0] <= 500 && pauses[1] > 500 / 2, "starts at 0.5 s")
        #expect(pauses.suffix(6).allSatisfy { $0 >= 15_000 && $0 <= 30_000 }, "capped at 30 s: \(pauses)")
        #expect(!m.isDelivering && m.cursor == Self.v(4), "nothing delivered, the cursor kept")
    }

    /// Rule 6: an accepted subscription (any batch, an empty Diff included) ends the run:
    /// the next lost link resubscribes at once, and the next refusal starts again at 0.5 s.
    @Test func anAcceptedSubscriptionEndsTheRunOfRefusals() {
        for accepted in [Self.batch(4, 5), Self.batch(4, 4), Self.snapshot(9)] {
            var m = machine(cursor: Self.v(4))
            for _ in 1...6 { _ = m.subscriptionRefused() }
            #expect(m.refusalsInARow == 6)
            _ = m.received(accepted)
            #expect(m.refusalsInARow == 0, "\(accepted.kind) \(accepted.to)")
            if m.isDelivering { _ = m.deliverySucceeded() }
            #expect(Self.pause(m.upstreamClosed()) == 0, "a lost link after \(accepted.kind): at once")
            let again = Self.pause(m.subscriptionRefused()) ?? 0
            #expect(again >= 250 && again <= 500, "a new run starts at 0.5 s: \(again)")
        }
        // A lost link (no refusal) keeps the run: the daemon is still refusing as far as
        // the machine knows, so the pause stays.
        var m = machine(cursor: Self.v(4))
        for _ in 1...6 { _ = m.subscriptionRefused() }
        let kept = Self.pause(m.upstreamClosed()) ?? 0
        #expect(m.refusalsInARow == 6 && kept >= 8_000 && kept <= 16_000, "\(kept)")
    }

    /// Rule 6: the pause holds back only the resubscription. A delivery in flight when the
    /// daemon ends the subscription with an Error goes on (its retries use the delivery
    /// backoff, from 100 ms), and the paused resubscription comes after its success;
    /// another list's machine delivers at once.
    @Test func aRefusalHoldsBackOnlyThisListsSubscription() {
        var refused = machine(cursor: Self.v(0), list: "l")
        var other = machine(cursor: Self.v(0), list: "other")
        #expect(refused.received(Self.batch(0, 1)) == Self.starts(Self.batch(0, 1), cursor: Self.v(0)))
        #expect(refused.received(Self.batch(1, 2)) == .none)
        #expect(refused.subscriptionRefused() == .unsubscribe, "the link is ended at once")
        #expect(refused.isDelivering && refused.refusalsInARow == 1 && refused.queued == 0)
        // The delivery in flight retries on its own schedule, not the refusals'.
        guard case .retry(let retry) = refused.deliveryFailed() else {
            Issue.record("expected a delivery retry")
            return
        }
        #expect(retry >= 50 && retry <= 100, "first delivery retry: \(retry) ms")
        #expect(refused.retryDue() == .deliver(Self.batch(0, 1), attempt: 2))
        let after = refused.deliverySucceeded()
        #expect(refused.cursor == Self.v(1))
        let pause = Self.pause(after) ?? 0
        #expect(
            after
                == .save(
                    WebhookProgress(cursor: Self.v(1)), then: .resubscribe(from: Self.v(1), afterMilliseconds: pause)))
        #expect(pause >= 250 && pause <= 500, "the first refusal's pause: \(pause)")
        // Another list: no pause anywhere.
        let b = WebhookBatch(list: "other", kind: .batch, from: Self.v(0), to: Self.v(1), body: [])
        #expect(other.received(b) == Self.starts(b, cursor: Self.v(0)))
        #expect(other.deliverySucceeded() == .save(WebhookProgress(cursor: Self.v(1)), then: .none))
        #expect(other.upstreamClosed() == .resubscribe(from: Self.v(1), afterMilliseconds: 0))
    }

    /// Seeded simulation: a receiver that fails at random, overflows, link losses and
    /// resumes through lagging nodes; the receiver's log, deduplicated by `to`, covers
    /// every version in order.
    @Test func seededFlakyReceiverSeesEveryVersionInOrder() {
        for seed in UInt64(1)...20 {
            var random = SplitMix64(seed: seed)
            var m = machine(maxQueued: 4)
            var head: UInt64 = 0  // the daemon's committed head
            var subscribedFrom: UInt64? = 0  // nil: no live subscription
            var pending: WebhookListMachine.Action = .none
            var inFlight: WebhookBatch?
            var received: [ListVersion] = []
            func run(_ action: WebhookListMachine.Action) {
                switch action {
                case .none: break
                case .deliver(let b, _): inFlight = b
                case .save(_, let then): run(then)
                case .retry: pending = .retry(afterMilliseconds: 0)
                case .unsubscribe: subscribedFrom = nil
                case .resubscribe(let from, _):
                    let at = from!.version
                    subscribedFrom = head
                    if at > 0 && random.next() % 2 == 0 {
                        // A lagging node (a cluster replica behind the node that died): its
                        // head is behind the cursor, so it answers the resume with a
                        // snapshot (resumeTooOld) at its head, then each batch it replays.
                        let behind = random.next() % at
                        run(m.received(Self.snapshot(behind)))
                        for version in behind..<head { run(m.received(Self.batch(version, version + 1))) }
                    } else if head > at {
                        // The daemon's resume: one catch-up diff from the cursor to head.
                        run(m.received(Self.batch(at, head)))
                    }
                }
            }
            for _ in 0..<400 {
                switch random.next() % 5 {
                case 0, 1:
                    head += 1
                    if subscribedFrom != nil { run(m.received(Self.batch(head - 1, head))) }
                case 2:
                    if inFlight != nil, case .retry = pending {
                        pending = .none
                        run(m.retryDue())
                    } else if let b = inFlight {
                        if random.next() % 3 == 0 {
                            run(m.deliveryFailed())
                        } else {
                            received.append(b.to)
                            inFlight = nil
                            run(m.deliverySucceeded())
                        }
                    }
                case 3:
                    if random.next() % 10 == 0, subscribedFrom != nil { run(m.upstreamClosed()) }
                default: break
                }
            }
            // Drain: the receiver recovers.
            for _ in 0..<1_000 {
                if case .retry = pending {
                    pending = .none
                    run(m.retryDue())
                }
                guard let b = inFlight else { break }
                received.append(b.to)
                inFlight = nil
                run(m.deliverySucceeded())
            }
            #expect(
                zip(received, received.dropFirst()).allSatisfy { $0.version < $1.version }, "seed \(seed): in order")
            #expect(
                received.last?.version == head || head == 0,
                "seed \(seed): reached head \(head), got \(received.last.map(\.description) ?? "nothing")")
        }
    }
}
