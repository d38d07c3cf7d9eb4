/// The limits of the gateway's pool of daemon links (`[limits]` in
/// config/flowsync-gateway.toml; docs/GATEWAY.md, "How it reaches the daemon").
public struct LinkPoolLimits: Hashable, Sendable {
    /// Links held for one credential (one bearer token, or none), busy or idle
    /// (default 32). Past it a request waits for one of them.
    public var maxPerCredential: Int
    /// Links held over all credentials (default 256). Past it an idle link of another
    /// credential is closed to make room, or the request waits.
    public var maxTotal: Int
    /// An idle link is closed after this long unused (default 30 s).
    public var idleMilliseconds: Int

    /// Values are checked by ``GatewayLimits/validate()`` (the flags' ranges), and the
    /// machine refuses one below 1 when it is made.
    public init(maxPerCredential: Int = 32, maxTotal: Int = 256, idleMilliseconds: Int = 30_000) {
        self.maxPerCredential = maxPerCredential
        self.maxTotal = maxTotal
        self.idleMilliseconds = idleMilliseconds
    }
}

/// Who gets which daemon link: the gateway's pool of ready protocol connections, keyed by
/// the credential a request passes through (its bearer token, or none), as a pure machine.
/// It knows links only as values and requests only by number; the shell
/// (`DaemonLinkPool`) opens, closes and hands over links as told, and reads the clock.
///
/// The rules:
/// 1. A link serves one request at a time, and only requests of the credential it was
///    opened with: the daemon bound the token to the connection at its Hello, so a link
///    of one caller must never carry another's request.
/// 2. A checkout takes the most recently used idle link of its credential (LIFO: the
///    others stay idle and expire, so the pool shrinks back after a burst). With none it
///    opens a new link if both limits allow; at the total limit it first closes the
///    least recently used idle link of another credential; otherwise it waits.
/// 3. Every link counts against both limits from the moment it is asked to be opened
///    until it is dropped, so the limits hold while handshakes are in flight.
/// 4. A link checked in after a failure (closed, timed out, protocol fault: anything
///    after which its state is not known) is closed and never reused. A link that closes
///    while idle is forgotten at once (``linkClosed(_:)``).
/// 5. A checked-in link goes first to the oldest waiter of its credential; waiters of
///    other credentials are admitted when a slot frees (a link dropped, an open failed,
///    an idle link that can be closed to make room), oldest first among those that fit.
/// 6. A waiter whose deadline passes (``waitExpired(_:)``) fails; an idle link unused for
///    `idleMilliseconds` is closed at the next ``expireIdle(now:)``.
/// 7. After ``shutDown()`` nothing is opened or kept: idle links close, waiters fail,
///    and links checked in afterwards close.
///
/// Not guaranteed: fairness between credentials beyond rule 5's oldest-first, and any
/// order among waiters of one credential other than arrival.
///
/// - Complexity: each event is O(links + waiters) (a scan; both are bounded by the limits
///   and by the gateway's HTTP connection limit).
public struct LinkPoolStateMachine<Credential: Hashable, Link> {
    /// A link's number in the pool, given when the machine asks for it to be opened.
    public typealias LinkID = Int
    /// A request's number, chosen by the shell (unique among its live requests).
    public typealias RequestID = Int

    /// What the shell must do. Several may come from one event; carry them out in order.
    public enum Action {
        /// Give `request` the idle link `link` (number `id`); check it in when done.
        case use(request: RequestID, id: LinkID, link: Link)
        /// Open a link for `request`'s credential, numbered `id`, and give it to
        /// `request`; answer ``opened(_:)`` or ``openFailed(_:)``.
        case open(request: RequestID, id: LinkID)
        /// Close this link (it is no longer in the pool).
        case close(Link)
        /// `request` gets no link: its deadline passed, or the pool shut down.
        case fail(request: RequestID)
    }

    /// How a request ended with its link.
    public enum Outcome: Equatable, Sendable {
        /// Answered as the protocol expects and nothing of it is still in flight: reusable.
        case clean
        /// Anything else (rule 4): the link is closed.
        case failed
    }

    private enum Phase {
        /// Asked to be opened for this request; no link yet.
        case opening(RequestID)
        /// Serving this request; the shell holds the link.
        case busy(RequestID)
        /// Ready and unused since `since` (ms).
        case idle(Link, since: UInt64)
    }

