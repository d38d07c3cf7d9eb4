import Synchronization

/// A value shared between a test and a loop thread, behind a lock.
public final class Shared<T: Sendable>: Sendable {
    private let value: Mutex<T>
    public init(_ v: T) { value = Mutex(v) }
    public func get() -> T { value.withLock { $0 } }
    public func update<R>(_ f: (inout T) -> R) -> R { value.withLock { f(&$0) } }
    public func set(_ v: T) { value.withLock { $0 = v } }
}

/// Loop-confined state a test keeps between jobs; only touched on the loop thread.
public final class LoopConfined<T>: @unchecked Sendable {
    public var value: T
    public init(_ v: T) { value = v }
}

/// Polls `condition` every 5 ms for at most `timeout` seconds; bounded by design.
/// The default is generous on purpose: it only bounds a failure (a passing wait returns
/// at the event), and on a loaded 2-core machine a waiting task may not get a thread
/// for seconds. Hangs are caught by the suites' time limits and the run's watchdog.
/// Runs on the caller's actor (`#isolation`), so a condition that reads actor-isolated
/// state — a main-actor global in an executable, say — is evaluated where it may be.
public func eventually(
    timeout: Double = 30, isolation: isolated (any Actor)? = #isolation, _ condition: () -> Bool
) async -> Bool {
    for _ in 0..<Int(timeout * 200) {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return condition()
}
