import Foundation
import Testing

@testable import Network

/// The stand-in's receive and send bookkeeping, event by event, without a socket.
@Suite(.timeLimit(.minutes(1))) struct StreamBuffersTests {
    private func append(_ text: String, to buffer: inout ReceiveBuffer) {
        Array(text.utf8).withUnsafeBytes { buffer.append($0) }
    }

    private func text(_ completion: ReceiveBuffer.Completion?) -> String? {
        completion?.data.map { String(decoding: $0, as: UTF8.self) }
    }

    @Test func receivesCompleteInOrderAtTheirMinimumAndNoMoreThanTheirMaximum() {
        var buffer = ReceiveBuffer()
        buffer.enqueue(.init(minimum: 3, maximum: 4, ticket: 1))
        buffer.enqueue(.init(minimum: 1, maximum: 100, ticket: 2))
        append("ab", to: &buffer)
        #expect(buffer.nextCompletion() == nil, "2 bytes are below the first receive's minimum of 3")
        append("cdef", to: &buffer)
        let first = buffer.nextCompletion()
        #expect(first?.ticket == 1 && text(first) == "abcd" && first?.isComplete == false)
        let second = buffer.nextCompletion()
        #expect(second?.ticket == 2 && text(second) == "ef")
        #expect(buffer.nextCompletion() == nil)
    }

    @Test func endOfStreamHandsOverWhatIsLeftBelowTheMinimumThenCompletesEmpty() {
        var buffer = ReceiveBuffer()
        append("xyz", to: &buffer)
        buffer.enqueue(.init(minimum: 10, maximum: 2, ticket: 1))
        buffer.enqueue(.init(minimum: 10, maximum: 100, ticket: 2))
        buffer.enqueue(.init(minimum: 1, maximum: 100, ticket: 3))
        #expect(buffer.nextCompletion() == nil)
        buffer.markEndOfStream()
        let first = buffer.nextCompletion()
        #expect(text(first) == "xy" && first?.isComplete == false, "a byte is still buffered")
        let second = buffer.nextCompletion()
        #expect(text(second) == "z" && second?.isComplete == true, "the last byte comes with isComplete")
        let third = buffer.nextCompletion()
        #expect(third == ReceiveBuffer.Completion(ticket: 3, data: nil, isComplete: true))
    }

    @Test func drainingReturnsEveryWaitingReceive() {
        var buffer = ReceiveBuffer()
        buffer.enqueue(.init(minimum: 1, maximum: 1, ticket: 7))
        buffer.enqueue(.init(minimum: 1, maximum: 1, ticket: 8))
        #expect(buffer.drainRequests().map(\.ticket) == [7, 8])
        #expect(!buffer.hasPendingRequests)
    }

    @Test func sendsCompleteInCallOrderWhenTheirLastByteIsWritten() {
        var queue = SendQueue()
        queue.enqueue(.init(bytes: Array("abc".utf8), ticket: 1, closesWriteSide: false))
        queue.enqueue(.init(bytes: Array("de".utf8), ticket: 2, closesWriteSide: true))
        #expect(queue.head.map(Array.init) == Array("abc".utf8))
        #expect(queue.wrote(2) == nil, "1 byte of the first send is still unwritten")
        #expect(queue.head.map(Array.init) == Array("c".utf8))
        #expect(queue.wrote(1)?.ticket == 1)
        let last = queue.wrote(2)
        #expect(last?.ticket == 2 && last?.closesWriteSide == true)
        #expect(queue.isEmpty)
    }
}

/// The stand-in's lifecycle, event by event (Apple's documented state order).
@Suite(.timeLimit(.minutes(1))) struct NWConnectionStateMachineTests {
    private func reports(_ actions: [NWConnectionStateMachine.Action]) -> [String] {
        actions.compactMap { if case .report(let state) = $0 { describe(state) } else { nil } }
    }

    @Test func setupPreparingReadyCancelled() {
        var machine = NWConnectionStateMachine()
        #expect(reports(machine.start(usesTLS: false)) == ["preparing"])
        #expect(!machine.isReady)
        #expect(reports(machine.connected()) == ["ready"])
        #expect(machine.isReady)
        #expect(reports(machine.cancel()) == ["cancelled"])
        #expect(machine.cancel().isEmpty, "nothing follows cancelled")
        #expect(machine.terminalError == .posix(.ECANCELED))
    }

    @Test func aConnectionThatCannotBeEstablishedWaits() {
        var machine = NWConnectionStateMachine()
        _ = machine.start(usesTLS: false)
        #expect(reports(machine.connectFailed(.posix(.ECONNREFUSED))) == ["waiting(\(posix(.ECONNREFUSED)))"])
        #expect(machine.terminalError == nil, "waiting is not fatal: queued operations stay queued")
        #expect(reports(machine.cancel()) == ["cancelled"])
    }

    @Test func anEstablishedConnectionThatBreaksFailsOnceAndIsCancelledAfter() {
        var machine = NWConnectionStateMachine()
        _ = machine.start(usesTLS: false)
        _ = machine.connected()
        let actions = machine.ioFailed(.posix(.ECONNRESET))
        #expect(reports(actions) == ["failed(\(posix(.ECONNRESET)))"])
        #expect(actions.contains { if case .failPendingOperations = $0 { true } else { false } })
        #expect(machine.ioFailed(.posix(.EPIPE)).isEmpty, "a second failure is not reported")
        #expect(reports(machine.cancel()) == ["cancelled"])
    }

    @Test func tlsParametersFailAtStartWithADocumentedError() {
        var machine = NWConnectionStateMachine()
        #expect(reports(machine.start(usesTLS: true)) == ["preparing", "failed(tls.-4)"])
        #expect(machine.start(usesTLS: true).isEmpty, "a second start is ignored")
    }

    @Test func aCancelThatWinsTheRaceAgainstTheConnectLeavesNothingToDo() {
        var machine = NWConnectionStateMachine()
        _ = machine.start(usesTLS: false)
        _ = machine.cancel()
        #expect(machine.connected().isEmpty)
        #expect(machine.connectFailed(.posix(.ECONNREFUSED)).isEmpty)
    }
}