    private struct Entry {
        let credential: Credential
        var phase: Phase
    }

    private struct Waiter {
        let request: RequestID
        let credential: Credential
    }

    private enum State {
        case running
        case shutDown
    }

    public let limits: LinkPoolLimits
    private var state = State.running
    private var entries: [LinkID: Entry] = [:]
    /// Oldest first.
    private var waiters: [Waiter] = []
    private var nextID: LinkID = 1

    public init(limits: LinkPoolLimits = LinkPoolLimits()) {
        precondition(
            limits.maxPerCredential >= 1 && limits.maxTotal >= 1 && limits.idleMilliseconds >= 1,
            "Internal inconsistency in LinkPoolStateMachine: a limit below 1 (GatewayLimits.validate() not called)")
        self.limits = limits
    }

    // MARK: Counters (for tests, metrics and invariants)

    /// Links held (opening, busy or idle).
    public var linkCount: Int { entries.count }
    /// Idle links.
    public var idleCount: Int {
        entries.values.count { if case .idle = $0.phase { return true } else { return false } }
    }
    /// Requests waiting for a link.
    public var waiterCount: Int { waiters.count }
    /// Links held for `credential`.
    public func linkCount(for credential: Credential) -> Int {
        entries.values.count { $0.credential == credential }
    }

    // MARK: Events

    /// `request` wants a link for `credential` at `now` (ms). An empty answer: it waits
    /// (the shell starts its deadline and answers ``waitExpired(_:)`` when it passes).
    public mutating func checkout(request: RequestID, credential: Credential, now: UInt64) -> [Action] {
        guard case .running = state else { return [.fail(request: request)] }
        precondition(
            !waiters.contains { $0.request == request },
            "Internal inconsistency in LinkPoolStateMachine: request \(request) checked out twice")
        if let actions = grant(Waiter(request: request, credential: credential)) { return actions }
        waiters.append(Waiter(request: request, credential: credential))
        return []
    }

    /// The link numbered `id` is ready and now serves the request it was opened for.
    public mutating func opened(_ id: LinkID) {
        guard let entry = entries[id], case .opening(let request) = entry.phase else {
            preconditionFailure("Internal inconsistency in LinkPoolStateMachine: link \(id) opened but not opening")
        }
        entries[id]?.phase = .busy(request)
    }

    /// The link numbered `id` could not be opened: its slot frees (its request fails on
    /// its own; the daemon's answer is the shell's to report).
    public mutating func openFailed(_ id: LinkID) -> [Action] {
        guard let entry = entries[id], case .opening = entry.phase else {
            preconditionFailure(
                "Internal inconsistency in LinkPoolStateMachine: link \(id) failed to open but not opening")
        }
        entries[id] = nil
        return admitWaiters()
    }

    /// The request that held link `id` is done with it, at `now` (ms).
    public mutating func checkin(_ id: LinkID, link: Link, outcome: Outcome, now: UInt64) -> [Action] {
        guard let entry = entries[id], case .busy = entry.phase else {
            preconditionFailure("Internal inconsistency in LinkPoolStateMachine: link \(id) checked in but not busy")
        }
        guard case .running = state, outcome == .clean else {
            entries[id] = nil  // rule 4, rule 7
            return [.close(link)] + admitWaiters()
        }
        // Rule 5: the oldest waiter of this credential takes it as it is.
        if let index = waiters.firstIndex(where: { $0.credential == entry.credential }) {
            let waiter = waiters.remove(at: index)
            entries[id]?.phase = .busy(waiter.request)
            return [.use(request: waiter.request, id: id, link: link)]
        }
        entries[id]?.phase = .idle(link, since: now)
        // Waiters of other credentials blocked by the total may take its place.
        return admitWaiters()
    }

    /// Link `id` closed on its own (the daemon went away). An idle link is forgotten
    /// now; a busy or opening one is left to its request, which checks it in as failed.
    /// Unknown numbers are ignored (already dropped).
    public mutating func linkClosed(_ id: LinkID) -> [Action] {
        guard let entry = entries[id], case .idle(let link, _) = entry.phase else { return [] }
        entries[id] = nil
        return [.close(link)] + admitWaiters()
    }

