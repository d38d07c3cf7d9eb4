import FlowSyncCore
import FlowSyncTestSupport
import Testing

@testable import FlowSyncServer

/// The commit gate (asynchronous commits, cluster mode) without a socket: event by
/// event, then a seeded property test over random interleavings.
@Suite(.timeLimit(.minutes(2))) struct CommitGateTests {
    /// A frame as the tests see it: what it is and which batch (ticket) it belongs to.
    struct TestFrame: Equatable, CustomStringConvertible {
        enum Kind: Equatable { case diff, ack, snapshot, other }
        var kind: Kind
        var list: String?
        /// The batch of a Diff or Ack (its ticket's raw value); a snapshot's newest batch.
        var batch: UInt64?
        var serial: Int
        var description: String { "\(kind)(\(list ?? "-"), b\(batch.map(String.init) ?? "-"), #\(serial))" }
    }

    typealias Gate = CommitGate<Int, TestFrame>

    func sent(_ route: Gate.Route) -> TestFrame? {
        if case .sendNow(let frame) = route { return frame }
        return nil
    }

    @Test func idleGateSendsEverythingAtOnce() {
        var gate = Gate()
        #expect(gate.isIdle)
        let frame = TestFrame(kind: .other, list: nil, batch: nil, serial: 1)
        #expect(sent(gate.route(frame, to: 1, about: nil)) == frame)
        #expect(sent(gate.route(frame, to: 1, about: "a")) == frame, "no commit pending for a")
        #expect(gate.isIdle)
    }

    @Test func framesOfAPendingBatchWaitAndLeaveInOrderOnCommit() {
        var gate = Gate()
        let ticket = gate.begin(list: "a")
        #expect(!gate.isIdle && gate.hasPendingCommit(of: "a"))
        let diff = TestFrame(kind: .diff, list: "a", batch: ticket.rawValue, serial: 1)
        let ack = TestFrame(kind: .ack, list: "a", batch: ticket.rawValue, serial: 2)
        let pong = TestFrame(kind: .other, list: nil, batch: nil, serial: 3)
        let otherList = TestFrame(kind: .diff, list: "b", batch: nil, serial: 4)
        #expect(sent(gate.route(diff, to: 1, about: "a")) == nil)
        #expect(sent(gate.route(ack, to: 1, about: "a")) == nil)
        #expect(sent(gate.route(pong, to: 1, about: nil)) == nil, "behind the held frames of its connection")
        #expect(
            sent(gate.route(otherList, to: 2, about: "b")) == otherList, "another connection, another list: not held")
        #expect(gate.heldCount == 3)
        let released = gate.complete(ticket, .committed).released
        #expect(released.count == 1 && released[0].0 == 1 && released[0].1 == [diff, ack, pong])
        #expect(gate.isIdle)
    }

    @Test func aFailedCommitDropsItsFramesAndReleasesTheOnesBehind() {
        var gate = Gate()
        let a = gate.begin(list: "a")
        let b = gate.begin(list: "b")
        let diffA = TestFrame(kind: .diff, list: "a", batch: a.rawValue, serial: 1)
        let diffB = TestFrame(kind: .diff, list: "b", batch: b.rawValue, serial: 2)
        let pong = TestFrame(kind: .other, list: nil, batch: nil, serial: 3)
        _ = gate.route(diffA, to: 1, about: "a")
        _ = gate.route(diffB, to: 1, about: "b")
        _ = gate.route(pong, to: 1, about: nil)
        let failedA = gate.complete(a, .failed)
        #expect(failedA.released.isEmpty, "a dropped, b still pending holds the rest")
        #expect(failedA.dropped == [1], "connection 1 lost a frame")
        let released = gate.complete(b, .committed).released
        #expect(released.count == 1 && released[0].1 == [diffB, pong])
        #expect(gate.isIdle)
    }

    @Test func aSnapshotWaitsForTheNewestPendingCommitOfItsList() {
        var gate = Gate()
        let first = gate.begin(list: "a")
        let second = gate.begin(list: "a")
        let snapshot = TestFrame(kind: .snapshot, list: "a", batch: second.rawValue, serial: 1)
        #expect(sent(gate.route(snapshot, to: 1, about: "a")) == nil)
        #expect(gate.complete(first, .committed).released.isEmpty)
        #expect(gate.complete(second, .committed).released.first?.1 == [snapshot])
    }

    @Test func aForgottenConnectionsFramesAreDropped() {
        var gate = Gate()
        let ticket = gate.begin(list: "a")
        _ = gate.route(TestFrame(kind: .diff, list: "a", batch: 1, serial: 1), to: 1, about: "a")
        gate.forget(1)
        #expect(gate.complete(ticket, .committed).released.isEmpty)
        #expect(gate.isIdle)
    }

    /// Random interleavings of batches on several lists (each batch: a Diff to some
    /// subscribers, then Acks to some writers), snapshots, frames about no list, closed
    /// connections, and completions — in order per list, interleaved across lists, with
    /// failures that fail the rest of their list's pending batches (as a fenced list
    /// does). The oracle: each connection receives exactly the frames whose batch
    /// committed (and every frame about no list), in routing order, never before its
    /// batch committed, a batch's Diff before its Ack.
    @Test func releasedFramesAreExactlyTheCommittedOnesInOrder() async throws {
        let cases = 4_000
        let failures = try await offThePool { () -> [String] in
            var failures: [String] = []
            for seed in 0..<UInt64(cases) {
                if let failure = Self.runCase(seed: seed) {
                    failures.append("seed \(seed): \(failure)")
                    if failures.count >= 5 { break }
                }
            }
            return failures
        }
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
    }

    /// One seeded case; returns a description of the first violation.
    static func runCase(seed: UInt64) -> String? {
        var random = SeededRandom(seed: seed)
        let listNames = (0..<random.int(1...4)).map { "l\($0)" }
        let connectionCount = random.int(1...5)
        var gate = Gate()
        var serial = 0
        // The model.
        var pendingByList: [String: [Gate.Ticket]] = [:]
        var outcome: [UInt64: Bool] = [:]  // ticket → committed
        var routed: [Int: [TestFrame]] = [:]  // every frame routed, per live connection
        var waitsFor: [Int: UInt64] = [:]  // serial → ticket it waits for
        var received: [Int: [TestFrame]] = [:]
        var closed: Set<Int> = []
        var droppedReported: Set<Int> = []

        func deliver(_ frames: [TestFrame], to connection: Int) -> String? {
            for frame in frames {
                if closed.contains(connection) { return "\(frame) released to closed connection \(connection)" }
                if let ticket = waitsFor[frame.serial], outcome[ticket] != true {
                    return "\(frame) released to \(connection) before its batch b\(ticket) committed"
                }
                received[connection, default: []].append(frame)
            }
            return nil
        }
        func route(_ frame: TestFrame, to connection: Int, about list: String?) -> String? {
            guard !closed.contains(connection) else { return nil }
            if let list, let newest = pendingByList[list]?.last { waitsFor[frame.serial] = newest.rawValue }
            routed[connection, default: []].append(frame)
            if case .sendNow(let now) = gate.route(frame, to: connection, about: list) {
                return deliver([now], to: connection)
            }
            return nil
        }
        func complete(_ ticket: Gate.Ticket, committed: Bool) -> String? {
            outcome[ticket.rawValue] = committed
            let completion = gate.complete(ticket, committed ? .committed : .failed)
            for (connection, frames) in completion.released {
                if let failure = deliver(frames, to: connection) { return failure }
            }
            droppedReported.formUnion(completion.dropped)
            return nil
        }
        func completeOldest(of list: String, committed: Bool) -> String? {
            guard var tickets = pendingByList[list], !tickets.isEmpty else { return nil }
            let ticket = tickets.removeFirst()
            pendingByList[list] = tickets.isEmpty ? nil : tickets
            if let failure = complete(ticket, committed: committed) { return failure }
            // A failed batch fails its list's later ones (they build on it).
            if !committed {
                while let next = pendingByList[list]?.first {
                    if let failure = completeOldest(of: list, committed: false) { return failure }
                    _ = next
                }
            }
            return nil
        }

        let steps = random.int(1...60)
        for _ in 0..<steps {
            let roll = random.int(0..<100)
            let list = listNames[random.int(0..<listNames.count)]
            let connection = random.int(0..<connectionCount)
            if roll < 35 {
                let ticket = gate.begin(list: list)
                pendingByList[list, default: []].append(ticket)
                let subscribers = (0..<connectionCount).filter { _ in random.chance(0.6) }
                let writers = (0..<connectionCount).filter { _ in random.chance(0.4) }
                for subscriber in subscribers {
                    serial += 1
                    if let failure = route(
                        TestFrame(kind: .diff, list: list, batch: ticket.rawValue, serial: serial), to: subscriber,
                        about: list)
                    {
                        return failure
                    }
                }
                for writer in writers {
                    serial += 1
                    if let failure = route(
                        TestFrame(kind: .ack, list: list, batch: ticket.rawValue, serial: serial), to: writer,
                        about: list)
                    {
                        return failure
                    }
                }
            } else if roll < 45 {
                serial += 1
                let newest = pendingByList[list]?.last?.rawValue
                if let failure = route(
                    TestFrame(kind: .snapshot, list: list, batch: newest, serial: serial), to: connection, about: list)
                {
                    return failure
                }
            } else if roll < 55 {
                serial += 1
                if let failure = route(
                    TestFrame(kind: .other, list: nil, batch: nil, serial: serial), to: connection, about: nil)
                {
                    return failure
                }
            } else if roll < 58 {
                if !closed.contains(connection) {
                    closed.insert(connection)
                    gate.forget(connection)
                }
            } else {
                if let failure = completeOldest(of: list, committed: !random.chance(0.1)) { return failure }
            }
        }
        for list in listNames {
            while pendingByList[list] != nil {
                if let failure = completeOldest(of: list, committed: true) { return failure }
            }
        }
        guard gate.isIdle, gate.heldCount == 0 else {
            return "gate not idle after every commit completed (\(gate.heldCount) held)"
        }
        for connection in 0..<connectionCount where !closed.contains(connection) {
            let expected = (routed[connection] ?? []).filter { frame in
                guard let ticket = waitsFor[frame.serial] else { return true }
                return outcome[ticket] == true
            }
            let got = received[connection] ?? []
            guard got == expected else { return "connection \(connection) received \(got), expected \(expected)" }
            let lostAny = expected.count < (routed[connection] ?? []).count
            guard lostAny == droppedReported.contains(connection) else {
                return
                    "connection \(connection): lost a frame \(lostAny), reported as dropped \(droppedReported.contains(connection))"
            }
            // Diff before Ack, for every batch this connection got both of.
            for (index, frame) in got.enumerated() where frame.kind == .ack {
                if let diff = got.firstIndex(where: { $0.kind == .diff && $0.batch == frame.batch }), diff > index {
                    return "connection \(connection): \(frame) before its diff"
                }
            }
        }
        return nil
    }
}
