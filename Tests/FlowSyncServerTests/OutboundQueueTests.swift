import Testing

@testable import FlowSyncServer

/// The per-connection outbound queue keeps its array between turns (no allocation per
/// delivery), but not after a burst (an idle connection holds none of it).
@Suite(.timeLimit(.minutes(2))) struct OutboundQueueTests {
    @Test func aSmallQueueKeepsItsStorageAndABurstLetsItGo() {
        var queue = OutboundQueue()
        let frame: [UInt8] = [1, 2, 3]
        queue.append(frame)
        queue.append(frame)
        #expect(queue.bytes == 6 && queue.frames.count == 2)
        let kept = queue.frames.capacity
        queue.clearAfterWrite()
        #expect(queue.frames.isEmpty && queue.bytes == 0)
        #expect(queue.frames.capacity == kept, "a small queue's storage is reused next turn")

        for _ in 0..<(OutboundQueue.retainedFrames * 4) { queue.append(frame) }
        #expect(queue.frames.capacity > OutboundQueue.retainedFrames)
        queue.clearAfterWrite()
        #expect(queue.frames.isEmpty && queue.bytes == 0)
        #expect(queue.frames.capacity == 0, "a burst's storage is released")
    }
}
