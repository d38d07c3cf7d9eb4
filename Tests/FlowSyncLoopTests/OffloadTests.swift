import FlowSyncLoop
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `EventLoop.offload(work:then:)`: work on libuv's pool, completion on the loop, and a
/// stop that waits for work in flight (docs/ARCHITECTURE.md, "Event loop", rules 12–14).
@Suite(.timeLimit(.minutes(2))) struct OffloadTests {
    @Test func workRunsOnThePoolAndEveryCompletionOnTheLoop() async throws {
        let thread = try EventLoopThread()
        let outcome = Shared<(results: [Int], workOnLoop: Int, completionsOffLoop: Int, inFlightAtEnd: Int)>(
            ([], 0, 0, -1))
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            thread.loop.execute {
                let loop = thread.loop
                let loopThread = pthread_self()
                var left = 200
                for k in 0..<200 {
                    loop.offload(
                        work: { () -> Int in
                            if pthread_equal(pthread_self(), loopThread) != 0 { outcome.update { $0.workOnLoop += 1 } }
                            return k * k
                        },
                        then: { value in
                            // Completions run one at a time on the loop: a plain local is safe.
                            if !loop.inLoopThread { outcome.update { $0.completionsOffLoop += 1 } }
                            outcome.update { $0.results.append(value) }
                            left -= 1
                            if left == 0 {
                                outcome.update { $0.inFlightAtEnd = loop.offloadsInFlight }
                                done.resume()
                            }
                        })
                }
            }
        }
        let seen = outcome.get()
        #expect(seen.results.sorted() == (0..<200).map { $0 * $0 })
        #expect(seen.workOnLoop == 0, "work must not run on the loop thread")
        #expect(seen.completionsOffLoop == 0, "completions must run on the loop thread")
        #expect(seen.inFlightAtEnd == 0)
        expectCleanShutdown(thread)
    }

    @Test func stopWaitsForWorkInFlightAndClosesCleanly() async throws {
        let thread = try EventLoopThread()
        let completed = Shared(false)
        thread.loop.execute {
            // Work that is surely still running when stop() is handled: the loop must
            // not finish (nor free the request) before its completion ran.
            thread.loop.offload(
                work: { () -> Int in
                    usleep(200_000)  // a pool thread, not a cooperative one
                    return 1
                }, then: { _ in completed.update { $0 = true } })
            thread.loop.stop()
        }
        expectCleanShutdown(thread)
        #expect(completed.get(), "the completion runs before run() returns")
    }
}
