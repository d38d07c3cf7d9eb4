/// A value that arrives once, from any thread, to one waiter: the first `succeed` or
/// `fail` wins and later ones are ignored (a daemon's answer racing its timeout and the
/// link's close).
final class OneShot<Value: Sendable>: Sendable {
    private enum State {
        case waiting(CheckedContinuation<Value, any Error>?)
        case done(Result<Value, any Error>)
    }

    private let state = Locked(State.waiting(nil))

    init() {}

    func succeed(_ value: Value) { finish(.success(value)) }

    func fail(_ error: any Error) { finish(.failure(error)) }

    private func finish(_ result: Result<Value, any Error>) {
        let waiter: CheckedContinuation<Value, any Error>? = state.withLock { state in
            guard case .waiting(let waiter) = state else { return nil }
            state = .done(result)
            return waiter
        }
        waiter?.resume(with: result)
    }

    /// Waits for the value (at once if it already came).
    var value: Value {
        get async throws {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Value, any Error>) in
                let done: Result<Value, any Error>? = state.withLock { state in
                    switch state {
                    case .waiting(nil):
                        state = .waiting(continuation)
                        return nil
                    case .waiting:
                        preconditionFailure("Internal inconsistency in OneShot: two waiters")
                    case .done(let result):
                        return result
                    }
                }
                if let done { continuation.resume(with: done) }
            }
        }
    }
}
