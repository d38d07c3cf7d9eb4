import Foundation

/// CPU time and memory of one process, read from `/proc` (Linux).
public struct ProcessSample: Sendable {
    /// User + system CPU seconds used so far.
    public var cpuSeconds: Double
    /// Resident set size now, KiB (`VmRSS`).
    public var rssKiB: Int
    /// Peak resident set size, KiB (`VmHWM`).
    public var peakRSSKiB: Int
    /// When it was taken (monotonic ns).
    public var takenAt: UInt64

    /// Reads `/proc/<pid>` (`"self"` for this process); nil when it is gone.
    public static func read(pid: String) -> ProcessSample? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        // Fields after the command name (which may contain spaces) start after ") ".
        guard let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // fields[0] is field 3 (state); utime and stime are fields 14 and 15.
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        func kib(_ key: String) -> Int {
            for line in status.split(separator: "\n") where line.hasPrefix(key) {
                return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "0") ?? 0
            }
            return 0
        }
        return ProcessSample(cpuSeconds: (user + system) / ticks, rssKiB: kib("VmRSS:"), peakRSSKiB: kib("VmHWM:"), takenAt: monotonicNanoseconds())
    }

    /// CPU use between two samples, in percent of one core.
    public static func cpuPercent(from a: ProcessSample, to b: ProcessSample) -> Double {
        let wall = Double(b.takenAt &- a.takenAt) / 1e9
        return wall > 0 ? (b.cpuSeconds - a.cpuSeconds) / wall * 100 : 0
    }
}

/// A `flowsyncd` started by the load tester: on 127.0.0.1, a port the OS picks (read
/// from its "listening on HOST:PORT" line), a temporary data directory, metrics on port
/// 0, and a connection limit above this machine's fd limit so the fd limit is what
/// binds. ``stop()`` always runs (also on error paths) and removes the directory.
public final class DaemonProcess: @unchecked Sendable {
    private let process = Process()
    /// The port it listens on.
    public let port: Int
    private let directory: URL

    /// Starts the daemon at `path` and waits (up to 20 s) for its listening line.
    /// `storage` and `fsync` set `[storage] engine` and `fsync` (nil: the daemon's defaults).
    public init(path: String, storage: String? = nil, fsync: String? = nil) throws {
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw LoadError("no daemon binary at \(path) (build it: swift build -c release --product flowsyncd)")
        }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("flowsync-load-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let config = directory.appendingPathComponent("flowsyncd.toml")
        var toml = """
        # Written by flowsync-load --spawn.
        [limits]
        max_connections = 1000000

        """
        if storage != nil || fsync != nil {
            toml += "[storage]\n"
            if let storage { toml += "engine = \"\(storage)\"\n" }
            if let fsync { toml += "fsync = \"\(fsync)\"\n" }
        }
        try toml.write(to: config, atomically: true, encoding: .utf8)
        let data = directory.appendingPathComponent("data")
        try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
        let arguments = ["--config", config.path, "--host", "127.0.0.1", "--port", "0", "--metrics-port", "0",
                         "--data-dir", data.path, "--log-level", "warning"]
        // If the load tester dies without stopping it (a crash, SIGKILL), the kernel
        // sends the daemon SIGTERM (`setpriv --pdeathsig`, util-linux), so no orphaned
        // daemon is left holding ports and memory.
        let setpriv = "/usr/bin/setpriv"
        if FileManager.default.isExecutableFile(atPath: setpriv) {
            process.executableURL = URL(fileURLWithPath: setpriv)
            process.arguments = ["--pdeathsig", "TERM", "--", path] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: path)
            process.arguments = arguments
        }
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_BACKTRACE"] = "enable=no"
        process.environment = environment
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        // "listening on" and "metrics on" may arrive in one read: take the port from the
        // complete line that names the listener.
        var text = ""
        let handle = out.fileHandleForReading
        let deadline = Date().addingTimeInterval(20)
        func listenLine() -> Substring? {
            text.split(separator: "\n", omittingEmptySubsequences: true).dropLast(text.hasSuffix("\n") ? 0 : 1).first { $0.contains("listening on") }
        }
        while listenLine() == nil, Date() < deadline, process.isRunning {
            let chunk = handle.availableData
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
        }
        guard let line = listenLine(), let portText = line.split(separator: ":").last, let port = Int(portText.trimmingCharacters(in: .whitespaces)) else {
            let output = text
            process.terminate()
            process.waitUntilExit()
            try? FileManager.default.removeItem(at: directory)
            throw LoadError("the daemon did not report its port: \(output)")
        }
        self.port = port
        // Keep draining its stdout so a chatty daemon never blocks on a full pipe.
        handle.readabilityHandler = { h in _ = h.availableData }
    }

    /// The daemon's process ID.
    public var pid: Int32 { process.processIdentifier }

    /// A `/proc` sample of the daemon.
    public func sample() -> ProcessSample? { ProcessSample.read(pid: String(pid)) }

    /// Stops it (SIGTERM, then SIGKILL after 10 s) and removes its directory.
    public func stop() {
        if process.isRunning {
            process.terminate()
            let deadline = Date().addingTimeInterval(10)
            while process.isRunning, Date() < deadline { usleep(10_000) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
        (process.standardOutput as? Pipe)?.fileHandleForReading.readabilityHandler = nil
        try? FileManager.default.removeItem(at: directory)
    }
}

/// A load-run failure with a message for the command line.
public struct LoadError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
