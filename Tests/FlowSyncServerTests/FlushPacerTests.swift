import FlowSyncTestSupport
import Testing

@testable import FlowSyncServer

/// The end of the turn's timing (issue #30: pacing and slicing, once read inline from
/// `ContinuousClock`), event by event and by a seeded simulation of turns with an
/// injected clock. No server, no socket.
@Suite(.timeLimit(.minutes(2))) struct FlushPacerTests {
    static let budgets = FlushPacer.Budgets(sliceMicroseconds: 1_000, sealWaitMicroseconds: 2_000)

    @Test func aFinishedFlushSealsEverythingAtOnce() {
        let pacer = FlushPacer(budgets: Self.budgets)
        #expect(!pacer.pacesSeals(force: false), "no clock read while nothing is under way")
        let plan = pacer.plan([(name: "a", pendingSince: 10), (name: "b", pendingSince: nil)], now: 11, force: false)
        #expect(plan.seal == ["a", "b"] && plan.hold.isEmpty)
    }

    @Test func anUnfinishedFlushHoldsAListUntilItsWaitThenSealsIt() {
        var pacer = FlushPacer(budgets: Self.budgets)
        let stopped = pacer.flushEnded(written: 3, of: 10, outermost: true)
        #expect(stopped, "stopped at its slice")
        #expect(pacer.lastFlushUnfinished && pacer.pacesSeals(force: false))
        let start: UInt64 = 1_000_000
        let held = pacer.plan([(name: "a", pendingSince: start)], now: start + 1_999_999, force: false)
        #expect(held.hold == ["a"] && held.seal.isEmpty)
        let due = pacer.plan([(name: "a", pendingSince: start)], now: start + 2_000_000, force: false)
        #expect(due.seal == ["a"], "sealed once its wait is over")
        let forced = pacer.plan([(name: "a", pendingSince: start)], now: start, force: true)
        #expect(forced.seal == ["a"] && !pacer.pacesSeals(force: true), "a shutdown never waits")
        let finished = !pacer.flushEnded(written: 7, of: 7, outermost: true)
        #expect(finished)
        #expect(
            !pacer.lastFlushUnfinished
                && pacer.plan([(name: "a", pendingSince: start)], now: start, force: false).seal == ["a"],
            "nothing waits once the flush has finished")
    }

    @Test func onlyTheOutermostFlushMovesTheState() {
        var pacer = FlushPacer(budgets: Self.budgets)
        let inner = pacer.flushEnded(written: 0, of: 1, outermost: false)
        #expect(inner, "an inner flush reports its slice")
        #expect(!pacer.lastFlushUnfinished, "but leaves the state")
        pacer.flushEnded(written: 0, of: 1, outermost: true)
        pacer.flushEnded(written: 2, of: 2, outermost: false)
        #expect(pacer.lastFlushUnfinished)
    }

    @Test func noBudgetsMeanNoPacingAndNoSlices() {
        var pacer = FlushPacer(budgets: .init(sliceMicroseconds: 0, sealWaitMicroseconds: 0))
        pacer.flushEnded(written: 0, of: 4, outermost: true)
        #expect(!pacer.pacesSeals(force: false) && !pacer.slices(true))
        #expect(pacer.plan([(name: 1, pendingSince: 5)], now: 5, force: false).seal == [1])
        let budgeted = FlushPacer(budgets: Self.budgets)
        #expect(budgeted.slices(true) && !budgeted.slices(false), "a shutdown's flush writes everything")
        #expect(budgeted.sliceDeadline(startingAt: 7) == 1_000_007)
    }

    @Test func theIdleHandleStaysOnWhileAnythingWaits() {
        let pacer = FlushPacer(budgets: Self.budgets)
        #expect(!pacer.keepsIdleOn(queuedConnections: 0, dirtyLists: 0, failed: false))
        #expect(pacer.keepsIdleOn(queuedConnections: 1, dirtyLists: 0, failed: false))
        #expect(pacer.keepsIdleOn(queuedConnections: 0, dirtyLists: 1, failed: false))
        #expect(
            !pacer.keepsIdleOn(queuedConnections: 5, dirtyLists: 5, failed: true),
            "nothing leaves after a storage failure")
    }

    @Test func aSliceEndsWithinCheckEveryWritesOfItsDeadline() {
        // Writes of 30 µs each on an injected clock: a 1 ms slice ends at the first
        // check at or past the deadline, never more than `checkEvery` writes late.
        let pacer = FlushPacer(budgets: Self.budgets)
        var clock: UInt64 = 0
        let deadline = pacer.sliceDeadline(startingAt: clock)
        var written = 0
        while written < 1_000 {
            clock += 30_000
            written += 1
            if FlushPacer.checksClock(after: written), FlushPacer.sliceIsOver(deadline: deadline, now: clock) { break }
        }
        #expect(written % FlushPacer.checkEvery == 0 && written >= 34 && written < 34 + FlushPacer.checkEvery)
    }

    /// Turns with random mutations, flush outcomes and gaps on an injected clock: a list
    /// is sealed at once unless the last outermost flush was unfinished, never held past
    /// its wait plus one turn, always sealed by a forced turn; the idle handle is on
    /// exactly while something waits.
    @Test func seededTurnsKeepThePacingRules() {
        let seed = UInt64.random(in: 0...UInt64.max)
        print("FlushPacerTests seed: \(seed)")
        var random = SeededRandom(seed: seed)
        var pacer = FlushPacer(budgets: Self.budgets)
        var clock: UInt64 = 1_000_000
        var dirty: [Int: UInt64] = [:]  // list → pending since
        var queued = 0
        for turn in 0..<20_000 {
            // The poll phase: mutations arrive, time passes.
            let gap = random.next() % 1_500_000
            clock += gap
            for list in 0..<4 where random.next() % 3 == 0 && dirty[list] == nil {
                dirty[list] = clock - random.next() % max(gap, 1)
            }
            let force = random.next() % 500 == 0
            let unfinishedBefore = pacer.lastFlushUnfinished
            let now = pacer.pacesSeals(force: force) ? clock : nil
            let plan = pacer.plan(
                dirty.sorted { $0.key < $1.key }.map { (name: $0.key, pendingSince: $0.value) }, now: now, force: force)
            for list in plan.seal {
                if unfinishedBefore, !force, let since = dirty[list] {
                    #expect(
                        clock - since >= Self.budgets.sealWaitNanoseconds, "seed \(seed), turn \(turn): sealed early")
                }
                dirty[list] = nil
            }
            for list in plan.hold {
                #expect(unfinishedBefore && !force, "seed \(seed), turn \(turn): held without a fan-out under way")
                #expect(
                    clock - dirty[list]! < Self.budgets.sealWaitNanoseconds,
                    "seed \(seed), turn \(turn): held past its wait")
            }
            // The flush: queued connections plus the turn's new ones, a random part written.
            queued += Int(random.next() % 20)
            let written = queued == 0 ? 0 : Int(random.next() % UInt64(queued + 1))
            let sliced = pacer.flushEnded(written: force ? queued : written, of: queued, outermost: true)
            queued = force ? 0 : queued - written
            #expect(sliced == (queued > 0) && pacer.lastFlushUnfinished == (queued > 0))
            #expect(
                pacer.keepsIdleOn(queuedConnections: queued, dirtyLists: dirty.count, failed: false)
                    == (queued > 0 || !dirty.isEmpty))
        }
    }
}
