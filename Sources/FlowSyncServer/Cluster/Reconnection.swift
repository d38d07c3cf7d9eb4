/// How a cluster node gets back to PostgreSQL after losing it, however long that takes
/// (issue #33: a node that could not reach PostgreSQL for a lease exited with 74, so a
/// failover longer than the lease restarted every node and every client reconnected at
/// once). Pure: the store (``ClusterStore``) feeds it the failed attempts with the loop
/// time and a random number, and carries out the wait and the log line it returns.
///
/// Rules, each with its reason:
/// 1. **Never give up.** A node without PostgreSQL stops acknowledging writes (its
///    commits wait) but keeps its clients and serves what it has; PostgreSQL coming
///    back is the only way forward, and an exit would only move the wait to systemd and
///    every client.
/// 2. **Back off a little, with jitter.** The first retry comes after 100 ms, then the
///    wait doubles up to 500 ms, each drawn between 3/4 and all of it: many nodes that
///    lost one primary do not knock on the next one in step. The ceiling is short on
///    purpose. Every millisecond between the new primary being up and this node's next
///    attempt is a millisecond its lists stay unwritable, and the writes other nodes
///    forwarded to them wait as well. With a 2 s ceiling, one soak run (issue #33) had a
///    node back 1.3 s after the others, and forwarded writes waited 1.5 s after the
///    promotion. A refused or read-only attempt costs PostgreSQL one short-lived backend,
///    so two attempts a second per node stay cheap for as long as the outage lasts.
/// 3. **Say it once, then rarely.** The loss is logged by the store; the lease running
///    out is logged once (from then on other nodes may claim this node's lists); after
///    that a line every 10 s.
///
/// Not guaranteed: that the lists are still this node's when it is back — a node that
/// reached PostgreSQL meanwhile may have claimed them; each append's fence says so.
struct Reconnection: Equatable {
    /// What the store logs after a failed attempt.
    enum Report: Equatable {
        case none
        /// The outage just outlasted the lease.
        case leaseLapsed(milliseconds: UInt64)
        /// Still unreachable, `milliseconds` after the loss.
        case stillUnreachable(milliseconds: UInt64)
    }

    /// The first retry's wait and the longest, in ms (rule 2).
    static let firstDelay: UInt64 = 100
    static let longestDelay: UInt64 = 500
    /// How often a long outage is logged again, in ms (rule 3).
    static let reportEvery: UInt64 = 10_000

    /// Loop time (ms) the connection was lost (or the first attempt began).
    let since: UInt64
    private(set) var attempts = 0
    private var leaseReported = false
    private var lastReport: UInt64

    init(since: UInt64) {
        self.since = since
        self.lastReport = since
    }

    /// An attempt failed at loop time `now`. Returns how long to wait before the next
    /// one (`random` in 0..<1 draws the jitter) and what to log.
    mutating func failed(now: UInt64, leaseMilliseconds: Int, random: Double) -> (delay: UInt64, report: Report) {
        attempts += 1
        let shift = min(attempts - 1, 8)
        let ceiling = min(Self.longestDelay, Self.firstDelay << UInt64(shift))
        let fraction = 0.75 + 0.25 * min(max(random, 0), 1)
        let delay = max(1, UInt64((Double(ceiling) * fraction).rounded()))
        let down = now >= since ? now - since : 0
        var report = Report.none
        if !leaseReported && down >= UInt64(max(0, leaseMilliseconds)) {
            leaseReported = true
            lastReport = now
            report = .leaseLapsed(milliseconds: down)
        } else if leaseReported && now >= lastReport + Self.reportEvery {
            lastReport = now
            report = .stillUnreachable(milliseconds: down)
        }
        return (delay, report)
    }
}
