import Foundation

/// Runs CPU- or disk-heavy synchronous test work on a thread of its own and awaits its
/// result, so it never holds one of the cooperative pool's threads (as many as cores: 2
/// here) for seconds.
///
/// Why: Swift Testing runs every test as a task on that pool. One seeded simulation
/// took 10 s of CPU per case in a debug build; two cases at once held both threads, and
/// every async test meanwhile waited past its deadlines (the flaky failures of #15). On
/// a thread of its own the work still gets its share of the cores, but the pool stays
/// free for the tests that wait on events.
///
/// `#expect` inside `body` has no current test to record against: return what to
/// check, and check it after the `await`.
public func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread {
            do { continuation.resume(returning: try body()) } catch { continuation.resume(throwing: error) }
        }
        thread.stackSize = 8 << 20
        thread.start()
    }
}
