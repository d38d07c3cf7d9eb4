import FlowSyncTestSupport
import Foundation
import Testing

/// The crash test, short: a real flowsyncd (the debug binary) under writers and
/// subscribers, SIGKILLed at random moments and restarted, at least 20 times. The long
/// run is `scripts/crash-test.sh --cycles 500` (figures in docs/BENCHMARKS.md).
@Suite(.serialized) struct CrashTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The debug flowsyncd next to the test bundle, else in `.build/debug` or a
    /// `.build-*/debug` scratch path.
    static func binary() throws -> String {
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        var candidates = [bundle.appendingPathComponent("flowsyncd"), bundle.deletingLastPathComponent().appendingPathComponent("flowsyncd"),
                          root.appendingPathComponent(".build/debug/flowsyncd")]
        let scratch = (try? FileManager.default.contentsOfDirectory(atPath: root.path))?.filter { $0.hasPrefix(".build-") }.sorted() ?? []
        candidates += scratch.map { root.appendingPathComponent("\($0)/debug/flowsyncd") }
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) else {
            throw CrashTestError("flowsyncd not built: run `swift build` first")
        }
        return found.path
    }

    @Test func killedAndRestartedTwentyTimesLosesNothingAcknowledged() async throws {
        let directory = TemporaryDirectory("crash")
        defer { directory.remove() }
        let cycles = ProcessInfo.processInfo.environment["FLOWSYNC_CRASH_CYCLES"].flatMap(Int.init) ?? 20
        var options = CrashTestDriver.Options(binary: try Self.binary(), dataDirectory: directory.path)
        options.cycles = cycles
        options.seed = 2026
        options.log = { print("crash test: \($0)") }
        let result = try await CrashTestDriver(options).run()
        print("crash test: \(result)")
        #expect(result.cycles == cycles, "\(result)")
        #expect(result.problems.isEmpty, "\(result.problems)")
        #expect(result.ackedMutations > cycles * 5, "\(result)")
        #expect(result.resumesAsDiff >= (cycles - 1) * options.subscribers * options.lists.count, "\(result)")
    }
}
