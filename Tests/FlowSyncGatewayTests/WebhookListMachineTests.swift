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

    func machine(cursor: ListVersion? = v(0), maxQueued: Int = 8) -> WebhookListMachine {
        WebhookListMachine(list: "l", cursor: cursor, maxQueued: maxQueued, backoff: WebhookBackoff(seed: 7))
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
        #expect(m.deliverySucceeded() == .save(WebhookProgress(cursor: Self.v(1)), then: .resubscribe(from: Self.v(1))))
        // The daemon's catch-up: one coalesced diff 1→5, delivered next.
        #expect(m.received(Self.batch(1, 5)) == Self.starts(Self.batch(1, 5), cursor: Self.v(1)))
        #expect(m.deliverySucceeded() == .save(WebhookProgress(cursor: Self.v(5)), then: .none))
    }

    @Test func aGapOrAnotherEpochMeansResubscribe() {
        var m = machine()
        _ = m.received(Self.batch(0, 1))
        #expect(m.received(Self.batch(2, 3)) == .unsubscribe, "gap 1→2 missing")
        #expect(m.deliverySucceeded() == .save(WebhookProgress(cursor: Self.v(1)), then: .resubscribe(from: Self.v(1))))
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
        #expect(idle.upstreamClosed() == .resubscribe(from: Self.v(4)))
        var busy = machine()
        _ = busy.received(Self.batch(0, 1))
        _ = busy.received(Self.batch(1, 2))
        #expect(busy.upstreamClosed() == .unsubscribe)
        #expect(busy.upstreamClosed() == .none, "once")
        #expect(
            busy.deliverySucceeded() == .save(WebhookProgress(cursor: Self.v(1)), then: .resubscribe(from: Self.v(1))))
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
        #expect(m.upstreamClosed() == .resubscribe(from: Self.v(4)))
        #expect(m.received(Self.snapshot(2)) == .none, "behind the cursor")
        #expect(m.received(Self.snapshot(4)) == .none, "at the cursor: nothing new")
        #expect(m.received(Self.batch(2, 3)) == .none)
        #expect(m.received(Self.batch(3, 4)) == .none)
        #expect(m.received(Self.batch(4, 5)) == Self.starts(Self.batch(4, 5), cursor: Self.v(4)))
        // Past the cursor, a snapshot is news; another epoch's is always.
        #expect(m.received(Self.snapshot(5, epoch: 2)) == .none, "queued behind the one in flight")
        #expect(m.queued == 1)
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
                case .resubscribe(let from):
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
