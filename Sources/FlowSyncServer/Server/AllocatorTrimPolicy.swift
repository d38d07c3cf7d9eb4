/// When the daemon hands the allocator's free pages back to the system. Pure: the
/// 100 ms sweep asks it with the clock and two counts, and the shell
/// (`Server+FreedMemory.swift`) calls `malloc_trim`. Event by event in
/// `AllocatorTrimPolicyTests`.
///
/// Why: two kinds of burst leave glibc's heap full of holes that it keeps.
/// - **Handshakes** (issue #32): a TLS handshake's transient allocations (key exchange,
///   certificate flight, record buffers) interleave with the long-lived sessions of the
///   connections that stay. After a thousand clients reconnect at once the RSS per idle
///   TLS connection was 27–39 KB where the sessions keep about 17 KB
///   (docs/BENCHMARKS.md, "Memory per idle TLS connection").
/// - **Queued bytes** (issue #33, item 8): slow consumers make large, short-lived
///   blocks (the part of a write libuv keeps, a catch-up snapshot the size of the list).
///   Once a large `mmap`ed block is freed glibc raises its mmap threshold (up to
///   32 MiB), so later blocks of that size come from the heap, and heap memory freed
///   below the top is not returned: RSS stayed tens of MiB up after the slow consumers
///   had caught up or gone.
///
/// `malloc_trim(0)` returns every whole free page of every arena. The rules:
/// 1. **Only after a burst:** at least ``minimumHandshakes`` handshakes ended (completed
///    or failed) since the last trim, or the bytes queued over all connections reached
///    ``minimumQueuedBytes`` at one sweep since the last trim. A trickle never trims.
/// 2. **Only once the burst is over:** no connection waits in the handshake pacer's
///    line, or the queued bytes fell to a quarter of their high.
/// 3. **At most once per ``minimumIntervalMilliseconds``**, whichever burst asks,
///    because a trim walks the heap on the loop thread (0.1–2.9 ms measured on a
///    5,000-connection heap; its duration is logged).
///
/// Not guaranteed: that memory goes back (a hole smaller than a page, or pinned by one
/// live allocation, stays; a list's history and cached snapshots are in use), nor that
/// the TLS figure reaches issue #32's 12 KB: OpenSSL's own session is most of it.
struct AllocatorTrimPolicy {
    /// Which burst made a trim due (for the log line).
    enum Burst: Equatable, CustomStringConvertible {
        case handshakes(ended: Int)
        case queuedBytes(high: Int)

        var description: String {
            switch self {
            case .handshakes(let ended): "a burst of TLS handshakes (\(ended) ended)"
            case .queuedBytes(let high): "a queue burst (\(high) bytes at its high)"
            }
        }
    }

    /// Handshakes that must have ended since the last trim (rule 1).
    let minimumHandshakes: Int
    /// Bytes queued over all connections at one sweep that make a trim due (rule 1).
    let minimumQueuedBytes: Int
    /// The least time between two trims (rule 3).
    let minimumIntervalMilliseconds: UInt64
    /// The handshakes-ended count at the last trim.
    private var endedAtLastTrim = 0
    /// The most bytes queued at one sweep since the last trim.
    private var queuedHighSinceTrim = 0
    private var lastTrimAt: UInt64?

    init(minimumHandshakes: Int = 256, minimumQueuedBytes: Int = 8 << 20, minimumIntervalMilliseconds: UInt64 = 1_000) {
        self.minimumHandshakes = minimumHandshakes
        self.minimumQueuedBytes = minimumQueuedBytes
        self.minimumIntervalMilliseconds = minimumIntervalMilliseconds
    }

    /// The burst that makes a trim due now, or nil. `handshakesEnded` is the daemon's
    /// running total of handshakes completed or failed (0 without TLS);
    /// `handshakesWaiting`, whether any connection waits in the pacer's line;
    /// `queuedBytes`, the bytes queued over all connections at this sweep.
    mutating func burstToTrim(now: UInt64, handshakesEnded: Int, handshakesWaiting: Bool, queuedBytes: Int) -> Burst? {
        queuedHighSinceTrim = max(queuedHighSinceTrim, queuedBytes)
        let burst: Burst
        if handshakesEnded - endedAtLastTrim >= minimumHandshakes, !handshakesWaiting {  // rules 1, 2
            burst = .handshakes(ended: handshakesEnded - endedAtLastTrim)
        } else if queuedHighSinceTrim >= minimumQueuedBytes, queuedBytes <= queuedHighSinceTrim / 4 {  // rules 1, 2
            burst = .queuedBytes(high: queuedHighSinceTrim)
        } else {
            return nil
        }
        if let lastTrimAt, now < lastTrimAt + minimumIntervalMilliseconds { return nil }  // rule 3
        // A trim serves both: what either burst left is returned at once.
        endedAtLastTrim = handshakesEnded
        queuedHighSinceTrim = queuedBytes
        lastTrimAt = now
        return burst
    }
}
