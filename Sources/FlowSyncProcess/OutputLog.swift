import Synchronization

/// The output of a child process, appended as it arrives, with waiters that are woken by
/// each append instead of polling.
///
/// Thread-safe: the reader task appends, any task reads or waits.
public final class OutputLog: Sendable {
    private struct State {
        var bytes: [UInt8] = []
        var finished = false
        /// Tasks waiting for the next append (or the end), by ticket.
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var nextTicket: UInt64 = 0
    }

    private let state = Mutex(State())

    public init() {}

    /// Everything written so far, as UTF-8 (invalid sequences repaired).
    public var text: String { state.withLock { String(decoding: $0.bytes, as: UTF8.self) } }

    /// True once the writer is gone (the child exited and its pipe is drained).
    public var isFinished: Bool { state.withLock { $0.finished } }

    /// Appends bytes and wakes every waiter.
    public func append(_ bytes: [UInt8]) {
        let woken = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.bytes += bytes
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        // Resumed outside the lock: a resumed task may read the log at once.
        for waiter in woken { waiter.resume() }
    }

    /// Marks the end of the output and wakes every waiter.
    public func finish() {
        let woken = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.finished = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in woken { waiter.resume() }
    }

    /// Waits until a complete line (ended by a newline) makes `matches` return a value,
    /// and returns that value; `nil` when the output ends or `timeout` passes first.
    public func waitForLine<T: Sendable>(
        timeout: Duration, _ matches: @escaping @Sendable (Substring) -> T?
    ) async -> T? {
        await withDeadline(timeout) { await self.waitForLine(matches) }
    }

    /// Waits without a deadline; returns `nil` when the output ends or the task is
    /// cancelled.
    private func waitForLine<T: Sendable>(_ matches: @Sendable (Substring) -> T?) async -> T? {
        while !Task.isCancelled {
            let (text, count, finished) = state.withLock {
                (String(decoding: $0.bytes, as: UTF8.self), $0.bytes.count, $0.finished)
            }
            // Only complete lines: a line still being written may not be whole yet.
            for line in text.split(separator: "\n", omittingEmptySubsequences: true).dropLast(
                text.hasSuffix("\n") ? 0 : 1)
            {
                if let value = matches(line) { return value }
            }
            if finished { return nil }
            await nextChange(seenCount: count)
        }
        return nil
    }

    /// Returns after the next append or the end, or at once when something arrived since
    /// the caller looked (`seenCount` bytes) or the task is cancelled.
    private func nextChange(seenCount: Int) async {
        let ticket = state.withLock { state -> UInt64 in
            state.nextTicket += 1
            return state.nextTicket
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    // Something arrived (or the end) between the look and now, or the
                    // cancellation handler already ran: do not wait.
                    if state.bytes.count != seenCount || state.finished || Task.isCancelled { return true }
                    state.waiters[ticket] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: ticket) }
            waiter?.resume()
        }
    }
}

/// Runs `wait` for at most `timeout`: its value, or `nil` at the deadline (then `wait` is
/// cancelled, so it must end promptly on cancellation; every wait here does).
func withDeadline<T: Sendable>(_ timeout: Duration, _ wait: @escaping @Sendable () async -> T?) async -> T? {
    await withTaskGroup(of: T?.self) { group in
        group.addTask { await wait() }
        group.addTask {
            try? await Task.sleep(for: timeout)
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
}
