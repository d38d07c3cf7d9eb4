import FlowSyncCoreTestSupport
import Testing

@testable import FlowSyncServer

/// A follower's rules for batches pushed over a peer link (issue #33), without a socket:
/// the next version applies at once, a gap reads the log, duplicates and other epochs
/// are dropped; and, seeded, a lossy reordering link plus PostgreSQL's announcements and
/// gap reads through the replica's real ``ListOwnership`` machine end equal to the owner.
@Suite(.timeLimit(.minutes(2))) struct PushedBatchesTests {
    @Test func theNextVersionAppliesAGapReadsTheLogAndTheRestIsDropped() {
        #expect(PushedBatches.step(epoch: 1, version: 5, replicaEpoch: 1, head: 4) == .apply)
        #expect(PushedBatches.step(epoch: 1, version: 4, replicaEpoch: 1, head: 4) == .drop, "a duplicate")
        #expect(PushedBatches.step(epoch: 1, version: 2, replicaEpoch: 1, head: 4) == .drop, "an old one")
        #expect(PushedBatches.step(epoch: 1, version: 7, replicaEpoch: 1, head: 4) == .readLog, "a gap")
        #expect(PushedBatches.step(epoch: 2, version: 5, replicaEpoch: 1, head: 4) == .drop, "another epoch")
    }

    /// Seeded runs: an owner commits versions to a log and pushes each after its commit
    /// over a link that loses 1 in 5, reorders, and is cut and restored (a cut loses what
    /// was in transit and, as the store does, reads the log once); PostgreSQL announces
    /// versions now and then (an announcement past the head reads the log, as the store
    /// does). Reads go through the replica's ``ListOwnership`` (one at a time, one more
    /// if asked meanwhile) and deliver what follows the head. The oracle: the replica
    /// applies versions contiguously, never past the log, and ends at the log's head
    /// once the run settles (one last announcement, every read answered).
    @Test func seededLossyReorderingLinksWithGapReadsEndEqualToTheOwner() {
        let seed = UInt64.random(in: 0...UInt64.max)
        var random = SeededRandom(seed: seed)
        for _ in 0..<500 {
            var replica = ListOwnership()
            replica.claimStarted()
            replica.following(epoch: 1, head: 0, owner: "owner")
            var log: Int64 = 0
            var inTransit: [Int64] = []
            var readOut: Int64?
            var linkUp = true
            var ok = true
            func head() -> Int64 { replica.following?.head ?? -1 }
            func apply(_ version: Int64) {
                if version != head() + 1 || version > log {
                    ok = false
                    Issue.record("seed \(seed): applied \(version) after \(head()), log \(log)")
                }
                replica.delivered(upTo: version)
            }
            func wantRead() {
                if let following = replica.fetchWanted() {
                    if readOut != nil { Issue.record("seed \(seed): two reads at once") }
                    readOut = following.head
                }
            }
            func answerRead(fail: Bool) {
                guard let after = readOut else { return }
                readOut = nil
                if !fail {
                    // The store's deliver: only what follows the head now, in order.
                    for version in (after + 1)..<(log + 1) where version > head() { apply(version) }
                }
                if replica.fetchEnded() { wantRead() }
            }
            for _ in 0..<150 {
                switch random.next() % 12 {
                case 0..<4:
                    log += 1
                    // Pushed after the commit; 1 in 5 lost on the way.
                    if linkUp && random.next() % 5 != 0 { inTransit.append(log) }
                case 4..<7:
                    guard !inTransit.isEmpty else { continue }
                    let pick = random.next() % 3 == 0 ? Int(random.next() % UInt64(inTransit.count)) : 0
                    let version = inTransit.remove(at: pick)
                    switch PushedBatches.step(epoch: 1, version: version, replicaEpoch: 1, head: head()) {
                    case .apply: apply(version)
                    case .drop: break
                    case .readLog: wantRead()
                    }
                case 7..<9:
                    answerRead(fail: random.next() % 6 == 0)
                case 9:
                    linkUp.toggle()
                    if !linkUp {
                        inTransit = []
                        wantRead()
                    }
                case 10:
                    if log > head() { wantRead() }
                default:
                    break
                }
            }
            // Settle: one announcement of the head, every read answered.
            if log > head() { wantRead() }
            var rounds = 0
            while readOut != nil && rounds < 50 {
                rounds += 1
                answerRead(fail: false)
            }
            #expect(head() == log, "seed \(seed): reached \(head()) of \(log)")
            if !ok { return }
        }
    }
}
