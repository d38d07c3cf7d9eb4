#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Android)
import Android
#endif

/// A value behind a mutex: the SDK's one lock type, for every platform it supports.
///
/// Why not `Mutex` (module Synchronization): it needs iOS 18 / macOS 15, and the SDK
/// supports iOS 16 / macOS 13. Why a `pthread_mutex_t`: it exists on every declared
/// platform (Darwin, Glibc, Musl, Bionic) with the same API. It lives in memory of its
/// own (`allocate`), because a pthread mutex (like `os_unfair_lock`) must never move,
/// and a Swift stored property may.
///
/// Rules: not recursive; `body` must not block or call back into code that takes the
/// same lock. `@unchecked Sendable`: every access to `value` goes through the mutex.
final class Locked<Value>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        let rc = pthread_mutex_init(mutex, nil)
        precondition(rc == 0, "pthread_mutex_init failed: \(rc)")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value.
    func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
