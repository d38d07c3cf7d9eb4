import Foundation

/// CPU time and memory of one process, read from `/proc` (Linux).
public struct ProcessSample: Sendable {
    /// User + system CPU seconds used so far.
    public var cpuSeconds: Double
    /// Resident set size now, KiB (`VmRSS`).
    public var rssKiB: Int
    /// Peak resident set size, KiB (`VmHWM`).
    public var peakRSSKiB: Int
    /// When it was taken.
    public var takenAt: ContinuousClock.Instant
    /// The user part of ``cpuSeconds`` (the process's own code, not the kernel's on its
    /// behalf): what a change to the daemon's Swift code moves, when the kernel's send
    /// path is most of the total.
    public var userSeconds: Double = 0

    /// Reads `/proc/<pid>` (`"self"` for this process); nil when it is gone.
    public static func read(pid: String) -> ProcessSample? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        else { return nil }
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
        return ProcessSample(
            cpuSeconds: (user + system) / ticks, rssKiB: kib("VmRSS:"), peakRSSKiB: kib("VmHWM:"), takenAt: .now,
            userSeconds: user / ticks)
    }

    /// CPU use between two samples, in percent of one core.
    public static func cpuPercent(from a: ProcessSample, to b: ProcessSample) -> Double {
        let elapsed = a.takenAt.duration(to: b.takenAt)
        let wall = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return wall > 0 ? (b.cpuSeconds - a.cpuSeconds) / wall * 100 : 0
    }
}
