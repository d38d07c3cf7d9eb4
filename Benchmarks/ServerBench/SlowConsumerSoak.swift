// flowsync-server-bench --slow-consumer-soak [--rounds 20] [--rows 64] [--row-bytes 16384]
//     [--pause 4] [--writing 5] [--limit-mib 64] [--returned-mib 16] [--one-daemon] [--config-text T]
// Issue #33, item 8: the slow-consumer case, many times, with the daemon's peak RSS bounded
// every time and memory returned after (SlowConsumerRound in FlowSyncTestSupport; the
// in-suite test runs a few rounds of the same case).
import FlowSyncLoop
import FlowSyncProcess
import FlowSyncTestSupport
import Foundation

enum SlowConsumerSoak {
    static func run(arguments: [String], daemonPath: String, thread: EventLoopThread) async throws -> Int32 {
        func value(_ flag: String) -> String? {
            arguments.firstIndex(of: flag).flatMap { $0 + 1 < arguments.count ? arguments[$0 + 1] : nil }
        }
        let rounds = value("--rounds").flatMap(Int.init) ?? 20
        var p = SlowConsumerRound.Parameters()
        if let v = value("--rows").flatMap(Int.init) { p.rows = v }
        if let v = value("--row-bytes").flatMap(Int.init) { p.rowBytes = v }
        if let v = value("--pause").flatMap(Double.init) { p.pause = v }
        if let v = value("--writing").flatMap(Double.init) { p.writing = v }
        if let v = value("--window").flatMap(Int.init) { p.writeWindow = v }
        let limit = value("--limit-mib").flatMap(Double.init) ?? 64
        let returned = value("--returned-mib").flatMap(Double.init) ?? 16
        let oneDaemon = arguments.contains("--one-daemon")
        // Harsher than the issue's case by default: 2 MiB of history in memory (instead of
        // 64 MiB), so the paused subscribers fall further behind than the history in every
        // round — the path of the one run in five that took 577 MiB, which on a quiet
        // machine needs a writer fast enough to outrun 64 MiB in the pause. `--config-text
        // ''` runs the shipped defaults.
        let configText = (value("--config-text") ?? "[history]\\nmax_bytes = 2097152")
            .replacingOccurrences(of: "\\n", with: "\n")
        say("# flowsync-server-bench --slow-consumer-soak\n")
        say(
            "Release flowsyncd (\(daemonPath)), file store, fsync always\(configText.isEmpty ? ", shipped defaults" : ", config: `\(configText.replacingOccurrences(of: "\n", with: "; "))`"), \(oneDaemon ? "one daemon for every round" : "a fresh daemon per round"). Per round: one list of \(p.rows) rows × \(p.rowBytes) random bytes; a writer replaces rows for \(p.writing) s with \(p.writeWindow) writes unanswered; \(p.fastSubscribers) subscriber reads everything, \(p.pausedSubscribers) with SO_RCVBUF \(p.receiveBufferBytes) stop reading for \(p.pause) s, \(p.deadSubscribers) never read. Bound: peak ≤ baseline + \(Int(limit)) MiB, after ≤ baseline + \(Int(returned)) MiB.\n"
        )
        say(
            "| round | batches | baseline | peak | rise | after (1.5 s) | returned | catch-up snapshots per paused subscriber | diffs between them | paused diffs | paused bytes | fast diffs | errors | caught up after | s |"
        )
        say("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        var failures = 0
        var rises: [Double] = []
        var shared: DaemonProcess?
        func start() async throws -> DaemonProcess {
            var options = DaemonProcess.Options(binary: daemonPath)
            // `--wrapper "heaptrack -o /tmp/profile"`: the daemon under a profiler (its RSS
            // figures are then the wrapper's, not the daemon's).
            if let wrapper = value("--wrapper")?.split(separator: " ").map(String.init), let tool = wrapper.first {
                options.binary = tool
                options.prefixArguments = Array(wrapper.dropFirst()) + [daemonPath]
            }
            if !configText.isEmpty { options.configText = configText }
            if let level = ProcessInfo.processInfo.environment["FLOWSYNC_ROUND_LOG_LEVEL"] { options.logLevel = level }
            return try await DaemonProcess.start(options)
        }
        // `--attach PORT,PID`: rounds against a daemon started elsewhere (under heaptrack).
        let attached = value("--attach").map { $0.split(separator: ",").compactMap { Int($0) } }
        if oneDaemon && attached == nil { shared = try await start() }
        for round in 1...rounds {
            var daemon: DaemonProcess?
            let target: SlowConsumerRound.Target
            if let attached, attached.count == 2 {
                target = SlowConsumerRound.Target(port: attached[0], pid: Int32(attached[1]))
            } else {
                let started: DaemonProcess
                if let shared { started = shared } else { started = try await start() }
                if shared == nil { daemon = started }
                target = SlowConsumerRound.Target(port: started.port, pid: started.pid)
            }
            let figures: SlowConsumerRound.Figures
            do {
                figures = try await SlowConsumerRound.run(
                    daemon: target, thread: thread, list: "soak-\(round)", parameters: p, seed: UInt64(round))
            } catch {
                say("| \(round) | failed: \(error) | | | | | | | | | | |")
                failures += 1
                if let daemon { _ = await daemon.terminate() }
                continue
            }
            if let daemon {
                _ = await daemon.terminate()
                if ProcessInfo.processInfo.environment["FLOWSYNC_ROUND_LOG_LEVEL"] != nil { progress(daemon.output) }
            }
            let ok = figures.peakRiseMiB <= limit && figures.afterRiseMiB <= returned && figures.errors.isEmpty
            if !ok { failures += 1 }
            rises.append(figures.peakRiseMiB)
            func mib(_ kib: Int) -> String { String(format: "%.1f MiB", Double(kib) / 1024) }
            say(
                "| \(round)\(ok ? "" : " **over**") | \(figures.batches) | \(mib(figures.baselineKiB)) | \(mib(figures.peakKiB)) | +\(String(format: "%.1f", figures.peakRiseMiB)) MiB | \(mib(figures.afterKiB)) | \(String(format: "%+.1f", figures.afterRiseMiB)) MiB | \(figures.catchUpSnapshots.map(String.init).joined(separator: ", ")) (\(Set(figures.catchUpReasons.map { "\($0)" }).sorted().joined(separator: ", "))) | \(figures.diffsBetweenSnapshots ? "yes" : "no") | \(figures.pausedDiffs.map(String.init).joined(separator: ", ")) | \(zip(figures.pausedBytes, figures.pausedClosed).map { "\($0.0 / 1024) KiB\($0.1 ? " closed" : "")" }.joined(separator: ", ")) | \(figures.fastDiffs) | \(figures.errors.isEmpty ? "none" : "\(figures.errors)") | \(String(format: "%.1f", figures.catchUpSeconds)) s | \(String(format: "%.1f", figures.seconds)) |"
            )
        }
        if let shared { _ = await shared.terminate() }
        rises.sort()
        if !rises.isEmpty {
            say(
                "\n\(rounds) rounds, \(failures) over the bound; peak rise min \(String(format: "%.1f", rises.first!)) MiB, median \(String(format: "%.1f", rises[rises.count / 2])) MiB, max \(String(format: "%.1f", rises.last!)) MiB."
            )
        }
        return failures == 0 ? 0 : 1
    }
}
