import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A `flowsyncd` process on 127.0.0.1 port 0 with its own data directory, for crash
/// tests and storage benchmarks. Waits for the "listening on" line without blocking a
/// thread of the cooperative pool (it has as many threads as cores).
public final class DaemonProcess: @unchecked Sendable {
    public let process: Process
    /// Everything it printed (stdout and stderr).
    public let output: Shared<String>
    public let port: Int

    private init(process: Process, output: Shared<String>, port: Int) {
        self.process = process
        self.output = output
        self.port = port
    }

    /// Starts `binary` with `--port 0 --no-metrics --data-dir dataDirectory` (and
    /// `--config config` when given) plus `extraArguments`; `prefixArguments` come first
    /// (when `binary` is a wrapper that execs the daemon).
    public static func start(binary: String, dataDirectory: String, config: String?, extraArguments: [String] = [],
                             prefixArguments: [String] = []) async throws -> DaemonProcess {
        let process = Process()
        let output = Shared("")
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = prefixArguments + (config.map { ["--config", $0] } ?? []) + ["--port", "0", "--no-metrics", "--log-level", "warning", "--data-dir", dataDirectory] + extraArguments
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_BACKTRACE"] = "enable=no"
        for key in ["NOTIFY_SOCKET", "WATCHDOG_USEC", "LISTEN_FDS", "LISTEN_PID"] { environment[key] = nil }
        process.environment = environment
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        pipe.fileHandleForReading.readabilityHandler = { handle in
            let text = String(decoding: handle.availableData, as: UTF8.self)
            output.update { $0 += text }
        }
        try process.run()
        var port: Int?
        for _ in 0..<60_000 {
            let text = output.get()
            if let range = text.range(of: "listening on 127.0.0.1:") {
                let digits = text[range.upperBound...].prefix { $0.isNumber }
                if let p = Int(digits), text[range.upperBound...].dropFirst(digits.count).first == "\n" { port = p; break }
            }
            if !process.isRunning { break }
            try? await Task.sleep(for: .milliseconds(2))
        }
        guard let port else {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
            pipe.fileHandleForReading.readabilityHandler = nil
            throw CrashTestError("flowsyncd did not start: \(output.get())")
        }
        return DaemonProcess(process: process, output: output, port: port)
    }

    /// SIGKILL, then wait for the exit.
    public func kill9() async {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        for _ in 0..<2_000 where process.isRunning { try? await Task.sleep(for: .milliseconds(5)) }
        process.waitUntilExit()
        (process.standardOutput as? Pipe)?.fileHandleForReading.readabilityHandler = nil
    }

    /// SIGTERM (graceful), then wait for the exit without blocking a thread of the
    /// cooperative pool (a graceful stop can take the shutdown grace period).
    public func terminate() async {
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        for _ in 0..<3_000 where process.isRunning { try? await Task.sleep(for: .milliseconds(5)) }
        stop()
    }

    /// SIGTERM (graceful), then wait for the exit (blocking: for synchronous callers).
    public func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        process.waitUntilExit()
        (process.standardOutput as? Pipe)?.fileHandleForReading.readabilityHandler = nil
    }
}
