/// The end of the turn's timing decisions (issue #20's sliced flush and seal pacing), as
/// a pure machine: given the dirty lists, the last flush's state, the budgets and `now`,
/// it answers what to seal, where to stop a flush's slice, and whether to keep the idle
/// handle on. It never reads a clock: the ``Outbox`` reads its injected clock and passes
/// the time in (issue #30: the pacing read `ContinuousClock` inline in four places).
///
/// ```
///            flushEnded(written < total, outermost)
///   finished ─────────────────────────────────────▶ unfinished
///      ▲                                                │
///      └───────── flushEnded(written == total, outermost)┘
/// ```
///
/// Rules, each with its reason:
/// 1. **Seal at once unless a fan-out is under way.** While the last outermost flush
///    stopped at its slice (state `unfinished`), a dirty list waits up to `sealWait`
///    after its first mutation arrived: each batch costs a queue step per subscriber and
///    a frame for every receiver, so a few larger batches per sweep keep the latency at
///    about one sweep. Nothing waits once the flush has finished, and `force` (a
///    shutdown) seals everything.
/// 2. **A slice ends at its budget**, checked every ``checkEvery`` connections: a write
///    call costs µs, a clock read tens of ns. Budget 0, or an unsliced flush (shutdown),
///    writes everything.
/// 3. **The idle handle stays on while anything waits** — connections left by a slice or
///    lists held by rule 1 — so the next poll does not sleep; never after a storage
///    failure (nothing leaves any more).
/// 4. Only the **outermost** flush changes the state: a flush entered again from a
///    callback it caused sees part of the turn only.
///
/// Not guaranteed: a slice may overrun its budget by up to ``checkEvery`` write calls
/// (or one ring submission), and a held list is sealed at the first end of turn after
/// its wait, not at the wait's exact end.
struct FlushPacer {
    /// The budgets, from `[server] flush_slice_us` and `seal_wait_us`.
    struct Budgets: Equatable {
        var sliceNanoseconds: UInt64
        var sealWaitNanoseconds: UInt64

        init(sliceMicroseconds: Int, sealWaitMicroseconds: Int) {
            sliceNanoseconds = UInt64(max(0, sliceMicroseconds)) * 1_000
            sealWaitNanoseconds = UInt64(max(0, sealWaitMicroseconds)) * 1_000
        }
    }

    private enum State {
        /// The last outermost flush wrote every listed connection.
        case finished
        /// It stopped at its slice with connections left: a fan-out is under way.
        case unfinished
    }

    private var state: State = .finished
    var budgets: Budgets

    /// How many connections a sliced flush writes between two reads of the clock.
    static let checkEvery = 16

    init(budgets: Budgets) {
        self.budgets = budgets
    }

    /// Whether the last outermost flush stopped at its slice. Settable for tests that
    /// put a live server in that state.
    var lastFlushUnfinished: Bool {
        get { if case .unfinished = state { return true } else { return false } }
        set { state = newValue ? .unfinished : .finished }
    }

    // MARK: Sealing (rule 1)

    /// Whether sealing needs the time at all: only while pacing (saves a clock read per
    /// turn otherwise).
    func pacesSeals(force: Bool) -> Bool {
        !force && budgets.sealWaitNanoseconds > 0 && lastFlushUnfinished
    }

    /// Whether a dirty list whose oldest mutation arrived at `pendingSince` is held at
    /// `now` (`nil`: the caller does not pace, see ``pacesSeals(force:)``).
    func holds(pendingSince: UInt64?, now: UInt64?) -> Bool {
        guard let now, let since = pendingSince else { return false }
        return now < since || now - since < budgets.sealWaitNanoseconds
    }

    /// The dirty lists split into those to seal now and those held, each in the given
    /// order. `now` is read by the caller only when ``pacesSeals(force:)``.
    func plan<Name>(
        _ dirty: [(name: Name, pendingSince: UInt64?)], now: UInt64?, force: Bool
    ) -> (seal: [Name], hold: [Name]) {
        let now = pacesSeals(force: force) ? now : nil
        var seal: [Name] = []
        var hold: [Name] = []
        for list in dirty {
            if holds(pendingSince: list.pendingSince, now: now) {
                hold.append(list.name)
            } else {
                seal.append(list.name)
            }
        }
        return (seal, hold)
    }

    // MARK: Slicing (rules 2 and 4)

    /// Whether a flush is cut into slices: a `sliced` one (not a shutdown's) with a
    /// budget. Asked before the clock is read.
    func slices(_ sliced: Bool) -> Bool { sliced && budgets.sliceNanoseconds > 0 }

    /// Where a sliced flush starting at `now` stops.
    func sliceDeadline(startingAt now: UInt64) -> UInt64 { now + budgets.sliceNanoseconds }

    /// Whether the clock is read after `written` connections (every ``checkEvery``).
    static func checksClock(after written: Int) -> Bool { written % checkEvery == 0 }

    /// Whether a slice with `deadline` is over at `now`.
    static func sliceIsOver(deadline: UInt64?, now: UInt64) -> Bool {
        guard let deadline else { return false }
        return now >= deadline
    }

    /// A flush wrote `written` of its `total` connections; only the outermost one moves
    /// the state. Returns whether it stopped at its slice.
    @discardableResult
    mutating func flushEnded(written: Int, of total: Int, outermost: Bool) -> Bool {
        precondition(
            written <= total, "Internal inconsistency in FlushPacer: \(written) of \(total) connections written")
        let unfinished = written < total
        if outermost { state = unfinished ? .unfinished : .finished }
        return unfinished
    }

    // MARK: The idle handle (rule 3)

    /// Whether the loop's next poll must not sleep: connections wait for the next
    /// slice, or lists for their seal.
    func keepsIdleOn(queuedConnections: Int, dirtyLists: Int, failed: Bool) -> Bool {
        !failed && (queuedConnections > 0 || dirtyLists > 0)
    }
}
