/// A value that arrives once, from any thread, to one waiter: the first `succeed` or
/// `fail` wins and later ones are ignored (a daemon's answer racing its timeout and the
/// link's close).
final class OneShot<Value: Sendable>: Sendable {
    private enum State {
        case waiting(CheckedContinuation<Value, any Error>?, onDone: [@Sendable () -> Void])
        case done(Result<Value, any Error>)
    }

    private let state = Locked(State.waiting(nil, onDone: []))

    init() {}

    func succeed(_ value: Value) { finish(.success(value)) }

    func fail(_ error: any Error) { finish(.failure(error)) }

    private func finish(_ result: Result<Value, any Error>) {
        let (waiter, onDone): (CheckedContinuation<Value, any Error>?, [@Sendable () -> Void]) = state.withLock {
            state in
            guard case .waiting(let waiter, let onDone) = state else { return (nil, []) }
            state = .done(result)
            return (waiter, onDone)
        }
        waiter?.resume(with: result)
        for work in onDone { work() }
    }

    /// Runs `work` once the value came (at once if it already has), on the thread that
    /// completed it.
    func whenDone(_ work: @escaping @Sendable () -> Void) {
        let already: Bool = state.withLock { state in
            guard case .waiting(let waiter, var onDone) = state else { return true }
            onDone.append(work)
            state = .waiting(waiter, onDone: onDone)
            return false
        }
        if already { work() }
    }

    /// Waits for the value (at once if it already came).
    var value: Value {
        get async throws {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Value, any Error>) in
                let done: Result<Value, any Error>? = state.withLock { state in
                    switch state {
                    case .waiting(nil, let onDone):
                        state = .waiting(continuation, onDone: onDone)
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
