import FlowSyncLoad
import FlowSyncTestSupport
import Testing

/// A whole (small) load run against an embedded daemon: every scenario step, and a
/// clean verdict — no divergence, no lost ack, no Reject, no protocol error.
@Suite struct LoadRunTests {
    func run(_ adjust: (inout LoadConfiguration) -> Void) async throws -> LoadReport {
        let server = try await EmbeddedServer()
        var c = Scenario.mixed.configuration
        c.host = "127.0.0.1"
        c.port = server.port
        c.lists = 2
        c.subscribersPerList = 4
        c.fullReplicasPerList = 3
        c.writers = 3
        c.rate = 300
        c.initialRows = 40
        c.sectionsPerList = 3
        c.warmup = 0.2
        c.duration = 1.2
        c.fullCompareLists = 2
        c.fullCompareReplicas = 3
        adjust(&c)
        let configuration = c
        let report = try await Task.detached { try LoadRunner(configuration: configuration, scenario: "test", progress: false).run() }.value
        _ = await server.stop()
        return report
    }

    @Test func mixedRunPassesWithEveryFigure() async throws {
        let report = try await run { _ in }
        #expect(report.passed, "\(report.failures)\n\(report.table())")
        #expect(report.connections.subscribers == 8)
        #expect(report.connections.writers == 3)
        #expect(report.mutations.acked > 100)
        #expect(report.mutations.lostAcks == 0)
        #expect(report.deliveries.frames > 0)
        #expect(report.deliveries.rowChanges > 0)
        #expect(report.latency.writeToDelivery.count > 0)
        #expect(report.latency.writeToAck.count > 0)
        #expect(report.checks.divergences == 0)
        #expect(report.checks.fullCompared == 6)
        #expect(report.checks.fullCompareMismatches == 0)
        #expect(report.bytes.wire > 0 && report.bytes.raw >= report.bytes.wire)
    }

    @Test func resumeStormRecoversEverySubscriberWithoutAGap() async throws {
        let report = try await run { c in
            c.resumeStormSubscribers = 8
            c.duration = 1.5
        }
        #expect(report.passed, "\(report.failures)\n\(report.table())")
        let storm = try #require(report.resumeStorm)
        #expect(storm.dropped == 8)
        #expect(storm.notRecovered == 0)
        #expect(storm.resumedWithDiff + storm.resumedWithSnapshot == 8)
        #expect(report.checks.gaps == 0)
    }

    @Test func closedLoopSaturates() async throws {
        let report = try await run { c in
            c.rate = 0
            c.maxInFlightPerWriter = 4
            c.mix = .updatesOnly
        }
        #expect(report.passed, "\(report.failures)\n\(report.table())")
        #expect(report.mutations.acked > 100)
    }

    @Test func unreachableDaemonIsAnError() async throws {
        var c = LoadConfiguration()
        c.port = 1   // nothing listens there
        let configuration = c
        await #expect(throws: LoadError.self) {
            try await Task.detached { try LoadRunner(configuration: configuration, scenario: nil, progress: false).run() }.value
        }
    }
}
