// `flowsync-server-bench --compare-write-paths [--quick] [--rounds N]`: the daemon's
// fan-out through `write_path = "libuv"` against `write_path = "io_uring"`, in one run
// (issue #20). Each round starts a fresh release flowsyncd per path, in alternating
// order (libuv first in odd rounds, io_uring first in even ones), connects 1,000 light
// subscribers to one list and runs the closed-loop writer for 5 s; the figure is
// deliveries per daemon CPU-second (the daemon's user + system time from /proc over the
// interval), independent of how the daemon shares the cores. Before the rounds, the raw
// libuv write rate of the same machine state (`--write-baseline`'s libuv path) is the
// reference of issue #20's "≥ 90 %" target.
//
// `--compare-daemons BASE,NEW [--write-path P]`: the same rounds, but the two runs of a
// round are two `flowsyncd` binaries (say main's and a branch's) on one write path
// (libuv unless given), alternating which goes first: a before/after in one run.
import FlowSyncProcess
import FlowSyncTestSupport
import Foundation

#if canImport(Glibc)
import Glibc
#endif

func loadAverage() -> String {
    (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)).map {
        $0.split(separator: " ").prefix(3).joined(separator: " ")
    } ?? "?"
}

func compareWritePaths() async throws -> Int32 {
    let subscribersPerRun = quick ? 50 : 1_000
    let duration = quick ? 1.0 : 5.0
    let rounds = arguments.firstIndex(of: "--rounds").flatMap { Int(arguments[$0 + 1]) } ?? 2
    // The two variants of each round: (label, flowsyncd binary, write path).
    let variants: [(label: String, binary: String, path: String)]
    if let i = arguments.firstIndex(of: "--compare-daemons") {
        let binaries = arguments[i + 1].split(separator: ",").map(String.init)
        guard binaries.count == 2 else { fatalError("--compare-daemons BASE,NEW") }
        let path = arguments.firstIndex(of: "--write-path").map { arguments[$0 + 1] } ?? "libuv"
        variants = [("base", binaries[0], path), ("new", binaries[1], path)]
        say("# flowsync-server-bench --compare-daemons\(quick ? " (quick)" : "")\n")
        say("base: \(binaries[0])  \nnew: \(binaries[1])  \nwrite path: \(path)\n")
    } else {
        variants = [("libuv", daemonPath, "libuv"), ("io_uring", daemonPath, "io_uring")]
        say("# flowsync-server-bench --compare-write-paths\(quick ? " (quick)" : "")\n")
    }
    say("Started \(Date()) UTC; load average \(loadAverage()).\n")
    say("## Raw write baseline (libuv and io_uring, no daemon)\n")
    _ = try await WriteBaseline.run(arguments: arguments, quick: quick, rounds: 1)
    say("\nLoad average after the baseline: \(loadAverage()).\n")
    say(
        "## Fan-out through the daemon, \(subscribersPerRun) subscribers, by \(variants[0].label == "base" ? "daemon" : "write path")\n"
    )
    say(
        "| round | \(variants[0].label == "base" ? "daemon" : "write path") | subscribers | batches | batches/s | frame deliveries/s | row changes delivered/s | p50 write→ack | daemon CPU | deliveries per daemon CPU-s | CPU per delivery | of which user | checked replica |"
    )
    say("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    var figures: [String: [Double]] = [:]
    var userFigures: [String: [Double]] = [:]
    var allOK = true
    for round in 1...rounds {
        let order = round % 2 == 1 ? variants : variants.reversed()
        for (label, binary, path) in order {
            let daemon = try await startDaemon(configText: "[server]\nwrite_path = \"\(path)\"\n", binary: binary)
            do {
                let writer = try await TestClient.connect(
                    port: daemon.port, on: thread, clientID: "writer-\(label)-\(round)")
                let row = try await fanOutRow(
                    daemon: daemon, writer: writer, count: subscribersPerRun, list: "fan-\(label)-\(round)",
                    duration: duration)
                say("| \(round) | \(label) " + row.line)
                figures[label, default: []].append(row.perCPUSecond)
                userFigures[label, default: []].append(row.userPerDelivery)
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
    if variants[0].label == "base" {
        // Again after the rounds: how much the machine's state moved meanwhile.
        say("\nLoad average after the rounds: \(loadAverage()).\n")
        say("## Raw write baseline again (after the rounds)\n")
        _ = try await WriteBaseline.run(arguments: arguments, quick: quick, rounds: 1)
    }
    say("\nLoad average at the end: \(loadAverage()).\n")
    let libuv = figures[variants[0].label] ?? []
    let ring = figures[variants[1].label] ?? []
    if let l = libuv.min(), let L = libuv.max(), let r = ring.min(), let R = ring.max(), l > 0 {
        say(
            "\(variants[1].label) ÷ \(variants[0].label), deliveries per daemon CPU-second: \(String(format: "%.2f", r / L))–\(String(format: "%.2f", R / l))× (worst pairing to best); medians \(format(median(libuv))) vs \(format(median(ring))): \(String(format: "%.2f", median(ring) / median(libuv)))×"
        )
    }
    let userA = userFigures[variants[0].label] ?? [], userB = userFigures[variants[1].label] ?? []
    if !userA.isEmpty, !userB.isEmpty {
        say(
            "Daemon user CPU per delivery, medians: \(variants[0].label) \(String(format: "%.2f", median(userA))) µs, \(variants[1].label) \(String(format: "%.2f", median(userB))) µs"
        )
    }
    _ = thread.shutdown()
    return allOK ? 0 : 1
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return 0 }
    return sorted.count % 2 == 1
        ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}
