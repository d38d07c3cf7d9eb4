import FlowSyncCoreTestSupport
import Testing

@testable import FlowSyncServer

/// A follower's rules for batches pushed over a peer link (issue #33; not wired yet),
/// without a socket: the next version applies at once, a gap is filled from the log,
/// duplicates and stale terms are dropped, another epoch reloads, and without a link
/// the announcements read the log.
@Suite(.timeLimit(.minutes(2))) struct PushedBatchesTests {
    typealias B = PushedBatches.Batch
    static func b(_ v: Int64) -> B { B(version: v, frame: [UInt8(truncatingIfNeeded: v)]) }

    @Test func theNextVersionAppliesAndAGapIsFilledFromTheLog() {
        var f = PushedBatches(epoch: 1, head: 4, term: 2, linked: true)
        #expect(f.pushed(epoch: 1, term: 2, version: 5, frame: [5]) == PushedBatches.Step(apply: [Self.b(5)]))
        #expect(f.pushed(epoch: 1, term: 2, version: 5, frame: [5]) == .none, "a duplicate")
        #expect(
            f.pushed(epoch: 1, term: 2, version: 8, frame: [8]) == PushedBatches.Step(readAfter: 5),
            "a gap: read after 5")
        #expect(
            f.pushed(epoch: 1, term: 2, version: 9, frame: [9]) == .none, "held; a read is out, it is asked again after"
        )
        #expect(
            f.pushed(epoch: 1, term: 2, version: 6, frame: [6]) == PushedBatches.Step(apply: [Self.b(6)]),
            "the next one applies even while reading")
        #expect(
            f.read([Self.b(6), Self.b(7), Self.b(8)])
                == PushedBatches.Step(apply: [Self.b(7), Self.b(8), Self.b(9)], readAfter: 9),
            "the read, then what was held; a push came during the read: read again")
        #expect(f.read([]) == .none)
        #expect(f.head == 9 && f.heldCount == 0)
    }

    @Test func staleTermsAreIgnoredAndANewEpochReloads() {
        var f = PushedBatches(epoch: 3, head: 10, term: 5, linked: true)
        #expect(f.pushed(epoch: 3, term: 4, version: 11, frame: [1]) == .none, "from a fenced owner")
        #expect(f.pushed(epoch: 2, term: 9, version: 11, frame: [1]) == .none, "an older epoch")
        #expect(
            f.pushed(epoch: 3, term: 6, version: 11, frame: [1])
                == PushedBatches.Step(apply: [B(version: 11, frame: [1])]))
        #expect(f.term == 6)
        #expect(f.pushed(epoch: 4, term: 7, version: 1, frame: [1]) == PushedBatches.Step(reload: true))
    }

    @Test func withoutALinkAnnouncementsReadTheLog() {
        var f = PushedBatches(epoch: 1, head: 2, term: 1, linked: true)
        #expect(f.announced(version: 3) == .none, "linked: the pushes carry it")
        #expect(f.linkChanged(up: false) == PushedBatches.Step(readAfter: 2), "lost: read what may have been lost")
        #expect(f.announced(version: 4) == .none, "a read is out")
        #expect(
            f.read([Self.b(3)]) == PushedBatches.Step(apply: [Self.b(3)], readAfter: 3),
            "announced meanwhile: read again")
        #expect(f.read([Self.b(4)]) == PushedBatches.Step(apply: [Self.b(4)]))
        #expect(f.announced(version: 4) == .none, "nothing new")
        #expect(f.announced(version: 5) == PushedBatches.Step(readAfter: 4))
        #expect(f.read(nil) == .none, "a failed read: the next announcement asks again")
        #expect(f.linkChanged(up: true) == .none)
    }

    @Test func aGapTheLogCannotFillReloads() {
        var f = PushedBatches(epoch: 1, head: 2, term: 1, linked: true)
        #expect(f.pushed(epoch: 1, term: 1, version: 9, frame: [9]) == PushedBatches.Step(readAfter: 2))
        #expect(
            f.read([Self.b(6), Self.b(7)]) == PushedBatches.Step(reload: true), "trimmed: the log starts past head + 1")
        var g = PushedBatches(epoch: 1, head: 2, term: 1, linked: true)
        _ = g.pushed(epoch: 1, term: 1, version: 9, frame: [9])
        #expect(
            g.read([Self.b(3)]) == PushedBatches.Step(apply: [Self.b(3)], reload: true),
            "the read should have reached 9")
    }

    /// Seeded runs: an owner commits versions to a log and pushes each after its commit
    /// over a link that drops, delays and reorders; the link goes down and up; the log
    /// is announced. The oracle: what is applied is contiguous from the start, never
    /// past the log, and once the run settles (link down, one announcement, reads
    /// answered) it reaches the log's head.
    @Test func seededLossyLinksApplyEveryVersionOnceInOrder() {
        let seed = UInt64.random(in: 0...UInt64.max)
        var random = SeededRandom(seed: seed)
        for _ in 0..<400 {
            var f = PushedBatches(epoch: 1, head: 0, term: 1, linked: true)
            var log: Int64 = 0
            var inTransit: [Int64] = []
            var applied: Int64 = 0
            var readOut: Int64?
            func take(_ step: PushedBatches.Step) {
                #expect(!step.reload, "seed \(seed): nothing is trimmed here")
                for batch in step.apply {
                    #expect(
                        batch.version == applied + 1 && batch.version <= log,
                        "seed \(seed): applied \(batch.version) after \(applied), log \(log)")
                    applied = batch.version
                }
                if let after = step.readAfter {
                    #expect(readOut == nil, "seed \(seed): one read at a time")
                    readOut = after
                }
            }
            func answerRead(fail: Bool) {
                guard let after = readOut else { return }
                readOut = nil
                take(f.read(fail ? nil : (after < log ? (after + 1...log).map(Self.b) : [])))
            }
            for _ in 0..<150 {
                switch random.next() % 12 {
                case 0..<4:
                    log += 1
                    if random.next() % 5 != 0 { inTransit.append(log) }  // 1 in 5 pushes lost
                case 4..<7:
                    guard !inTransit.isEmpty else { continue }
                    let pick = random.next() % 3 == 0 ? Int(random.next() % UInt64(inTransit.count)) : 0
                    let version = inTransit.remove(at: pick)
                    take(f.pushed(epoch: 1, term: 1, version: version, frame: Self.b(version).frame))
                case 7..<9:
                    answerRead(fail: random.next() % 6 == 0)
                case 9:
                    take(f.linkChanged(up: !f.linked))
                case 10:
                    take(f.announced(version: log))
                default:
                    break
                }
            }
            // Settle: the link goes down, the log is announced, every read answered.
            if f.linked { take(f.linkChanged(up: false)) }
            take(f.announced(version: log))
            var rounds = 0
            while readOut != nil && rounds < 50 {
                rounds += 1
                answerRead(fail: false)
            }
            #expect(applied == log && f.head == log, "seed \(seed): reached \(applied) of \(log)")
        }
    }
}
