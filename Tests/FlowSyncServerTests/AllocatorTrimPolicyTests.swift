import FlowSyncCore
import FlowSyncTestSupport
import Testing

@testable import FlowSyncServer

/// When the daemon trims the allocator after a burst of TLS handshakes or of queued
/// bytes, event by event, and a seeded run against a model of the three rules.
@Suite(.timeLimit(.minutes(2))) struct AllocatorTrimPolicyTests {
    /// A policy and a way to ask it (``AllocatorTrimPolicy/burstToTrim`` is mutating).
    final class Asker {
        var policy: AllocatorTrimPolicy
        init(handshakes: Int = 256, queued: Int = 8 << 20, interval: UInt64) {
            policy = AllocatorTrimPolicy(
                minimumHandshakes: handshakes, minimumQueuedBytes: queued, minimumIntervalMilliseconds: interval)
        }
        func trims(at now: UInt64, ended: Int = 0, waiting: Bool = false, queued: Int = 0) -> AllocatorTrimPolicy.Burst?
        {
            policy.burstToTrim(now: now, handshakesEnded: ended, handshakesWaiting: waiting, queuedBytes: queued)
        }
    }

    @Test func aTrickleOfHandshakesNeverTrims() {
        let policy = Asker(handshakes: 256, interval: 1_000)
        for ended in 0..<256 {
            #expect(policy.trims(at: UInt64(ended) * 10_000, ended: ended) == nil)  // rule 1
        }
        #expect(policy.trims(at: 3_000_000, ended: 256) == .handshakes(ended: 256))
    }

    @Test func aHandshakeBurstTrimsOnceItIsOverAndCountsAfresh() {
        let policy = Asker(handshakes: 100, interval: 1_000)
        #expect(policy.trims(at: 100, ended: 500, waiting: true) == nil)  // rule 2
        #expect(policy.trims(at: 200, ended: 600) == .handshakes(ended: 600))
        // The count starts again from the trim: 99 more are not a burst.
        #expect(policy.trims(at: 5_000, ended: 699) == nil)
        #expect(policy.trims(at: 5_100, ended: 700) == .handshakes(ended: 100))
    }

    @Test func aQueueBurstTrimsOnceTheQueuesFellToAQuarter() {
        let policy = Asker(queued: 1_000, interval: 1_000)
        #expect(policy.trims(at: 100, queued: 999) == nil)  // rule 1: below the burst size
        #expect(policy.trims(at: 200, queued: 4_000) == nil)  // a burst, still high (rule 2)
        #expect(policy.trims(at: 300, queued: 1_001) == nil)
        #expect(policy.trims(at: 400, queued: 900) == .queuedBytes(high: 4_000))
        // The high starts again from what was queued at the trim (900: no burst).
        #expect(policy.trims(at: 5_000, queued: 0) == nil)
    }

    @Test func twoTrimsAreAtLeastTheIntervalApartWhicheverBurstAsks() {
        let policy = Asker(handshakes: 10, queued: 1_000, interval: 1_000)
        #expect(policy.trims(at: 1_000, ended: 10) != nil)
        #expect(policy.trims(at: 1_500, ended: 10, queued: 8_000) == nil)  // a queue burst starts
        #expect(policy.trims(at: 1_999, ended: 50, queued: 0) == nil)  // both due: rule 3
        #expect(policy.trims(at: 2_000, ended: 50, queued: 0) == .handshakes(ended: 40))
        // That trim served the queue burst too.
        #expect(policy.trims(at: 9_000, ended: 50, queued: 0) == nil)
    }

    /// 2,000 seeded sweeps against a model of rules 1–3: a trim exactly when a burst is
    /// due and over and the interval has passed, never two closer than the interval.
    @Test(arguments: [1, 2, 3] as [UInt64]) func seededSweepsFollowTheRules(seed: UInt64) {
        var random = SeededRandom(seed: seed)
        let policy = Asker(handshakes: 50, queued: 10_000, interval: 1_000)
        var now: UInt64 = 0, ended = 0, endedAtTrim = 0, high = 0
        var lastTrim: UInt64?
        for _ in 0..<2_000 {
            now += 100
            ended += random.chance(0.2) ? random.int(0..<40) : 0
            let waiting = random.chance(0.3)
            let queued = random.chance(0.5) ? random.int(0..<20_000) : random.int(0..<2_000)
            high = max(high, queued)
            let handshakeBurst = ended - endedAtTrim >= 50 && !waiting
            let queueBurst = high >= 10_000 && queued <= high / 4
            let intervalPassed = lastTrim.map { now >= $0 + 1_000 } ?? true
            let due = (handshakeBurst || queueBurst) && intervalPassed
            let burst = policy.trims(at: now, ended: ended, waiting: waiting, queued: queued)
            #expect((burst != nil) == due, "seed \(seed) at \(now)")
            if burst != nil {
                if let lastTrim { #expect(now - lastTrim >= 1_000) }
                lastTrim = now
                endedAtTrim = ended
                high = queued
            }
        }
    }
}
