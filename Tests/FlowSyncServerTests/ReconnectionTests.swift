import FlowSyncTestSupport
import Testing

@testable import FlowSyncServer

/// How a cluster node keeps reconnecting to PostgreSQL (issue #33), without a socket:
/// the waits back off with jitter and never end, and a long outage is logged once when
/// it outlasts the lease and then every 10 s.
@Suite(.timeLimit(.minutes(1))) struct ReconnectionTests {
    @Test func theWaitsDoubleToHalfASecondWithJitterAndNeverEnd() {
        var reconnection = Reconnection(since: 1_000)
        var now: UInt64 = 1_000
        var ceilings: [UInt64] = []
        for _ in 0..<200 {
            let (delay, _) = reconnection.failed(now: now, leaseMilliseconds: 5_000, random: 1)
            ceilings.append(delay)
            now += delay
        }
        #expect(Array(ceilings.prefix(5)) == [100, 200, 400, 500, 500], "with random 1 the wait is the ceiling")
        #expect(
            ceilings.allSatisfy { $0 <= 500 } && reconnection.attempts == 200, "no give-up: 200 attempts, about 100 s"
        )
        var low = Reconnection(since: 0)
        #expect(low.failed(now: 0, leaseMilliseconds: 5_000, random: 0).delay == 75, "3/4 of 100")
        #expect(low.failed(now: 75, leaseMilliseconds: 5_000, random: 0.5).delay == 175, "7/8 of 200")
    }

    @Test func aLongOutageIsReportedOnceAtTheLeaseThenEveryTenSeconds() {
        var reconnection = Reconnection(since: 0)
        var reports: [(UInt64, Reconnection.Report)] = []
        var now: UInt64 = 0
        while now < 35_000 {
            let (delay, report) = reconnection.failed(now: now, leaseMilliseconds: 5_000, random: 1)
            if report != .none { reports.append((now, report)) }
            now += delay
        }
        #expect(reports.map(\.0) == [5_200, 15_200, 25_200], "\(reports)")
        #expect(
            reports.first?.1 == .leaseLapsed(milliseconds: reports.first?.0 ?? 0) && (reports.first?.0 ?? 0) >= 5_000)
        for (a, b) in zip(reports, reports.dropFirst()) {
            #expect(b.0 - a.0 >= 10_000, "\(a.0) then \(b.0)")
            #expect(b.1 == .stillUnreachable(milliseconds: b.0))
        }
    }

    /// Random failure times and random draws: every wait within [3/4, 1] of its
    /// ceiling, the ceiling doubling from 100 ms to 500 ms, the lease reported once and
    /// no two reports closer than 10 s.
    @Test func seededOutagesKeepTheRules() {
        let seed = UInt64.random(in: 0...UInt64.max)
        print("ReconnectionTests seed: \(seed)")
        var random = SeededRandom(seed: seed)
        for _ in 0..<500 {
            let since = UInt64(random.next() % 1_000_000)
            let lease = Int(300 + random.next() % 20_000)
            var reconnection = Reconnection(since: since)
            var now = since
            var leaseReports = 0
            var lastReport: UInt64?
            for attempt in 1...60 {
                let draw = Double(random.next() % 1_000) / 1_000
                let (delay, report) = reconnection.failed(now: now, leaseMilliseconds: lease, random: draw)
                let ceiling = min(500, UInt64(100) << UInt64(min(attempt - 1, 8)))
                #expect(delay >= ceiling * 3 / 4 && delay <= ceiling, "seed \(seed): wait \(delay), ceiling \(ceiling)")
                switch report {
                case .none: break
                case .leaseLapsed(let down):
                    leaseReports += 1
                    #expect(down >= UInt64(lease) && down == now - since, "seed \(seed)")
                    lastReport = now
                case .stillUnreachable(let down):
                    #expect(
                        leaseReports == 1 && now >= (lastReport ?? 0) + 10_000 && down == now - since, "seed \(seed)")
                    lastReport = now
                }
                now += delay + UInt64(random.next() % 3_000)
            }
            #expect(leaseReports <= 1, "seed \(seed)")
        }
    }
}
