import Testing

@testable import FlowSyncRing

#if canImport(Glibc)
import Glibc
#endif

/// The ring itself, on Unix socket pairs (no libuv): a gathered send arrives whole and
/// in order, skipped bytes are left out, one submission carries many sockets, a full
/// socket completes short and then with `EAGAIN` instead of waiting, and a closed peer is
/// `EPIPE` (with `MSG_NOSIGNAL`: no SIGPIPE). Skipped where the kernel refuses io_uring.
@Suite(.timeLimit(.minutes(2))) struct SendRingTests {
    /// Whether this kernel lets the test process create a ring. Each test makes its own
    /// ring: the tests run in parallel, and a ring belongs to one thread (its rule 1).
    static let available: Bool = (try? SendRing(sends: 1, buffers: 1)) != nil

    /// A connected pair of Unix stream sockets: (sender, receiver).
    func socketPair() throws -> (Int32, Int32) {
        var fds: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0 else { throw SocketError(errno: errno) }
        return (fds[0], fds[1])
    }

    struct SocketError: Error { let errno: Int32 }

    /// Everything readable on `fd` now, without waiting.
    func readAvailable(_ fd: Int32) -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n <= 0 { return out }
            out += buffer[0..<n]
        }
    }

    @Test(.enabled(if: available)) func gatheredSendsOnManySocketsInOneSubmission() throws {
        let ring = try SendRing(sends: 8, buffers: 32)
        let pairs = try (0..<4).map { _ in try socketPair() }
        defer {
            for (a, b) in pairs {
                close(a)
                close(b)
            }
        }
        let frames: [[UInt8]] = (0..<5).map { k in (0..<(100 + k)).map { UInt8(truncatingIfNeeded: $0 &+ k &* 31) } }
        // Socket k gets the frames from k on, the first k bytes skipped.
        for (k, (sender, _)) in pairs.enumerated() {
            ring.queueSend(fd: sender, chunks: frames[k...], skipping: k, tag: UInt64(k))
        }
        #expect(ring.freeSends == 8 - 4)
        var results: [UInt64: Int32] = [:]
        ring.submitAndCollect { tag, result in results[tag] = result }
        #expect(ring.freeSends == 8 && ring.freeBuffers == 32, "collect empties the ring")
        for (k, (_, receiver)) in pairs.enumerated() {
            let expected = Array(frames[k...].flatMap { $0 }.dropFirst(k))
            #expect(results[UInt64(k)] == Int32(expected.count))
            #expect(readAvailable(receiver) == expected, "socket \(k)")
        }
    }

    @Test(.enabled(if: available)) func aFullSocketCompletesShortThenWithEAGAINWithoutWaiting() throws {
        let ring = try SendRing(sends: 8, buffers: 32)
        let (sender, receiver) = try socketPair()
        defer {
            close(sender)
            close(receiver)
        }
        var small: Int32 = 4_096
        setsockopt(sender, SOL_SOCKET, SO_SNDBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        let big = [UInt8](repeating: 7, count: 1 << 20)
        var first: Int32 = 0
        ring.queueSend(fd: sender, chunks: [big][...], tag: 1)
        ring.submitAndCollect { _, result in first = result }
        #expect(first > 0 && first < Int32(big.count), "short: \(first)")
        var second: Int32 = 0
        ring.queueSend(fd: sender, chunks: [big][...], tag: 2)
        ring.submitAndCollect { _, result in second = result }
        #expect(second == -EAGAIN)
        #expect(readAvailable(receiver).count == Int(first), "only what the kernel took arrived")
    }

    @Test(.enabled(if: available)) func aClosedPeerIsEPIPE() throws {
        let ring = try SendRing(sends: 8, buffers: 32)
        let (sender, receiver) = try socketPair()
        defer { close(sender) }
        close(receiver)
        var result: Int32 = 0
        ring.queueSend(fd: sender, chunks: [[1, 2, 3]][...], tag: 9)
        ring.submitAndCollect { _, r in result = r }
        #expect(result == -EPIPE)
    }
}
