/// The bookkeeping of libpq's pipeline mode, without a socket: which statement the next
/// result belongs to, and when a statement is finished.
///
/// FlowSync sends every statement followed by its own sync point, so each is its own
/// implicit transaction and a failing statement never aborts another list's (in a
/// pipeline, an error aborts everything up to the next sync). libpq then returns, per
/// statement, in order:
///
///     result (one; several for a multi-statement string) · end of statement (NULL) · sync
///
/// The ledger is fed those three events and answers which statement is complete, and
/// with what; the connection (`PostgresConnection`) only carries the results over.
/// Pure and loop-confined (a value type); tested without PostgreSQL.
struct PipelineLedger<Token> {
    /// What the connection saw from `PQgetResult`.
    enum Event {
        /// A result for the statement at the head.
        case result(PostgresResult)
        /// `PQgetResult` returned NULL: the head statement's results are all in.
        case endOfStatement
        /// A `PGRES_PIPELINE_SYNC` result: the head statement's sync point.
        case sync
    }

    /// What the connection must do after an event.
    enum Completion {
        /// Complete `token` with this outcome.
        case complete(Token, Result<PostgresResult, PostgresError>)
        /// Nothing yet.
        case none
    }

    private struct Pending {
        let token: Token
        /// The first result (an error wins over later ones).
        var outcome: Result<PostgresResult, PostgresError>?
        var ended = false
    }

    private var pending: [Pending] = []
    private var head = 0

    /// Statements sent and not yet complete.
    var count: Int { pending.count - head }

    /// True when a result is owed: `PQgetResult` may be called.
    var expectsResults: Bool { count > 0 }

    /// Records a statement sent (with its sync point).
    mutating func sent(_ token: Token) {
        pending.append(Pending(token: token))
    }

    /// Feeds one event; returns the statement completed by it, if any.
    /// - Throws: ``PostgresError/protocolViolation(_:)`` when libpq's order is not the
    ///   documented one (a result with nothing pending, a sync before the end of a
    ///   statement): the connection must then be dropped.
    mutating func receive(_ event: Event) throws(PostgresError) -> Completion {
        guard head < pending.count else { throw .protocolViolation("a result with no statement pending") }
        switch event {
        case .result(let result):
            guard !pending[head].ended else {
                throw .protocolViolation("a result after the end of a statement, before its sync")
            }
            // The first error wins; otherwise the first result.
            if let error = result.error {
                if case .failure = pending[head].outcome {} else { pending[head].outcome = .failure(error) }
            } else if pending[head].outcome == nil {
                pending[head].outcome = .success(result)
            }
            return .none
        case .endOfStatement:
            guard !pending[head].ended else { throw .protocolViolation("two ends of one statement") }
            pending[head].ended = true
            return .none
        case .sync:
            guard pending[head].ended else { throw .protocolViolation("a sync before the end of its statement") }
            let done = pending[head]
            head += 1
            if head > 64 && head * 2 > pending.count {
                pending.removeFirst(head)
                head = 0
            }
            return .complete(done.token, done.outcome ?? .failure(.protocolViolation("a statement with no result")))
        }
    }

    /// Every statement still pending, in order, removed: the connection failed them.
    mutating func drain() -> [Token] {
        let tokens = pending[head...].map(\.token)
        pending = []
        head = 0
        return tokens
    }
}
