// flowsync-server-bench --million-lists [--count 1000000] [--reuse DIR] [--keep]
// Issue #33, item 9: the shipped config/flowsyncd.toml starting on a store of a million
// lists (StoredListsLayout: each a section and four rows in five batches, then a clean
// stop), one of them damaged. Measures spawn → listening and the daemon's RSS then (and
// its peak so far), serves a few lists, and waits for the background check to report
// the damaged one: a log line, the refusal of that list (5002), the others served.
import FlowSyncCore
import FlowSyncLoop
import FlowSyncProcess
import FlowSyncProtocol
import FlowSyncTestSupport
import Foundation

enum MillionListsBench {
    static func run(arguments: [String], daemonPath: String) async throws -> Int32 {
        func value(_ flag: String) -> String? {
            arguments.firstIndex(of: flag).flatMap { $0 + 1 < arguments.count ? arguments[$0 + 1] : nil }
        }
        let count = value("--count").flatMap(Int.init) ?? 1_000_000
        let damagedIndex = count * 7 / 9
        let damagedName = StoredListsLayout.name(damagedIndex)
        let directory = value("--reuse") ?? (NSTemporaryDirectory() + "flowsync-million-\(UUID().uuidString)")
        if value("--reuse") == nil {
            let began = now()
            try StoredListsLayout.write(count: count, into: directory) { progress("\($0) lists written") }
            progress("wrote \(count) lists in \(String(format: "%.0f", now() - began)) s into \(directory)")
            // One list damaged after the clean stop: a byte of its last record flipped.
            let listDirectory = directory + "/lists/" + damagedName
            let segment = try FileManager.default.contentsOfDirectory(atPath: listDirectory).first {
                $0.hasSuffix(".fsl")
            }!
            var bytes = [UInt8](FileManager.default.contents(atPath: listDirectory + "/" + segment)!)
            bytes[bytes.count - 3] ^= 0xFF
            try Data(bytes).write(to: URL(fileURLWithPath: listDirectory + "/" + segment))
        }
        defer {
            if !arguments.contains("--keep") && value("--reuse") == nil {
                try? FileManager.default.removeItem(atPath: directory)
            }
        }
        let config = BuiltProduct.root.appendingPathComponent("config/flowsyncd.toml").path
        say("# flowsync-server-bench --million-lists\n")
        say(
            "Release flowsyncd with the shipped `config/flowsyncd.toml` (`--config`; the launcher adds `--host 127.0.0.1 --port 0 --data-dir DIR --no-metrics --log-level info`), on a data directory of \(count) stored lists after a clean stop (each a section and four rows in five batches), one of them (`\(damagedName)`) damaged (a byte of its last record flipped). Start = spawn to the listening line.\n"
        )
        let thread = try EventLoopThread()
        defer { _ = thread.shutdown() }
        var options = DaemonProcess.Options(binary: daemonPath, dataDirectory: directory, config: config)
        options.startTimeout = .seconds(600)
        options.logLevel = "info"
        let began = now()
        let daemon = try await DaemonProcess.start(options)
        let start = now() - began
        let atListening = daemon.sample()
        try await Task.sleep(for: .milliseconds(1_000))
        let afterOneSecond = daemon.sample()
        func mib(_ kib: Int?) -> String { kib.map { String(format: "%.1f MiB", Double($0) / 1024) } ?? "?" }
        say("| stored lists | start to listening | RSS at listening | peak RSS at listening | RSS 1 s later |")
        say("| --- | --- | --- | --- | --- |")
        say(
            "| \(count) | \(String(format: "%.3f s", start)) | \(mib(atListening?.rssKiB)) | \(mib(atListening?.peakRSSKiB)) | \(mib(afterOneSecond?.rssKiB)) |"
        )
        // A few healthy lists are served at once.
        let client = try await TestClient.connect(port: daemon.port, on: thread, clientID: "bench")
        var served: [String] = []
        for k in [0, count / 2, count - 1] {
            let list = StoredListsLayout.name(k)
            let sent = now()
            client.send(.subscribe(Subscribe(listName: list)))
            let reply = await client.waitFor(timeout: 30) { m in
                if case .snapshot(let s) = m { return s.listName == list }
                if case .error(let e) = m { return e.listName == list }
                return false
            }
            if case .snapshot(let s)? = reply {
                served.append(
                    "`\(list)` v\(s.position.version) (\(s.sections.first?.rows.count ?? 0) rows) in \(String(format: "%.1f ms", (now() - sent) * 1000))"
                )
            } else {
                served.append("`\(list)`: \(String(describing: reply))")
            }
        }
        say("\nServed while the check runs: \(served.joined(separator: ", ")).\n")
        // The background check: wait for its end (its log line), sampling the RSS.
        let checkBegan = now()
        var peakKiB = 0
        var finished = false
        let limit = value("--check-wait").flatMap(Double.init) ?? 900
        while now() - checkBegan < limit {
            if let s = daemon.sample() { peakKiB = max(peakKiB, s.rssKiB) }
            if daemon.output.contains("stored lists checked") {
                finished = true
                break
            }
            try await Task.sleep(for: .milliseconds(200))
        }
        let damageLine = daemon.output.split(separator: "\n").first { $0.contains("stored list damaged") }
        let checkedLine = daemon.output.split(separator: "\n").first { $0.contains("stored lists checked") }
        say(
            "Background check: \(finished ? "finished" : "not finished after \(Int(limit)) s") about \(String(format: "%.0f", now() - checkBegan + 1)) s after the listening line; RSS at most \(mib(peakKiB)) meanwhile; its line: `\(checkedLine.map(String.init) ?? "none")`.\n"
        )
        let progressLines = daemon.output.split(separator: "\n").filter { $0.contains("stored lists check progress") }
        if let last = progressLines.last { say("Its last progress line: `\(last)`.\n") }
        say("The damaged list's report: `\(damageLine.map(String.init) ?? "none")`.\n")
        // A fresh connection: the first one was silent longer than the heartbeat allows.
        client.close()
        let asker = try await TestClient.connect(port: daemon.port, on: thread, clientID: "bench-2")
        asker.send(.subscribe(Subscribe(listName: damagedName)))
        let refusal = await asker.waitFor(timeout: 30) { m in
            if case .error(let e) = m { return e.listName == damagedName }
            if case .snapshot(let s) = m { return s.listName == damagedName }
            return false
        }
        if case .error(let e)? = refusal {
            say(
                "A subscribe to `\(damagedName)` then: error \(e.code.rawValue) (\(e.code)): \(e.message.prefix(160))…\n"
            )
        } else {
            say("A subscribe to `\(damagedName)` then: \(String(describing: refusal)) (not refused!)\n")
        }
        asker.close()
        // SIGKILL, not a clean stop: a clean stop on demand records every list of the
        // start manifest again (decoding each), which at a million lists outlasts the
        // launcher's grace period (docs/BENCHMARKS.md says so); the directory is thrown
        // away or reused as it is (STOPPED and RUNNING: the recorded lists stay exact).
        _ = await daemon.kill9()
        let ok = start <= 0.5 && (atListening?.rssKiB ?? .max) <= 100 * 1000 && finished && damageLine != nil
        say("Target (≤ 0.5 s, ≤ 100 MB at listening, the damage reported): \(ok ? "met" : "**not met**").")
        return ok ? 0 : 1
    }
}
