@testable import FlowSyncServer
import Testing

/// When the daemon trims the allocator after TLS handshakes, event by event.
@Suite(.timeLimit(.minutes(2))) struct AllocatorTrimPolicyTests {
    /// A policy and a way to ask it (``AllocatorTrimPolicy/shouldTrim`` is mutating).
    final class Asker {
        var policy: AllocatorTrimPolicy
        init(handshakes: Int, interval: UInt64) {
            policy = AllocatorTrimPolicy(minimumHandshakes: handshakes, minimumIntervalMilliseconds: interval)
        }
        func trims(at now: UInt64, ended: Int, waiting: Bool = false) -> Bool {
            policy.shouldTrim(now: now, handshakesEnded: ended, handshakesWaiting: waiting)
        }
    }

    @Test func aTrickleNeverTrims() {
        let policy = Asker(handshakes: 256, interval: 1_000)
        for ended in 0..<256 {
            #expect(!policy.trims(at: UInt64(ended) * 10_000, ended: ended))  // rule 1
        }
        #expect(policy.trims(at: 3_000_000, ended: 256))
    }

    @Test func aBurstTrimsOnceItIsOverAndCountsAfresh() {
        let policy = Asker(handshakes: 100, interval: 1_000)
        #expect(!policy.trims(at: 100, ended: 500, waiting: true))  // rule 2
        #expect(policy.trims(at: 200, ended: 600))
        // The count starts again from the trim: 99 more are not a burst.
        #expect(!policy.trims(at: 5_000, ended: 699))
        #expect(policy.trims(at: 5_100, ended: 700))
    }

    @Test func twoTrimsAreAtLeastTheIntervalApart() {
        let policy = Asker(handshakes: 10, interval: 1_000)
        #expect(policy.trims(at: 1_000, ended: 10))
        #expect(!policy.trims(at: 1_999, ended: 50))  // rule 3
        #expect(policy.trims(at: 2_000, ended: 50))
    }
}
