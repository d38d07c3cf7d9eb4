import FlowSyncCore
import FlowSyncProtocol
import FlowSyncTestSupport
import Testing

@testable import FlowSyncServer

/// The bookkeeping of writes a replica node forwarded to the owner (cluster mode):
/// case by case, then a seeded property test over random interleavings of forwards,
/// answers, replica progress, closes and take-overs.
@Suite(.timeLimit(.minutes(2))) struct ForwardedWritesTests {
    static func mutate(_ list: String, _ client: String, _ seq: UInt64) -> Mutate {
        Mutate(listName: list, clientID: client, seq: seq, base: ListVersion(epoch: 0, version: 0), operations: [])
    }

    static func key(_ m: Mutate) -> ForwardedWrites.Key { .init(list: m.listName, clientID: m.clientID, seq: m.seq) }

    @Test func anAckWaitsForTheReplicaToHoldItsVersionAndARejectDoesNot() {
        var writes = ForwardedWrites()
        let one = Self.mutate("l", "c", 1), two = Self.mutate("l", "c", 2)
        writes.forwarded(one, connection: 7, now: 0)
        writes.forwarded(two, connection: 7, now: 0)
        // Committed at 5 while the replica is at 4: held.
        #expect(
            writes.answered(
                Self.key(one), result: .committed(ListVersion(epoch: 9, version: 5)),
                replica: ListVersion(epoch: 9, version: 4)
            ).isEmpty)
        #expect(writes.heldCount == 1)
        let rejected = writes.answered(
            Self.key(two), result: .rejected(.unknownSection, "no"), replica: ListVersion(epoch: 9, version: 4))
        #expect(
            rejected == [.reject(connection: 7, Reject(listName: "l", seq: 2, code: .unknownSection, message: "no"))])
        #expect(writes.replicaAdvanced("l", to: ListVersion(epoch: 9, version: 4)).isEmpty)
        #expect(
            writes.replicaAdvanced("l", to: ListVersion(epoch: 9, version: 5)) == [
                .ack(connection: 7, Ack(listName: "l", seq: 1, committed: ListVersion(epoch: 9, version: 5)))
            ])
        #expect(writes.isEmpty)
        // An answer nobody waits for (answered already) is ignored.
        #expect(
            writes.answered(Self.key(one), result: .committed(ListVersion(epoch: 9, version: 5)), replica: nil).isEmpty)
    }

    @Test func overdueListsAndTakeAllHandBackTheWritesOldestFirst() {
        var writes = ForwardedWrites()
        writes.forwarded(Self.mutate("a", "c", 2), connection: 1, now: 100)
        writes.forwarded(Self.mutate("a", "c", 1), connection: 1, now: 50)
        writes.forwarded(Self.mutate("b", "d", 1), connection: 2, now: 900)
        #expect(writes.overdue(now: 600, after: 500) == ["a"])
        writes.retried("a", now: 600)
        #expect(writes.overdue(now: 700, after: 500).isEmpty)
        let taken = writes.takeAll(list: "a")
        #expect(taken.resubmit.map(\.mutate.seq) == [1, 2])
        #expect(writes.waiting.count == 1)
        writes.connectionClosed(2)
        #expect(writes.isEmpty)
    }

    /// Random interleavings (6,000 seeds): an Ack never leaves before the replica holds
    /// its version (Diff before Ack), each write is answered at most once, only to the
    /// connection that waits for it, and once the replica catches up every answered
    /// write of an open connection has had exactly one answer.
    @Test func seededInterleavingsKeepDiffBeforeAckAndAnswerEachWriteOnce() {
        for seed in 0..<6_000 {
            var random = SeededRandom(seed: UInt64(seed))
            var writes = ForwardedWrites()
            let lists = ["x", "y"]
            let epoch: UInt64 = 3
            var replica: [String: UInt64] = ["x": 0, "y": 0]
            var committedUpTo: [String: UInt64] = ["x": 0, "y": 0]
            var forwarded: [ForwardedWrites.Key: Int] = [:]  // key → connection
            var answers: [ForwardedWrites.Key: Int] = [:]  // key → answers received
            var owedAck: [ForwardedWrites.Key: UInt64] = [:]  // committed, not yet acked
            var closed: Set<Int> = []
            var nextSeq: UInt64 = 1
            var failure: String?
            func receive(_ out: [ForwardedWrites.Answer]) {
                for answer in out {
                    switch answer {
                    case .ack(let connection, let ack):
                        let key = ForwardedWrites.Key(list: ack.listName, clientID: "c\(connection)", seq: ack.seq)
                        if forwarded[key] != connection || closed.contains(connection) {
                            failure = "ack to the wrong or closed connection"
                        }
                        if ack.committed.version > replica[ack.listName]! {
                            failure = "ack before the replica held version \(ack.committed.version)"
                        }
                        answers[key, default: 0] += 1
                        owedAck[key] = nil
                    case .reject(let connection, let reject):
                        let key = ForwardedWrites.Key(
                            list: reject.listName, clientID: "c\(connection)", seq: reject.seq)
                        if forwarded[key] != connection || closed.contains(connection) {
                            failure = "reject to the wrong or closed connection"
                        }
                        answers[key, default: 0] += 1
                    }
                }
            }
            for step in 0..<60 {
                let list = lists[random.int(0..<2)]
                switch random.int(0..<10) {
                case 0..<3:
                    let connection = random.int(1...4)
                    guard !closed.contains(connection) else { continue }
                    let m = Mutate(
                        listName: list, clientID: "c\(connection)", seq: nextSeq,
                        base: ListVersion(epoch: 0, version: 0), operations: [])
                    nextSeq += 1
                    writes.forwarded(m, connection: connection, now: UInt64(step))
                    forwarded[Self.key(m)] = connection
                case 3..<6:
                    // The owner answers a random waiting write of this list.
                    guard
                        let (key, _) = writes.waiting.filter({ $0.key.list == list }).min(by: {
                            $0.key.seq < $1.key.seq
                        })
                    else { continue }
                    if random.chance(0.2) {
                        receive(
                            writes.answered(
                                key, result: .rejected(.conflict, "no"),
                                replica: ListVersion(epoch: epoch, version: replica[list]!)))
                    } else {
                        committedUpTo[list]! += UInt64(random.int(1...2))
                        let version = committedUpTo[list]!
                        if !closed.contains(forwarded[key]!) { owedAck[key] = version }
                        receive(
                            writes.answered(
                                key, result: .committed(ListVersion(epoch: epoch, version: version)),
                                replica: ListVersion(epoch: epoch, version: replica[list]!)))
                    }
                case 6..<9:
                    // The replica advances, never past what committed.
                    let target = min(committedUpTo[list]!, replica[list]! + UInt64(random.int(0...2)))
                    replica[list] = target
                    receive(writes.replicaAdvanced(list, to: ListVersion(epoch: epoch, version: target)))
                default:
                    let connection = random.int(1...4)
                    closed.insert(connection)
                    writes.connectionClosed(connection)
                    owedAck = owedAck.filter { forwarded[$0.key] != connection }
                }
                if failure != nil { break }
            }
            // The replica catches up: every owed Ack leaves, once.
            for list in lists {
                replica[list] = committedUpTo[list]!
                receive(writes.replicaAdvanced(list, to: ListVersion(epoch: epoch, version: committedUpTo[list]!)))
            }
            if failure == nil, !owedAck.isEmpty { failure = "acks never sent: \(owedAck)" }
            if failure == nil, let twice = answers.first(where: { $0.value > 1 }) {
                failure = "answered twice: \(twice.key)"
            }
            #expect(failure == nil, "seed \(seed): \(failure ?? "")")
            if failure != nil { return }
        }
    }
}
