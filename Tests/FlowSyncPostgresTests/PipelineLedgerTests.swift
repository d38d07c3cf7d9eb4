import Testing

@testable import FlowSyncPostgres

/// libpq's pipeline order, fed by hand: which statement each result belongs to.
@Suite(.timeLimit(.minutes(2))) struct PipelineLedgerTests {
    @Test func statementsCompleteInOrderAtTheirSync() throws {
        var ledger = PipelineLedger<Int>()
        ledger.sent(1)
        ledger.sent(2)
        let one = PostgresResult(rows: [["1"]])
        #expect(try Self.token(ledger.receive(.result(one))) == nil)
        #expect(try Self.token(ledger.receive(.endOfStatement)) == nil)
        #expect(try Self.token(ledger.receive(.sync)) == 1)
        #expect(ledger.count == 1)
        _ = try ledger.receive(.result(PostgresResult(rows: [["2"]])))
        _ = try ledger.receive(.endOfStatement)
        guard case .complete(2, .success(let result)) = try ledger.receive(.sync) else {
            Issue.record("statement 2 not complete")
            return
        }
        #expect(result.rows == [["2"]])
        #expect(!ledger.expectsResults)
    }

    @Test func anErrorWinsOverOtherResultsOfItsStatement() throws {
        var ledger = PipelineLedger<Int>()
        ledger.sent(7)
        _ = try ledger.receive(.result(PostgresResult(rows: [["x"]])))
        _ = try ledger.receive(.result(PostgresResult(error: .server(sqlState: "23505", message: "duplicate"))))
        _ = try ledger.receive(.result(PostgresResult(rows: [["y"]])))
        _ = try ledger.receive(.endOfStatement)
        guard case .complete(7, .failure(let error)) = try ledger.receive(.sync) else {
            Issue.record("not failed")
            return
        }
        #expect(error == .server(sqlState: "23505", message: "duplicate"))
    }

    @Test func anOrderLibpqDoesNotProduceIsAProtocolViolation() {
        var empty = PipelineLedger<Int>()
        #expect(throws: PostgresError.self) { try empty.receive(.sync) }
        var early = PipelineLedger<Int>()
        early.sent(1)
        #expect(throws: PostgresError.self) { try early.receive(.sync) }
        var twice = PipelineLedger<Int>()
        twice.sent(1)
        _ = try? twice.receive(.endOfStatement)
        #expect(throws: PostgresError.self) { try twice.receive(.endOfStatement) }
    }

    @Test func drainReturnsWhatIsPendingInOrder() throws {
        var ledger = PipelineLedger<Int>()
        for token in 0..<200 { ledger.sent(token) }
        for _ in 0..<100 {
            _ = try ledger.receive(.result(PostgresResult()))
            _ = try ledger.receive(.endOfStatement)
            _ = try ledger.receive(.sync)
        }
        #expect(ledger.drain() == Array(100..<200))
        #expect(ledger.count == 0)
    }

    private static func token(_ completion: PipelineLedger<Int>.Completion) -> Int? {
        if case .complete(let token, _) = completion { return token }
        return nil
    }
}
