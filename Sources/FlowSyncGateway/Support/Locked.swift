import Foundation

/// A value behind a lock. The gateway's shared state is small and touched briefly (a
/// link's decoder and waiters, a pool's idle list), so a lock beats an actor hop; no
/// callback ever runs while the lock is held.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
