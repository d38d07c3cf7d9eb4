import FlowSyncCore
import Testing

@testable import FlowSyncServer

/// The subscription's flow machine and the pending-frame build, event by event, without
/// a socket (issue #15: a subscriber whose first frame is built off the loop).
@Suite(.timeLimit(.minutes(2))) struct SubscriptionFlowTests {
    let policy = BackpressurePolicy(lowWatermark: 100, highWatermark: 1_000, hardLimit: 10_000)
    func v(_ n: UInt64) -> ListVersion { ListVersion(epoch: 7, version: n) }

    @Test func awaitingHoldsBatchesThenGoesLiveAtTheFramesVersion() {
        var flow = SubscriptionFlow(awaiting: 3, at: v(10))
        #expect(flow.state == .awaitingFrame(3))
        #expect(flow.batchCommitted(from: v(10), to: v(11), queued: 0, policy: policy) == .held)
        #expect(
            flow.batchCommitted(from: v(11), to: v(12), queued: 5_000, policy: policy) == .held,
            "held whatever the queue")
        flow.frameArrived(at: v(10))
        #expect(flow.state == .live && flow.delivered == v(10))
        // The held batches follow, in order, through the usual decision.
        #expect(flow.batchCommitted(from: v(10), to: v(11), queued: 0, policy: policy) == .send)
        #expect(flow.batchCommitted(from: v(11), to: v(12), queued: 0, policy: policy) == .send)
        #expect(flow.delivered == v(12))
    }

    @Test func aHeldBatchOverTheHighWatermarkMakesItLag() {
        var flow = SubscriptionFlow(awaiting: 1, at: v(1))
        flow.frameArrived(at: v(1))
        #expect(flow.batchCommitted(from: v(1), to: v(2), queued: 2_000, policy: policy) == .skip)
        #expect(flow.state == .lagging && flow.delivered == v(1), "catches up from the frame's version")
    }

    @Test func fellBehindAfterAnOverflowedBuildLags() {
        var flow = SubscriptionFlow(awaiting: 1, at: v(1))
        flow.frameArrived(at: v(1))
        flow.fellBehind()
        #expect(flow.state == .lagging && flow.delivered == v(1))
        let due = flow.queueShrank(to: 50, policy: policy)
        #expect(due, "a catch-up is due once the queue is low")
    }

    @Test func pendingFrameHoldsContiguousBatchesAndOverflowsAtItsBound() {
        let pending = PendingFrame(id: 1, position: v(5), sharedReason: .freshSubscribe, maxHeldBytes: 10)
        #expect(pending.isShareable(for: .freshSubscribe) && !pending.isShareable(for: .resumeTooOld))
        pending.hold(from: v(5), to: v(6), frame: [1, 2, 3, 4])
        pending.hold(from: v(6), to: v(7), frame: [5, 6, 7, 8])
        #expect(pending.reach == v(7) && pending.held.map(\.to) == [v(6), v(7)] && pending.heldBytes == 8)
        pending.hold(from: v(7), to: v(8), frame: [9, 10, 11])
        #expect(pending.overflowed && pending.held.isEmpty, "past the bound the batches are dropped")
        #expect(!pending.isShareable(for: .freshSubscribe), "a new joiner must not share an incomplete build")
    }
}
