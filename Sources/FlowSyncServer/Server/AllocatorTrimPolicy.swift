/// When the daemon hands the allocator's free pages back to the system after a burst of
/// TLS handshakes (issue #32). Pure: the sweep asks it with the clock and the counts,
/// and the shell (`Server+TLS.swift`) calls `malloc_trim`. Event by event in
/// `AllocatorTrimPolicyTests`.
///
/// Why: a handshake's transient allocations (key exchange, certificate flight, record
/// buffers) interleave on the heap with the long-lived sessions of the connections that
/// stay. After a burst — a thousand clients reconnecting at once — glibc keeps the freed
/// holes between them, and the daemon's RSS per idle TLS connection was 27–39 KB where
/// the sessions themselves keep about 17 KB (docs/BENCHMARKS.md, "Memory per idle TLS
/// connection"). `malloc_trim(0)` returns the whole free pages of every arena. So:
/// 1. **Only after a burst:** at least ``minimumHandshakes`` handshakes ended (completed
///    or failed) since the last trim. A trickle of reconnects never trims.
/// 2. **Only once the burst is over:** no connection waits in the handshake pacer's line.
/// 3. **At most once per ``minimumIntervalMilliseconds``**, because a trim walks the
///    heap on the loop thread (its duration is logged).
///
/// Not guaranteed: that memory goes back (a hole smaller than a page, or pinned by one
/// live allocation, stays), nor that the figure reaches the 12 KB: OpenSSL's
/// own session is most of it.
struct AllocatorTrimPolicy {
    /// Handshakes that must have ended since the last trim (rule 1).
    let minimumHandshakes: Int
    /// The least time between two trims (rule 3).
    let minimumIntervalMilliseconds: UInt64
    /// The handshakes-ended count at the last trim.
    private var endedAtLastTrim = 0
    private var lastTrimAt: UInt64?

    init(minimumHandshakes: Int = 256, minimumIntervalMilliseconds: UInt64 = 1_000) {
        self.minimumHandshakes = minimumHandshakes
        self.minimumIntervalMilliseconds = minimumIntervalMilliseconds
    }

    /// Whether to trim now. `handshakesEnded` is the daemon's running total of
    /// handshakes completed or failed; `handshakesWaiting`, whether any connection waits
    /// in the pacer's line.
    mutating func shouldTrim(now: UInt64, handshakesEnded: Int, handshakesWaiting: Bool) -> Bool {
        guard handshakesEnded - endedAtLastTrim >= minimumHandshakes else { return false }  // rule 1
        guard !handshakesWaiting else { return false }  // rule 2
        if let lastTrimAt, now < lastTrimAt + minimumIntervalMilliseconds { return false }  // rule 3
        endedAtLastTrim = handshakesEnded
        lastTrimAt = now
        return true
    }
}
