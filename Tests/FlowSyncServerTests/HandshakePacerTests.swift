import FlowSyncTestSupport
import Testing

@testable import FlowSyncServer

/// The TLS handshake pacer without a socket, event by event, and a seeded run of turns.
@Suite(.timeLimit(.minutes(2))) struct HandshakePacerTests {
    @Test func aTurnSpendsItsBudgetThenConnectionsWait() {
        var pacer = HandshakePacer(budgetNanoseconds: 1_000)
        pacer.turnStarted()
        #expect(pacer.mayStep(1))
        pacer.stepped(nanoseconds: 600)
        #expect(pacer.mayStep(2))
        pacer.stepped(nanoseconds: 600)
        #expect(!pacer.mayStep(3))  // rule 1
        pacer.wait(3)
        pacer.wait(4)
        pacer.wait(3)  // keeps its place
        #expect(pacer.waitingCount == 2 && pacer.hasWaiting)
        #expect(pacer.next() == nil)  // no budget left this turn
        pacer.turnStarted()
        // Rule 2: a new arrival waits behind the line, one in line may step.
        #expect(!pacer.mayStep(5))
        #expect(pacer.mayStep(4))
        #expect(pacer.next() == 3)
        pacer.stepped(nanoseconds: 400)
        #expect(pacer.next() == 4)
        pacer.stepped(nanoseconds: 700)
        #expect(pacer.next() == nil && !pacer.hasWaiting)
        pacer.turnStarted()
        #expect(pacer.mayStep(5))
    }

    @Test func aSeededBurstIsServedInArrivalOrderWithinBudgets() {
        var random = SeededRandom(seed: 32)
        var pacer = HandshakePacer(budgetNanoseconds: 1_000_000)
        var served: [Int] = []
        var arrivals = 0
        var turns = 0
        while served.count < 2_000 {
            turns += 1
            pacer.turnStarted()
            var spent: UInt64 = 0
            while let id = pacer.next() {
                served.append(id)
                let cost = UInt64.random(in: 100_000...400_000, using: &random)
                pacer.stepped(nanoseconds: cost)
                spent += cost
            }
            // New arrivals this turn (a burst at first, then a trickle).
            let count = arrivals < 1_500 ? Int.random(in: 0...300, using: &random) : 5
            for _ in 0..<count where arrivals < 2_000 {
                arrivals += 1
                if pacer.mayStep(arrivals) {
                    served.append(arrivals)
                    let cost = UInt64.random(in: 100_000...400_000, using: &random)
                    pacer.stepped(nanoseconds: cost)
                    spent += cost
                } else {
                    pacer.wait(arrivals)
                }
            }
            // No turn starts a step after its budget is spent: at most one step over it.
            #expect(spent < 1_000_000 + 400_000, "turn \(turns) spent \(spent) ns")
            #expect(turns < 10_000)
        }
        #expect(served == Array(1...2_000), "served out of order (seed 32)")
    }
}
