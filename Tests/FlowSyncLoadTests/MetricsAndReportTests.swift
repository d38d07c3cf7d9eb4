import FlowSyncCore
import FlowSyncLoad
import FlowSyncProtocol
import Foundation
import Testing

@Suite(.timeLimit(.minutes(2))) struct LatencyRecorderTests {
    @Test func percentilesOfAUniformSpread() {
        var r = LatencyRecorder()
        for us in 1...10_000 { r.record(nanoseconds: Int64(us) * 1_000) }
        let s = r.summary
        #expect(s.count == 10_000)
        // HdrHistogram with 3 significant digits: within 0.1 %.
        #expect(abs(s.p50 - 5_000) <= 5)
        #expect(abs(s.p90 - 9_000) <= 9)
        #expect(abs(s.p99 - 9_900) <= 10)
        #expect(abs(s.p999 - 9_990) <= 10)
        #expect(abs(s.max - 10_000) <= 10)
    }

    @Test func aStallIsNeverClipped() {
        var r = LatencyRecorder()
        for _ in 0..<999 { r.record(nanoseconds: 100_000) }
        r.record(nanoseconds: 30_000_000_000)  // one 30 s stall
        #expect(r.summary.max >= 29_000_000)
        #expect(r.summary.p50 < 101)
        r.record(nanoseconds: -5)  // clock noise counts as 0, not a crash
        #expect(r.count == 1_001)
    }

    @Test func emptyAndReset() {
        var r = LatencyRecorder()
        #expect(r.summary == .empty)
        r.record(nanoseconds: 1_000, count: 5)
        #expect(r.count == 5)
        r.reset()
        #expect(r.summary == .empty)
    }
}

@Suite(.timeLimit(.minutes(2))) struct LoadReportTests {
    func sample() -> LoadReport {
        var report = LoadReport(configuration: Scenario.mixed.configuration)
        report.scenario = "mixed"
        report.measuredSeconds = 5
        report.mutations.sent = 2_000
        report.mutations.acked = 2_000
        report.deliveries.rowChanges = 120_000
        report.deliveries.rowChangesPerSecond = 24_000
        report.latency.writeToDelivery = LatencySummary(
            count: 40_000, p50: 500, p90: 900, p99: 2_000, p999: 5_000, max: 9_000)
        report.checks.subscribersChecked = 80
        return report
    }

    /// The JSON every script reads: top-level groups and the latency fields.
    @Test func jsonShape() throws {
        var report = sample()
        report.judge()
        let object = try #require(try JSONSerialization.jsonObject(with: Data(report.json().utf8)) as? [String: Any])
        for key in [
            "tool", "scenario", "configuration", "startedAt", "measuredSeconds", "connections", "mutations",
            "deliveries", "bytes", "latency", "daemon", "loadTool", "checks", "failures", "passed",
        ] {
            #expect(object[key] != nil, "missing \(key)")
        }
        let latency = try #require(object["latency"] as? [String: Any])
        let delivery = try #require(latency["writeToDelivery"] as? [String: Any])
        #expect(Set(delivery.keys) == ["count", "p50", "p90", "p99", "p999", "max"])
        #expect(delivery["p99"] as? Double == 2_000)
        let checks = try #require(object["checks"] as? [String: Any])
        #expect(checks["divergences"] as? Int == 0)
        #expect(object["passed"] as? Bool == true)
        let configuration = try #require(object["configuration"] as? [String: Any])
        #expect(configuration["mix"] as? String == OperationMix.everything.description)
        // And it reads back.
        let decoded = try JSONDecoder().decode(LoadReport.self, from: Data(report.json().utf8))
        #expect(decoded.latency.writeToDelivery == report.latency.writeToDelivery)
        #expect(decoded.configuration == report.configuration)
    }

    @Test(arguments: [
        ("divergences", "divergent"), ("lost", "never answered"), ("protocol", "protocol error"),
        ("reject", "rejected"), ("connection", "connection(s) failed"), ("storm", "did not recover"),
    ])
    func judgeFailsOnEachProblem(kind: String, message: String) {
        var report = sample()
        switch kind {
        case "divergences": report.checks.divergences = 1
        case "lost": report.mutations.lostAcks = 3
        case "protocol": report.checks.protocolErrors = 1
        case "reject": report.mutations.rejected = 1
        case "connection": report.connections.failed = 2
        default:
            var storm = LoadReport.ResumeStorm()
            storm.dropped = 10
            storm.notRecovered = 1
            report.resumeStorm = storm
        }
        report.judge()
        #expect(!report.passed)
        #expect(report.failures.joined().contains(message))
        #expect(report.table().contains("FAIL"))
    }

    @Test func tableShowsTheHeadlineFigures() {
        var report = sample()
        report.judge()
        let table = report.table()
        #expect(table.contains("write → delivery"))
        #expect(table.contains("row changes delivered"))
        #expect(table.contains("24.0 k/s"))
        #expect(table.hasSuffix("PASS"))
    }

    @Test func numbersAreShort() {
        #expect(LoadReport.number(1_234_567) == "1.23 M")
        #expect(LoadReport.number(12_345) == "12.3 k")
        #expect(LoadReport.number(123) == "123")
        #expect(LoadReport.number(2.5) == "2.5")
    }
}

