import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The `flowsyncd` executable itself: --check-config exit codes, start on port 0,
/// SIGHUP reload, SIGTERM shutdown with exit 0.
@Suite(.serialized) struct DaemonProcessTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The debug binary next to the test bundle (`swift build` builds it; make test does),
    /// else in `.build/debug` or any `.build-*/debug` scratch path.
    static func binary() throws -> URL {
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        var candidates = [bundle.appendingPathComponent("flowsyncd"), bundle.deletingLastPathComponent().appendingPathComponent("flowsyncd"),
                          root.appendingPathComponent(".build/debug/flowsyncd")]
        let scratch = (try? FileManager.default.contentsOfDirectory(atPath: root.path))?.filter { $0.hasPrefix(".build-") }.sorted() ?? []
        candidates += scratch.map { root.appendingPathComponent("\($0)/debug/flowsyncd") }
        for candidate in candidates where FileManager.default.isExecutableFile(atPath: candidate.path) {
            return candidate
        }
        throw CocoaError(.fileNoSuchFile, userInfo: [NSLocalizedDescriptionKey: "flowsyncd not built: run `swift build` first"])
    }

    static func run(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = try binary()
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// A fresh directory for a spawned daemon's store (`--data-dir`); the caller removes it.
    static func temporaryDataDirectory() -> String {
        NSTemporaryDirectory() + "flowsyncd-data-\(UUID().uuidString)"
    }

    static func temporaryFile(_ text: String) throws -> String {
        let path = NSTemporaryDirectory() + "flowsyncd-test-\(UUID().uuidString).toml"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func checkConfigExitCodes() throws {
        let good = try Self.run(["--check-config", "--config", Self.root.appendingPathComponent("config/flowsyncd.toml").path])
        #expect(good.status == 0 && good.output.contains("configuration OK"), "\(good)")
        let badPath = try Self.temporaryFile("[limits]\nmax_frame_bytez = 5\n")
        defer { unlink(badPath) }
        let bad = try Self.run(["--check-config", "--config", badPath])
        #expect(bad.status == 2 && bad.output.contains("limits.max_frame_bytez: unknown key"), "\(bad)")
        let flag = try Self.run(["--check-config", "--log-level", "loud"])
        #expect(flag.status == 2 && flag.output.contains("logging.level"), "a bad flag value names its key: \(flag)")
        let missing = try Self.run(["--check-config", "--config", "/nonexistent/flowsyncd.toml"])
        #expect(missing.status == 2 && missing.output.contains("cannot read"), "\(missing)")
    }

    @Test func reloadsOnSIGHUPAndExitsCleanlyOnSIGTERM() async throws {
        let configPath = try Self.temporaryFile("[server]\nport = 0\n[logging]\nlevel = \"info\"\n")
        defer { unlink(configPath) }
        let process = Process()
        process.executableURL = try Self.binary()
        let dataDirectory = Self.temporaryDataDirectory()
        defer { try? FileManager.default.removeItem(atPath: dataDirectory) }
        process.arguments = ["--config", configPath, "--metrics-port", "0", "--data-dir", dataDirectory]
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        let collected = LockedText()
        err.fileHandleForReading.readabilityHandler = { collected.append(String(decoding: $0.availableData, as: UTF8.self)) }
        out.fileHandleForReading.readabilityHandler = { collected.append(String(decoding: $0.availableData, as: UTF8.self)) }
        #expect(await waitFor { collected.text.contains("listening on 127.0.0.1:") }, "did not start: \(collected.text)")

        try "[server]\nport = 0\n[limits]\nmax_ops_per_mutation = 7\n[logging]\nlevel = \"info\"\n".write(toFile: configPath, atomically: true, encoding: .utf8)
        kill(process.processIdentifier, SIGHUP)
        #expect(await waitFor { collected.text.contains("configuration reloaded") }, "\(collected.text)")
        #expect(collected.text.contains("limits.director"), "the reload names what changed: \(collected.text)")

        kill(process.processIdentifier, SIGTERM)
        #expect(await waitFor { !process.isRunning })
        #expect(process.terminationStatus == 0, "exit \(process.terminationStatus): \(collected.text)")
        #expect(collected.text.contains("stopped"))
        err.fileHandleForReading.readabilityHandler = nil
        out.fileHandleForReading.readabilityHandler = nil
    }

    func waitFor(_ condition: () -> Bool) async -> Bool {
        for _ in 0..<400 {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(25))
        }
        return condition()
    }
}

final class LockedText: @unchecked Sendable {
    private let lock = NSLock()
    private var buffer = ""
    func append(_ s: String) { lock.lock(); buffer += s; lock.unlock() }
    var text: String { lock.lock(); defer { lock.unlock() }; return buffer }
}
