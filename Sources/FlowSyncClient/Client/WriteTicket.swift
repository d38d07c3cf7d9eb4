import FlowSyncCore

/// The outcome of one write: the version the server committed it at, or why not.
///
/// The write is already visible in the replica when you get the ticket; await
/// ``committed()`` when you need to know the server agreed.
public final class WriteTicket: Sendable, CustomStringConvertible {
    /// The list written to.
    public let listName: String
    /// The write's sequence number (its identity with the client ID).
    public let seq: UInt64
    private let state = Locked<State>(State())  // not Mutex: iOS 16 / macOS 13 (Locked.swift)

    private struct State {
        var result: Result<ListVersion, FlowSyncError>?
        var waiters: [CheckedContinuation<Result<ListVersion, FlowSyncError>, Never>] = []
    }

    init(listName: String, seq: UInt64) {
        self.listName = listName
        self.seq = seq
    }

    /// The outcome so far; `nil` while the server has not answered.
    public var result: Result<ListVersion, FlowSyncError>? { state.withLock { $0.result } }

    /// Waits for the server's answer.
    ///
    /// - Returns: The version of the batch that contains the write.
    /// - Throws: ``FlowSyncError/rejected(code:message:)`` (the change was rolled back),
    ///   ``FlowSyncError/closed`` when the client closed first, or the list's failure.
    public func committed() async throws(FlowSyncError) -> ListVersion {
        let result = await withCheckedContinuation {
            (continuation: CheckedContinuation<Result<ListVersion, FlowSyncError>, Never>) in
            let ready = state.withLock { state -> Result<ListVersion, FlowSyncError>? in
                if let result = state.result { return result }
                state.waiters.append(continuation)
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
        return try result.get()
    }

    /// Records the answer (the first one wins) and wakes the waiters.
    func resolve(_ result: Result<ListVersion, FlowSyncError>) {
        let waiters = state.withLock { state -> [CheckedContinuation<Result<ListVersion, FlowSyncError>, Never>] in
            guard state.result == nil else { return [] }
            state.result = result
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: result) }
    }

    public var description: String { "write #\(seq) of \(listName): \(result.map { "\($0)" } ?? "pending")" }
}