    /// `request`'s wait ended: it fails if it still waits (it may have been served).
    public mutating func waitExpired(_ request: RequestID) -> [Action] {
        guard let index = waiters.firstIndex(where: { $0.request == request }) else { return [] }
        waiters.remove(at: index)
        return [.fail(request: request)]
    }

    /// Closes the links idle for `idleMilliseconds` or longer at `now` (rule 6).
    public mutating func expireIdle(now: UInt64) -> [Action] {
        var actions: [Action] = []
        for (id, entry) in entries {
            guard case .idle(let link, let since) = entry.phase, now >= since &+ UInt64(limits.idleMilliseconds) else {
                continue
            }
            entries[id] = nil
            actions.append(.close(link))
        }
        return actions
    }

    /// Rule 7: the gateway stops.
    public mutating func shutDown() -> [Action] {
        state = .shutDown
        var actions: [Action] = waiters.map { .fail(request: $0.request) }
        waiters = []
        for (id, entry) in entries {
            if case .idle(let link, _) = entry.phase {
                entries[id] = nil
                actions.append(.close(link))
            }
        }
        return actions
    }

    // MARK: Rules 2 and 5

    /// A link for `waiter` now, or nil if it must wait.
    private mutating func grant(_ waiter: Waiter) -> [Action]? {
        // Rule 2: the most recently used idle link of its credential.
        var best: (id: LinkID, link: Link, since: UInt64)?
        var own = 0
        for (id, entry) in entries where entry.credential == waiter.credential {
            own += 1
            if case .idle(let link, let since) = entry.phase,
                best.map({ since > $0.since || (since == $0.since && id > $0.id) }) ?? true
            {
                best = (id, link, since)
            }
        }
        if let best {
            entries[best.id]?.phase = .busy(waiter.request)
            return [.use(request: waiter.request, id: best.id, link: best.link)]
        }
        guard own < limits.maxPerCredential else { return nil }
        var actions: [Action] = []
        if entries.count >= limits.maxTotal {
            // Make room: the least recently used idle link of another credential.
            var victim: (id: LinkID, link: Link, since: UInt64)?
            for (id, entry) in entries {
                if case .idle(let link, let since) = entry.phase,
                    victim.map({ since < $0.since || (since == $0.since && id < $0.id) }) ?? true
                {
                    victim = (id, link, since)
                }
            }
            guard let victim else { return nil }
            entries[victim.id] = nil
            actions.append(.close(victim.link))
        }
        let id = nextID
        nextID += 1
        entries[id] = Entry(credential: waiter.credential, phase: .opening(waiter.request))
        actions.append(.open(request: waiter.request, id: id))
        return actions
    }

    /// Admits the waiters that fit now, oldest first (rule 5).
    private mutating func admitWaiters() -> [Action] {
        guard case .running = state else { return [] }
        var actions: [Action] = []
        var index = 0
        while index < waiters.count {
            if let granted = grant(waiters[index]) {
                waiters.remove(at: index)
                actions += granted
            } else {
                index += 1
            }
        }
        return actions
    }

    #if DEBUG
    /// Traps if the limits or the phases are inconsistent (tests call it after each event).
    public func checkInvariants() {
        precondition(entries.count <= limits.maxTotal, "Internal inconsistency in LinkPoolStateMachine: over the total")
        var perCredential: [Credential: Int] = [:]
        var busy = Set<RequestID>()
        for entry in entries.values {
            perCredential[entry.credential, default: 0] += 1
            switch entry.phase {
            case .opening(let request), .busy(let request):
                precondition(
                    busy.insert(request).inserted,
                    "Internal inconsistency in LinkPoolStateMachine: a request holds two links")
            case .idle:
                precondition(
                    !waiters.contains { $0.credential == entry.credential },
                    "Internal inconsistency in LinkPoolStateMachine: an idle link beside a waiter of its credential")
            }
        }
        precondition(
            perCredential.values.allSatisfy { $0 <= limits.maxPerCredential },
            "Internal inconsistency in LinkPoolStateMachine: over the per-credential limit")
        precondition(
            waiters.allSatisfy { !busy.contains($0.request) },
            "Internal inconsistency in LinkPoolStateMachine: a waiter holds a link")
    }
    #endif
}
