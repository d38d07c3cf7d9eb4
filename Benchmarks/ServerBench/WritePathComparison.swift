// `flowsync-server-bench --compare-write-paths [--quick] [--rounds N]`: the daemon's
// fan-out through `write_path = "libuv"` against `write_path = "io_uring"`, in one run
// (issue #20). Each round starts a fresh release flowsyncd per path, in alternating
// order (libuv first in odd rounds, io_uring first in even ones), connects 1,000 light
// subscribers to one list and runs the closed-loop writer for 5 s; the figure is
// deliveries per daemon CPU-second (the daemon's user + system time from /proc over the
// interval), independent of how the daemon shares the cores. Before the rounds, the raw
// libuv write rate of the same machine state (`--write-baseline`'s libuv path) is the
// reference of issue #20's "≥ 90 %" target.
import FlowSyncProcess
import FlowSyncTestSupport
import Foundation
#if canImport(Glibc)
import Glibc
#endif

func loadAverage() -> String {
    (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)).map { $0.split(separator: " ").prefix(3).joined(separator: " ") } ?? "?"
}

func compareWritePaths() async throws -> Int32 {
    let subscribersPerRun = quick ? 50 : 1_000
    let duration = quick ? 1.0 : 5.0
    let rounds = arguments.firstIndex(of: "--rounds").flatMap { Int(arguments[$0 + 1]) } ?? 2
    say("# flowsync-server-bench --compare-write-paths\(quick ? " (quick)" : "")\n")
    say("Started \(Date()) UTC; load average \(loadAverage()).\n")
    say("## Raw write baseline (libuv and io_uring, no daemon)\n")
    _ = try await WriteBaseline.run(arguments: arguments, quick: quick, rounds: 1)
    say("\nLoad average after the baseline: \(loadAverage()).\n")
    say("## Fan-out through the daemon, \(subscribersPerRun) subscribers, by write path\n")
    say("| round | write path | subscribers | batches | batches/s | frame deliveries/s | row changes delivered/s | p50 write→ack | daemon CPU | deliveries per daemon CPU-s | CPU per delivery | checked replica |")
    say("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    var figures: [String: [Double]] = [:]
    var allOK = true
    for round in 1...rounds {
        let order = round % 2 == 1 ? ["libuv", "io_uring"] : ["io_uring", "libuv"]
        for path in order {
            let daemon = try await startDaemon(configText: "[server]\nwrite_path = \"\(path)\"\n")
            do {
                let writer = try await TestClient.connect(port: daemon.port, on: thread, clientID: "writer-\(path)-\(round)")
                let row = try await fanOutRow(daemon: daemon, writer: writer, count: subscribersPerRun, list: "fan-\(path)-\(round)", duration: duration)
                say("| \(round) | \(path) " + row.line)
                figures[path, default: []].append(row.perCPUSecond)
                allOK = allOK && row.ok
                writer.close()
            } catch {
                await daemon.terminate()
                throw error
            }
            // The subscribers' connections end with the daemon.
            await daemon.terminate()
            try await Task.sleep(for: .milliseconds(500))
        }
    }
    say("\nLoad average at the end: \(loadAverage()).\n")
    let libuv = figures["libuv"] ?? []
    let ring = figures["io_uring"] ?? []
    if let l = libuv.min(), let L = libuv.max(), let r = ring.min(), let R = ring.max(), l > 0 {
        say("io_uring ÷ libuv, deliveries per daemon CPU-second: \(String(format: "%.2f", r / L))–\(String(format: "%.2f", R / l))× (worst pairing to best); medians \(format(median(libuv))) vs \(format(median(ring))): \(String(format: "%.2f", median(ring) / median(libuv)))×")
    }
    _ = thread.shutdown()
    return allOK ? 0 : 1
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return 0 }
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}