@Suite(.timeLimit(.minutes(2))) struct FrameSplitterTests {
    func frames() -> [[UInt8]] {
        let encoder = FrameEncoder()
        return (0..<20).map { k in
            encoder.encode(
                .diff(
                    Diff(
                        listName: "l", epoch: 1, fromVersion: UInt64(k), toVersion: UInt64(k + 1),
                        digest: StateDigest(rawValue: 9),
                        changeset: Changeset(), mutations: (0..<k).map { MutationID(clientID: "c", seq: UInt64($0)) })))
        }
    }

    @Test func anySplitGivesTheSameFrames() throws {
        let expected = frames()
        let stream = expected.flatMap { $0 }
        for chunk in [1, 3, 7, 64, stream.count] {
            var splitter = FrameSplitter()
            var got: [[UInt8]] = []
            var offset = 0
            while offset < stream.count {
                let end = min(offset + chunk, stream.count)
                try stream[offset..<end].withUnsafeBytes { bytes in
                    try splitter.split(bytes) { got.append(Array($0)) }
                }
                offset = end
            }
            #expect(got == expected, "chunk \(chunk)")
            #expect(splitter.pending.isEmpty)
        }
    }

    @Test func impossibleLengthsAreRefused() {
        var splitter = FrameSplitter(maxFrameBytes: 100)
        #expect(throws: FrameSplitter.Failure(length: 1)) {
            try ([0, 0, 0, 1, 9] as [UInt8]).withUnsafeBytes { try splitter.split($0) { _ in } }
        }
        var small = FrameSplitter(maxFrameBytes: 100)
        #expect(throws: FrameSplitter.Failure(length: 101)) {
            try ([0, 0, 0, 101] as [UInt8]).withUnsafeBytes { try small.split($0) { _ in } }
        }
    }
}

@Suite(.timeLimit(.minutes(2))) struct FrameCacheTests {
    @Test func identicalBytesAreDecodedOnceAndCountRowChanges() throws {
        var stage = ChangesetStage()
        stage.rowUpdates = [RowAtPath(path: RowPath(section: 0, row: 0), row: Row(id: "a", text: "x"))]
        stage.rowDeletes = [RowPath(section: 0, row: 1), RowPath(section: 0, row: 2)]
        let diff = Diff(
            listName: "l", epoch: 1, fromVersion: 1, toVersion: 2, digest: StateDigest(rawValue: 5),
            changeset: Changeset(stages: [stage]), mutations: [MutationID(clientID: "w", seq: 1)])
        let encoder = FrameEncoder(configuration: CompressionConfiguration(threshold: 0))
        let bytes = encoder.encode(.diff(diff))
        let cache = FrameCache()
        cache.dictionary = .standard
        let first = try bytes.withUnsafeBytes { try cache.decode($0) }
        let second = try bytes.withUnsafeBytes { try cache.decode($0) }
        #expect(first === second)
        #expect(cache.decodes == 1 && cache.hits == 1)
        #expect(first.message == .diff(diff))
        #expect(first.rowChanges == 3)
        #expect(first.wireBytes == bytes.count)
        #expect(first.rawBytes == FrameEncoder(configuration: .disabled).encode(.diff(diff)).count)
        // Other bytes: a decode of their own.
        var other = diff
        other.toVersion = 3
        let third = try encoder.encode(.diff(other)).withUnsafeBytes { try cache.decode($0) }
        #expect(third !== first)
        #expect(cache.decodes == 2)
    }

    @Test func corruptFramesThrow() {
        let cache = FrameCache()
        #expect(throws: ProtocolError.self) {
            try ([0, 0, 0, 2, 0x7f, 0] as [UInt8]).withUnsafeBytes { try cache.decode($0) }
        }
    }
}

@Suite(.timeLimit(.minutes(2))) struct LoadConnectionStateMachineTests {
    @Test func handshakeThenDelivery() {
        var m = LoadConnectionStateMachine()
        #expect(m.connectRequested() == .connect)
        #expect(m.connected() == .sendHello)
        #expect(!m.isReady)
        #expect(m.received(isWelcome: true, isError: false) == .becomeReady)
        #expect(m.isReady)
        #expect(m.received(isWelcome: false, isError: false) == .deliver)
        #expect(m.received(isWelcome: true, isError: false) == .protocolError("a second Welcome"))
        #expect(m.ended("closed") == .ended)
        #expect(m.isClosed)
        #expect(m.received(isWelcome: false, isError: false) == .none)
        // A closed connection may connect again (resume).
        #expect(m.connectRequested() == .connect)
    }

    @Test func failuresBeforeTheWelcome() {
        var refused = LoadConnectionStateMachine()
        _ = refused.connectRequested()
        #expect(refused.connectFailed("ECONNREFUSED") == .connectionFailed("ECONNREFUSED"))
        var early = LoadConnectionStateMachine()
        _ = early.connectRequested()
        _ = early.connected()
        #expect(early.received(isWelcome: false, isError: false) == .protocolError("message before the Welcome"))
        var undecodable = LoadConnectionStateMachine()
        _ = undecodable.connectRequested()
        _ = undecodable.connected()
        #expect(undecodable.undecodable("bad") == .protocolError("bad"))
        #expect(undecodable.ended("closed") == .none)
    }
}
