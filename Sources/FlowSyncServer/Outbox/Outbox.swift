import FlowSyncLoop
import FlowSyncRing

/// The end of the turn's room (issue #30): the connections with frames to write this
/// turn, the rule that keeps them alive while a flush walks them, the write route
/// (libuv, or io_uring: `Outbox+Ring.swift`), the dirty lists the turn must seal, and the
/// ``FlushPacer`` that times all of it with the injected clock. The server decides what
/// to queue; the outbox decides when and how it leaves. Loop-confined.
///
/// **The lifetime rule** (found as a use after free, e97cf55). ``queued`` holds its
/// connections *unretained* — an array append per connection per turn, no hashing, no
/// reference counting. So:
/// 1. A listed connection is in the server's table, or, once forgotten, in
///    ``retired`` — ``retire(_:)`` is called by `forget` *before* the connection leaves
///    the table, because a flush walking its unretained list reaches `forget` (through
///    `peerEnded`) with no reference of its own, and the table's may be the last one.
/// 2. A connection is retired also while any flush runs (``depth`` > 0): the walk may
///    hold it even after clearing its flag.
/// 3. Only the outermost flush lets retired connections go, after its walk, and only
///    those no flush lists any more. After a storage failure no flush runs: the outbox
///    lets them go at once (outside a flush).
///
/// **Order**: a connection is listed once (``Connection/isQueuedForFlush``) and its
/// frames leave in queue order; the connections a slice did not reach go first next
/// turn, ahead of those queued meanwhile.
final class Outbox {
    /// The clock of the pacing (nanoseconds, monotonic): injected, so tests can drive it.
    let clock: () -> UInt64
    var pacer: FlushPacer
    /// This turn's connections with queued frames, each once, unretained (rule 1).
    private(set) var queued: [Unmanaged<Connection>] = []
    /// The previous turn's `queued` storage, kept for the next turn (no allocation).
    private var spare: [Unmanaged<Connection>] = []
    /// Connections forgotten while a flush may still list them (rules 1–3).
    private var retired: [Connection] = []
    /// Flushes running (one may be entered again from a callback it causes).
    private(set) var depth = 0
    /// Lists with mutations queued this turn, sealed in the check hook (or held by the
    /// pacer). Names only: a list that left the registry meanwhile is skipped.
    var dirtyLists: Set<String> = []
    /// Active while a slice left connections or the pacer held lists: the loop's next
    /// poll does not sleep (rule 3 of ``FlushPacer``).
    var idle: LoopIdle?

    // MARK: The write route (Outbox+Ring.swift)

    /// The io_uring of the flush (`[server] write_path`); `nil`: libuv writes everything.
    var ring: SendRing?
    /// The ring's size (sends, buffers per submission); tests ask for more than the
    /// kernel allows (`EINVAL`) to see the fallback to libuv.
    var ringSize = (sends: Outbox.ringSends, buffers: Outbox.ringBuffers)
    /// This turn's sends in the ring, by completion tag; storage kept between turns.
    var ringBatch: [RingFlushEntry] = []
    /// This turn's connections written through libuv after the ring's sends.
    var libuvRoute: [Connection] = []

    init(budgets: FlushPacer.Budgets, clock: @escaping () -> UInt64) {
        self.pacer = FlushPacer(budgets: budgets)
        self.clock = clock
    }

    /// Lists the connection for this turn's flush, once.
    @inline(__always)
    func add(_ connection: Connection) {
        guard !connection.isQueuedForFlush else { return }
        connection.isQueuedForFlush = true
        queued.append(.passUnretained(connection))
    }

    /// The connection leaves the server's table: kept alive while a flush may list it
    /// (rules 1 and 2). Call *before* removing it from the table.
    func retire(_ connection: Connection) {
        if connection.isQueuedForFlush || depth > 0 { retired.append(connection) }
    }

    /// A storage failure: nothing is written any more. Inside a flush the retired
    /// connections stay until it ends (its walk may still use one of them).
    func discardAll() {
        for connection in queued { connection._withUnsafeGuaranteedRef { $0.isQueuedForFlush = false } }
        queued.removeAll()
        if depth == 0 { retired.removeAll() }
    }

    /// Whether the idle handle must stay on after this turn (``FlushPacer``, rule 3).
    func keepsIdleOn(failed: Bool) -> Bool {
        pacer.keepsIdleOn(queuedConnections: queued.count, dirtyLists: dirtyLists.count, failed: failed)
    }

    /// What one flush did, for the server's statistics.
    struct FlushReport {
        /// It stopped at its slice with connections left.
        var sliced = false
        /// It was the outermost flush (its frames counters are final).
        var outermost = false
        var ringSubmissions = 0
        var ringSends = 0
        var ringRemaindersToLibuv = 0
    }

    /// Writes the listed connections once each, in order, through the route, for at
    /// most a slice when `sliced` (``FlushPacer``, rule 2); `finish` is called once per
    /// connection written with its frames, bytes and error (it may end the connection,
    /// and may flush again: the rules above hold). `now` is the loop time the
    /// connections' write deadlines count from.
    func flush(now: UInt64, sliced: Bool, finish: (Connection, Int, Int, UVError?) -> Void) -> FlushReport {
        // This turn's list, swapped with last turn's emptied storage: frames queued
        // while it is written (a callback's) go to the fresh `queued`.
        var walking = spare
        spare = []
        swap(&walking, &queued)
        depth += 1
        var report = FlushReport()
        let deadline = pacer.slices(sliced) ? pacer.sliceDeadline(startingAt: clock()) : nil
        var written = 0
        if let ring {
            // The ring's rules hold per call (every send collected before it returns),
            // so a slice ends between two calls of `ringSlice` connections each.
            while written < walking.count {
                let upTo = deadline == nil ? walking.count : min(walking.count, written + Self.ringSlice)
                flushThroughRing(walking[written..<upTo], ring: ring, now: now, report: &report, finish: finish)
                written = upTo
                if deadline != nil, FlushPacer.sliceIsOver(deadline: deadline, now: clock()) { break }
            }
        } else {
            while written < walking.count {
                walking[written]._withUnsafeGuaranteedRef { connection in
                    connection.isQueuedForFlush = false
                    guard !connection.isForgotten else { return }
                    let frames = connection.outbound.frames.count
                    let bytes = connection.outbound.bytes
                    finish(connection, frames, bytes, connection.flush(now: now))
                }
                written += 1
                if deadline != nil, FlushPacer.checksClock(after: written),
                    FlushPacer.sliceIsOver(deadline: deadline, now: clock())
                {
                    break
                }
            }
        }
        depth -= 1
        report.outermost = depth == 0
        report.sliced = pacer.flushEnded(written: written, of: walking.count, outermost: report.outermost)
        if report.sliced {
            // The rest goes first next turn, ahead of what was queued during this walk
            // (no connection is in both: a listed one is not listed again).
            walking.removeSubrange(..<written)
            walking.append(contentsOf: queued)
            queued.removeAll(keepingCapacity: true)
            swap(&walking, &queued)
        }
        walking.removeAll(keepingCapacity: true)
        if spare.capacity < walking.capacity { spare = walking }
        if report.outermost, !retired.isEmpty { retired.removeAll { !$0.isQueuedForFlush } }
        return report
    }

    /// How many connections a sliced flush through io_uring submits in one call
    /// (about 0.2 ms of sends at 3.5 µs each): the slice is checked between calls.
    static let ringSlice = 64
}
