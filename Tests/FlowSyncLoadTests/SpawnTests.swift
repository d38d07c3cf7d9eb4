import FlowSyncLoad
import FlowSyncProcess
import Foundation
import Testing

/// `--spawn`: the tool starts a real flowsyncd (the debug binary `swift build` made),
/// samples it through /proc, and stops it.
@Suite(.timeLimit(.minutes(2))) struct SpawnTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The debug flowsyncd next to the test bundle, else in `.build/debug` or a `.build-*` scratch path.
    static func daemonBinary() -> String? {
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        var candidates = [
            bundle.appendingPathComponent("flowsyncd"),
            bundle.deletingLastPathComponent().appendingPathComponent("flowsyncd"),
            root.appendingPathComponent(".build/debug/flowsyncd"),
        ]
        let scratch =
            (try? FileManager.default.contentsOfDirectory(atPath: root.path))?.filter { $0.hasPrefix(".build-") }
            .sorted() ?? []
        candidates += scratch.map { root.appendingPathComponent("\($0)/debug/flowsyncd") }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) }?.path
    }

    @Test func spawnedDaemonIsMeasuredAndStopped() async throws {
        let binary = try #require(Self.daemonBinary(), "flowsyncd not built: run `swift build` first")
        var c = Scenario.mixed.configuration
        c.spawn = true
        c.daemonPath = binary
        c.daemonStorage = "memory"
        c.lists = 2
        c.subscribersPerList = 3
        c.writers = 2
        c.rate = 100
        c.initialRows = 20
        c.warmup = 0.2
        c.duration = 1
        let configuration = c
        let report = try await runLoad(configuration)
        #expect(report.passed, "\(report.failures)\n\(report.table())")
        let process = try #require(report.daemon.process)
        #expect(process.rssKiB > 0 && process.peakRSSKiB >= process.rssKiB)
        #expect(process.cpuPercent >= 0)
        #expect((report.daemon.rssAfterSubscribersKiB ?? 0) > 0)
        #expect(report.table().contains("storage memory"))
        // Stopped at the end: no flowsyncd of ours is left with our data directory.
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: FileManager.default.temporaryDirectory.path)
            .filter { $0.hasPrefix("flowsync-load-\(getpid())-") }
        #expect(leftovers.isEmpty, "temporary directories left: \(leftovers)")
    }

    /// `--spawn --tls`: the daemon serves a throw-away certificate, every client speaks
    /// TLS to it and checks it (issue #32); the run passes as in plaintext.
    @Test func aSpawnedTLSRunPasses() async throws {
        let binary = try #require(Self.daemonBinary(), "flowsyncd not built: run `swift build` first")
        var c = Scenario.mixed.configuration
        c.spawn = true
        c.daemonPath = binary
        c.daemonStorage = "memory"
        c.tls = LoadTLS()
        c.lists = 2
        c.subscribersPerList = 5
        c.writers = 2
        c.rate = 100
        c.initialRows = 20
        c.warmup = 0.2
        c.duration = 1
        let configuration = c
        let report = try await runLoad(configuration)
        #expect(report.passed, "\(report.failures)\n\(report.table())")
        #expect(report.connections.failed == 0)
        // The same run trusting nothing the daemon shows: every connection is refused.
        c.tls = LoadTLS(caFile: "/etc/ssl/certs/ca-certificates.crt", daemonCertificate: nil)
        c.tls?.serverName = "other.example"
        let refused = try? await runLoad(c)
        #expect(refused?.passed != true, "a run whose clients cannot verify the daemon passed")
    }

    @Test func aMissingBinaryIsAClearError() async {
        var c = LoadConfiguration()
        c.spawn = true
        c.daemonPath = "/nonexistent/flowsyncd"
        let configuration = c
        await #expect {
            try await runLoad(configuration, scenario: nil)
        } throws: { error in
            "\(error)".contains("no daemon binary at /nonexistent/flowsyncd")
        }
    }

    @Test func procSamplesOfThisProcess() throws {
        let a = try #require(ProcessSample.read(pid: "self"))
        var x = 0.0
        for i in 0..<2_000_000 { x += Double(i).squareRoot() }
        let b = try #require(ProcessSample.read(pid: "self"))
        #expect(x > 0)
        #expect(a.rssKiB > 0 && b.peakRSSKiB >= b.rssKiB)
        #expect(b.cpuSeconds >= a.cpuSeconds)
        #expect(ProcessSample.cpuPercent(from: a, to: b) >= 0)
        #expect(ProcessSample.read(pid: "999999999") == nil)
    }
}
