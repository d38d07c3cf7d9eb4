import FlowSyncTestSupport
import Testing

@testable import FlowSyncServer

/// The io_uring flush's decisions without a socket: every route, every kind of
/// completion, and an oracle over seeded random queues and short sends — the bytes the
/// ring sent followed by the bytes handed to libuv are the queue, exactly once, in order.
@Suite(.timeLimit(.minutes(2))) struct RingSendStateMachineTests {
    typealias M = RingSendStateMachine

    @Test func anEmptyQueueSendsNothing() {
        var m = M()
        #expect(
            m.flushStarted(frameSizes: [Int](), libuvQueuedBytes: 0, socketClosing: false, maxFrames: 64) == .nothing)
        #expect(!m.isSubmitted)
    }

    @Test func bytesHeldByLibuvKeepTheConnectionOnLibuv() {
        var m = M()
        // Rule 1: a ring send would overtake libuv's queued bytes.
        #expect(
            m.flushStarted(frameSizes: [10, 20], libuvQueuedBytes: 1, socketClosing: false, maxFrames: 64)
                == .writeWithLibuv)
        #expect(!m.isSubmitted)
        #expect(
            m.flushStarted(frameSizes: [10], libuvQueuedBytes: 0, socketClosing: true, maxFrames: 64) == .writeWithLibuv
        )
    }

    @Test func anIdleSocketSubmitsItsFramesAsOneSend() {
        var m = M()
        #expect(
            m.flushStarted(frameSizes: [10, 20, 30], libuvQueuedBytes: 0, socketClosing: false, maxFrames: 64)
                == .submit(frames: 3, bytes: 60))
        #expect(m.isSubmitted)
        #expect(m.sendCompleted(result: 60, frameSizes: [10, 20, 30]) == .done)
        #expect(!m.isSubmitted, "back to idle, ready for the next turn")
        #expect(
            m.flushStarted(frameSizes: [5], libuvQueuedBytes: 0, socketClosing: false, maxFrames: 64)
                == .submit(frames: 1, bytes: 5))
    }

    @Test func framesPastOneSendFollowThroughLibuv() {
        var m = M()
        #expect(
            m.flushStarted(frameSizes: [10, 20, 30], libuvQueuedBytes: 0, socketClosing: false, maxFrames: 2)
                == .submit(frames: 2, bytes: 30))
        #expect(
            m.sendCompleted(result: 30, frameSizes: [10, 20, 30])
                == .writeRemainderWithLibuv(from: .init(frame: 2, offset: 0)))
    }

    @Test func aShortSendHandsTheRestOnFromTheExactByte() {
        let sizes = [10, 20, 30]
        let cases: [(Int32, M.Position)] = [
            (0, .init(frame: 0, offset: 0)),
            (1, .init(frame: 0, offset: 1)),
            (9, .init(frame: 0, offset: 9)),
            (10, .init(frame: 1, offset: 0)),
            (29, .init(frame: 1, offset: 19)),
            (30, .init(frame: 2, offset: 0)),
            (59, .init(frame: 2, offset: 29)),
        ]
        for (sent, position) in cases {
            var m = M()
            _ = m.flushStarted(frameSizes: sizes, libuvQueuedBytes: 0, socketClosing: false, maxFrames: 64)
            #expect(
                m.sendCompleted(result: sent, frameSizes: sizes) == .writeRemainderWithLibuv(from: position),
                "sent \(sent)")
        }
    }

    @Test func wouldBlockHandsEverythingToLibuvAndOtherErrorsEndTheConnection() {
        for errno in M.retryableErrors {
            var m = M()
            _ = m.flushStarted(frameSizes: [10], libuvQueuedBytes: 0, socketClosing: false, maxFrames: 64)
            #expect(
                m.sendCompleted(result: errno, frameSizes: [10])
                    == .writeRemainderWithLibuv(from: .init(frame: 0, offset: 0)), "errno \(errno)")
        }
        for errno: Int32 in [-32, -104, -9] {  // EPIPE, ECONNRESET, EBADF
            var m = M()
            _ = m.flushStarted(frameSizes: [10], libuvQueuedBytes: 0, socketClosing: false, maxFrames: 64)
            #expect(m.sendCompleted(result: errno, frameSizes: [10]) == .fail(errno: errno))
            #expect(!m.isSubmitted)
        }
    }

    /// The oracle: for random queues, limits and kernel results, what the ring sent
    /// plus what libuv is given is the queue's bytes, each exactly once, in order.
    @Test func ringBytesThenLibuvBytesAreTheQueueExactlyOnce() {
        let seed = UInt64.random(in: 0...UInt64.max)
        var random = SeededRandom(seed: seed)
        for _ in 0..<5_000 {
            let count = random.int(1...12)
            let frames: [[UInt8]] = (0..<count).map { _ in
                (0..<random.int(1...40)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            }
            let sizes = frames.map(\.count)
            let stream = frames.flatMap { $0 }
            let maxFrames = random.int(1...14)
            var m = M()
            guard
                case .submit(let n, let bytes) = m.flushStarted(
                    frameSizes: sizes, libuvQueuedBytes: 0, socketClosing: false, maxFrames: maxFrames)
            else {
                Issue.record("seed \(seed): not submitted")
                return
            }
            #expect(n == min(count, maxFrames) && bytes == sizes.prefix(n).reduce(0, +), "seed \(seed)")
            let result: Int32 = random.chance(0.1) ? -11 : Int32(random.int(0...bytes))
            let ringSent = result < 0 ? [] : Array(frames.prefix(n).flatMap { $0 }.prefix(Int(result)))
            var handed: [UInt8] = []
            switch m.sendCompleted(result: result, frameSizes: sizes) {
            case .done:
                break
            case .writeRemainderWithLibuv(let from):
                // What the shell gives libuv: frames[from.frame...] skipping from.offset.
                handed = Array(frames[from.frame...].flatMap { $0 }.dropFirst(from.offset))
            case .fail:
                Issue.record("seed \(seed): -EAGAIN or a count must not fail")
                return
            }
            guard ringSent + handed == stream else {
                Issue.record(
                    "seed \(seed): \(sizes), max \(maxFrames), result \(result): bytes lost, duplicated or reordered")
                return
            }
        }
    }
}
