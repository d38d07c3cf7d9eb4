/// How much TLS handshake work one loop turn may do (issue #32). Pure: the server's
/// TLS room measures each step on its clock and asks. Event by event in
/// `HandshakePacerTests`.
///
/// Why: a handshake step is the daemon's most expensive piece of pre-auth work (a key
/// exchange and a signature: about 0.1–0.4 ms), and libuv serves every socket that is
/// ready in one poll. A burst of ClientHellos — 1,000 clients reconnecting after a
/// network blip, or 1,000 that never finish — would then hold every established client's
/// request for the whole burst (measured: a ping waited 395 ms behind 1,000 in a debug
/// build). So:
/// 1. **A turn spends at most ``budgetNanoseconds`` on handshake steps.** Past it, a
///    connection's ClientHello is only buffered (and counted against its byte budget),
///    and the connection waits in line.
/// 2. **The line is first in, first out, each connection once**, and the next turns
///    serve it before new arrivals (the prepare hook runs before the poll).
/// 3. **The loop does not sleep while the line is not empty** (the room's idle handle).
///
/// Not guaranteed: a single step longer than the budget still runs whole (a step is
/// never cut); the budget bounds the work *started* in a turn.
struct HandshakePacer {
    /// Handshake work allowed per loop turn.
    let budgetNanoseconds: UInt64
    private(set) var spentThisTurn: UInt64 = 0
    /// Connection IDs waiting for a step, in arrival order from `head` on.
    private var line: [Int] = []
    private var head = 0
    private var waiting: Set<Int> = []

    init(budgetNanoseconds: UInt64) {
        self.budgetNanoseconds = budgetNanoseconds
    }

    /// Whether connections wait for a step (the loop must not sleep: rule 3).
    var hasWaiting: Bool { !waiting.isEmpty }
    var waitingCount: Int { waiting.count }

    /// A new loop turn: the budget is whole again.
    mutating func turnStarted() {
        spentThisTurn = 0
    }

    /// Whether a step may run now: budget left, and nobody waiting ahead (rule 2) —
    /// unless `id` is the one being served from the line.
    func mayStep(_ id: Int) -> Bool {
        spentThisTurn < budgetNanoseconds && (waiting.isEmpty || waiting.contains(id))
    }

    /// A step ran for `nanoseconds`.
    mutating func stepped(nanoseconds: UInt64) {
        spentThisTurn &+= nanoseconds
    }

    /// `id`'s step must wait (rule 1). A connection already in line keeps its place.
    mutating func wait(_ id: Int) {
        guard waiting.insert(id).inserted else { return }
        line.append(id)
    }

    /// The next connection to step this turn, or `nil` when the budget is spent or the
    /// line is empty. The caller steps it (it may have gone meanwhile: then it skips it).
    mutating func next() -> Int? {
        guard spentThisTurn < budgetNanoseconds, head < line.count else { return nil }
        let id = line[head]
        head += 1
        waiting.remove(id)
        if head == line.count || head > 1_024 {
            // Drop the served prefix now and then, so the line does not grow forever.
            line.removeFirst(head)
            head = 0
        }
        return id
    }
}
