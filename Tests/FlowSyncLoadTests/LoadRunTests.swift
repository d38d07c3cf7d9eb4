import FlowSyncCore
import FlowSyncLoad
import FlowSyncServer
import FlowSyncTestSupport
import Foundation
import Testing

/// A whole (small) load run against an embedded daemon: every scenario step, and a
/// clean verdict — no divergence, no lost ack, no Reject, no protocol error.
@Suite(.timeLimit(.minutes(2))) struct LoadRunTests {
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
        let report = try await runLoad(configuration)
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

    /// `--endpoints` spreads the clients round robin and splits write → delivery by
    /// whether writer and subscriber were on the same endpoint. Without a cluster that
    /// shares lists between daemons, both endpoints are the one embedded daemon (reached
    /// twice): what is checked is the spreading and the bookkeeping, not a cross-node
    /// figure.
    @Test func endpointsSpreadTheClientsAndSplitTheDeliveryLatency() async throws {
        var port = 0
        let report = try await run { c in
            port = c.port
            c.endpoints = ["127.0.0.1:\(c.port)", "127.0.0.1:\(c.port)"]
        }
        #expect(report.passed, "\(report.failures)\n\(report.table())")
        #expect(
            report.endpoints == [
                LoadReport.EndpointLoad(endpoint: "127.0.0.1:\(port)", subscribers: 4, writers: 2, readyAtWindowEnd: 6),
                LoadReport.EndpointLoad(endpoint: "127.0.0.1:\(port)", subscribers: 4, writers: 1, readyAtWindowEnd: 5),
            ], "\(report.table())")
        let cross = try #require(report.latency.crossEndpointDelivery)
        let same = try #require(report.latency.sameEndpointDelivery)
        #expect(cross.count > 0 && same.count > 0)
        #expect(cross.count + same.count == report.latency.writeToDelivery.count)
        #expect(report.table().contains("write on A → delivery on B"))
        #expect(LoadReportPage.html(for: report).contains("write on A → delivery on B"))
        // The JSON report keeps the figures.
        let decoded = try JSONDecoder().decode(LoadReport.self, from: Data(report.json().utf8))
        #expect(decoded.endpoints == report.endpoints && decoded.latency.crossEndpointDelivery == cross)
    }

    @Test func malformedEndpointsAreRefused() {
        var c = LoadConfiguration()
        c.endpoints = ["127.0.0.1:7400", "nohost"]
        #expect(c.validationErrors().contains { $0.contains("--endpoints") })
        c.endpoints = ["127.0.0.1:7400"]
        c.spawn = true
        #expect(c.validationErrors().contains { $0.contains("--spawn") })
        #expect(LoadConfiguration.parseEndpoint("[::1]:7400")! == ("::1", 7400))
        #expect(LoadConfiguration.parseEndpoint("127.0.0.1:0") == nil)
    }

    @Test func unreachableDaemonIsAnError() async throws {
        var c = LoadConfiguration()
        c.port = 1  // nothing listens there
        let configuration = c
        await #expect(throws: LoadError.self) {
            try await runLoad(configuration, scenario: nil)
        }
    }
}

/// Subscribers the daemon closes for being too slow (here its write deadline) back off,
/// resume from their position, and end consistent: the run still passes.
@Suite(.timeLimit(.minutes(2))) struct SlowConsumerRecoveryTests {
    @Test func closedSlowConsumersResumeAndEndConsistent() async throws {
        var server = ServerConfiguration()
        // A stalled socket is closed after 500 ms (write-timeout, 3010).
        server.writeDeadlineMilliseconds = 500
        let embedded = try await EmbeddedServer(configuration: server)
        var c = Scenario.slowConsumers.configuration
        c.host = "127.0.0.1"
        c.port = embedded.port
        c.subscribersPerList = 4
        c.fullReplicasPerList = 4
        c.slowConsumers = 2
        c.writers = 2
        c.rate = 400
        c.payloadBytes = 8_000
        c.initialRows = 50
        c.slowPauseMilliseconds = 2_000
        c.slowPeriodMilliseconds = 2_500
        c.warmup = 0.2
        c.duration = 3
        // Past the 3 s, the run waits (at most 60 s more) until the daemon has closed a
        // slow consumer, and then until every closed one is back: the test checks events,
        // not what a fixed time happened to hold on a loaded machine.
        c.untilSubscribersClosed = 1
        c.eventWaitSeconds = 60
        let configuration = c
        let report = try await runLoad(configuration)
        _ = await embedded.stop()
        #expect(report.passed, "\(report.failures)\n\(report.table())")
        #expect(
            report.connections.closedByDaemon > 0,
            "the daemon closed no one:\n\(report.table())\n\(report.daemon.counters)")
        #expect(report.connections.reconnects >= report.connections.closedByDaemon)
        #expect(report.checks.divergences == 0)
    }
}

/// Writers whose base is their last Ack's version: other writers' commits since make the
/// daemon rebase every such mutation by identity, and none may be rejected.
@Suite(.timeLimit(.minutes(2))) struct RebasedWritesTests {
    @Test func rebasedWritesCommitWithoutRejectsOrDivergence() async throws {
        let server = try await EmbeddedServer()
        var c = Scenario.writers.configuration
        c.host = "127.0.0.1"
        c.port = server.port
        c.writers = 6
        c.subscribersPerList = 3
        c.initialRows = 60
        c.sectionsPerList = 3
        c.mix = .everything
        c.opsPerMutation = 3
        c.writeBase = .acked
        c.warmup = 0.2
        c.duration = 1.5
        let configuration = c
        let report = try await runLoad(configuration)
        _ = await server.stop()
        #expect(report.passed, "\(report.failures)\n\(report.table())")
        #expect(report.mutations.acked > 50)
        #expect(report.mutations.rejected == 0)
    }

    @Test func ackedBaseNeedsOneInFlight() {
        var c = LoadConfiguration()
        c.writeBase = .acked
        c.maxInFlightPerWriter = 4
        #expect(c.validationErrors().contains { $0.contains("--base acked") })
        c.maxInFlightPerWriter = 1
        #expect(c.validationErrors().isEmpty)
    }
}

/// A daemon that goes away mid-run: the run ends within seconds with a failing report
/// (it cannot verify anything), not with a hang or an exception.
@Suite(.timeLimit(.minutes(2))) struct DaemonGoneTests {
    @Test func aDaemonStoppedMidRunFailsTheRunPromptly() async throws {
        let server = try await EmbeddedServer()
        var c = Scenario.mixed.configuration
        c.host = "127.0.0.1"
        c.port = server.port
        c.lists = 1
        c.subscribersPerList = 3
        c.writers = 2
        c.rate = 200
        c.initialRows = 20
        c.warmup = 0.2
        // Long enough that the stop below always lands inside the run; the run must end
        // promptly after it, not at the end of these 60 s.
        c.duration = 60
        let configuration = c
        let run = Task { try await runLoad(configuration) }
        // Mid-run by construction: the server stops itself, on its own loop thread, once
        // the writers have committed 50 batches (the setup writes fewer than 10).
        _ = await server.stop(afterBatches: 50)
        let stopped = MonotonicClock.nanoseconds()
        let report = try await run.value
        let seconds = Double(MonotonicClock.nanoseconds() - stopped) / 1e9
        #expect(!report.passed)
        #expect(report.failures.contains { $0.contains("nothing could be verified") }, "\(report.failures)")
        #expect(seconds < 40, "the run took \(seconds) s to end after the daemon stopped")
    }
}
