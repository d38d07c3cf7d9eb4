import Foundation

/// `flowsync-load --html FILE`: one self-contained HTML page for a ``LoadReport`` —
/// inline SVG and CSS, no script to run, nothing fetched from the network — so it can
/// be committed, mailed or opened from disk. Pure: the same report gives the same bytes.
///
/// It shows (issue #20):
/// - the latency percentile curves of the measured window, HdrHistogram style (x is
///   1 / (1 − p) on a log axis, so the tail gets the room): write → delivery and
///   write → ack (``ChartID/latencyCurves``);
/// - throughput per second over the run: row changes delivered, deliveries, mutations
///   answered (``ChartID/throughput``), and p99 per second of both latencies
///   (``ChartID/p99``), with the measured window shaded;
/// - connections over time (``ChartID/connections``);
/// - the summary table (the figures of ``LoadReport/table()``), and the report's JSON
///   in a `<script type="application/json" id="report-json">` block (data, not code).
public enum LoadReportPage {
    /// The `id` of each chart's `<svg>`.
    public enum ChartID: String, CaseIterable, Sendable {
        case latencyCurves = "latency-percentiles"
        case throughput = "throughput-per-second"
        case p99 = "p99-per-second"
        case connections = "connections-over-time"
    }

    /// The `data-series` IDs each chart holds, in order.
    public static let seriesIDs: [ChartID: [String]] = [
        .latencyCurves: ["write-to-delivery", "write-to-ack"],
        .throughput: ["row-changes-per-second", "deliveries-per-second", "answered-per-second"],
        .p99: ["p99-write-to-delivery", "p99-write-to-ack"],
        .connections: ["subscribers", "writers"],
    ]

    static let colors = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e"]

    /// The whole page.
    ///
    /// - Complexity: O(timeline samples + curve points).
    public static func html(for report: LoadReport) -> String {
        let c = report.configuration
        let title = "flowsync-load\(report.scenario.map { " — \($0)" } ?? "")"
        var page = """
            <!DOCTYPE html>
            <html lang="en">
            <head>
            <meta charset="utf-8"/>
            <meta name="viewport" content="width=device-width, initial-scale=1"/>
            <title>\(SVGChart.escape(title))</title>
            <style>
            body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 24px auto; max-width: 940px; color: #222; background: #fff; }
            h1 { font-size: 22px; margin-bottom: 4px; }
            p.run { color: #555; margin-top: 0; }
            .verdict-pass { color: #1a7f37; font-weight: bold; }
            .verdict-fail { color: #b42318; font-weight: bold; }
            table { border-collapse: collapse; margin: 12px 0 24px; font-size: 14px; }
            th, td { border-bottom: 1px solid #e4e4e4; padding: 4px 10px; text-align: left; vertical-align: top; }
            td.n { text-align: right; font-variant-numeric: tabular-nums; }
            svg.chart { display: block; margin: 8px 0 20px; border: 1px solid #e4e4e4; }
            pre { font-size: 12px; background: #f6f6f6; padding: 8px; overflow-x: auto; }
            </style>
            </head>
            <body>
            <h1>\(SVGChart.escape(title))</h1>

            """
        let verdict =
            report.passed
            ? "<span class=\"verdict-pass\">PASS</span>"
            : "<span class=\"verdict-fail\">FAIL: \(SVGChart.escape(report.failures.joined(separator: "; ")))</span>"
        page +=
            "<p class=\"run\">\(SVGChart.escape("\(c.lists) list(s) × \(c.subscribersPerList) subscriber(s), \(c.writers) writer(s), rate \(c.rate == 0 ? "closed loop" : LoadReport.number(c.rate) + "/s"), \(c.maxInFlightPerWriter) in flight, \(c.opsPerMutation) op(s)/mutation, \(c.payloadBytes)-byte payloads; measured \(LoadReport.fixed(report.measuredSeconds, 1)) s after \(LoadReport.fixed(c.warmup, 1)) s warm-up; started \(report.startedAt)")) — \(verdict)</p>\n"
        page += summaryTable(report)
        for chart in charts(report) { page += chart.render() + "\n" }
        page +=
            "<details><summary>The summary as flowsync-load prints it</summary>\n<pre>\(SVGChart.escape(report.table()))</pre>\n</details>\n"
        // Inert data (a JSON script block is never executed). "<" only occurs inside JSON
        // strings, where \u003c means the same: the block cannot end early.
        page +=
            "<script type=\"application/json\" id=\"report-json\">\(report.json().replacingOccurrences(of: "<", with: "\\u003c"))</script>\n"
        page += "</body>\n</html>\n"
        return page
    }

    /// The four charts, in page order.
    public static func charts(_ report: LoadReport) -> [SVGChart] {
        let l = report.latency
        // Percentile curves: x = 1 / (1 − p); the max (p = 100) one decade past the last point.
        func curve(_ points: [PercentilePoint]) -> [(x: Double, y: Double?)] {
            let finite = points.filter { $0.percentile < 100 }.map {
                (x: 1 / (1 - $0.percentile / 100), y: Optional($0.microseconds / 1_000))
            }
            let maxPoint = points.last { $0.percentile >= 100 }.map {
                (x: (finite.last?.x ?? 1) * 10, y: Optional($0.microseconds / 1_000))
            }
            return finite + (maxPoint.map { [$0] } ?? [])
        }
        let delivery = curve(l.writeToDeliveryCurve), ack = curve(l.writeToAckCurve)
        let lastX = max(delivery.last?.x ?? 1, ack.last?.x ?? 1)
        // Percentile ticks up to the last finite point (the max sits a decade past it).
        var ticks = [
            (1.0, "0%"), (2, "50%"), (10, "90%"), (100, "99%"), (1_000, "99.9%"), (10_000, "99.99%"),
            (100_000, "99.999%"), (1_000_000, "99.9999%"),
        ]
        .filter { $0.0 <= lastX / 10 }.map { SVGChart.Tick($0.0, $0.1) }
        if lastX > 1 { ticks.append(SVGChart.Tick(lastX, "max")) }
        var latency = SVGChart(
            id: ChartID.latencyCurves.rawValue, title: "Latency by percentile (measured window)",
            xLabel: "percentile", yLabel: "latency (ms)",
            series: [
                .init(
                    id: "write-to-delivery", label: "write → delivery (every subscriber)", color: colors[0],
                    points: delivery),
                .init(id: "write-to-ack", label: "write → ack", color: colors[1], points: ack),
            ])
        latency.xScale = .log10
        latency.xTicks = ticks
        latency.yFormat = { milliseconds($0) }

        let t = report.timeline
        let window = t.filter { $0.phase == .measure }.map(\.seconds)
        // Shaded from the start of the second in which the window opened (samples are
        // one second apart, each at the end of its second).
        let band = window.first.map { first in (from: max(0, first - 1), to: window.last!, label: "measured window") }
        func timeSeries(
            _ id: String, _ label: String, _ color: String, _ value: (TimelineSample) -> Double?
        ) -> SVGChart.Series {
            .init(id: id, label: label, color: color, points: t.map { (x: $0.seconds, y: value($0)) })
        }
        var throughput = SVGChart(
            id: ChartID.throughput.rawValue, title: "Throughput per second",
            xLabel: "seconds since the subscribers began to connect",
            yLabel: "per second (log)",
            series: [
                timeSeries("row-changes-per-second", "row changes delivered/s", colors[0]) { $0.rowChangesPerSecond },
                timeSeries("deliveries-per-second", "deliveries (frames × subscribers)/s", colors[2]) {
                    $0.deliveriesPerSecond
                },
                timeSeries("answered-per-second", "mutations answered/s", colors[3]) { $0.answeredPerSecond },
            ])
        throughput.yScale = .log10
        throughput.band = band
        throughput.xIncludes = [0]
        var p99 = SVGChart(
            id: ChartID.p99.rawValue, title: "p99 latency per second",
            xLabel: "seconds since the subscribers began to connect",
            yLabel: "p99 (ms)",
            series: [
                timeSeries("p99-write-to-delivery", "p99 write → delivery", colors[0]) {
                    $0.p99WriteToDeliveryMicroseconds.map { $0 / 1_000 }
                },
                timeSeries("p99-write-to-ack", "p99 write → ack", colors[1]) {
                    $0.p99WriteToAckMicroseconds.map { $0 / 1_000 }
                },
            ])
        p99.band = band
        p99.xIncludes = [0]
        p99.yFormat = { milliseconds($0) }
        var connections = SVGChart(
            id: ChartID.connections.rawValue, title: "Connections over time",
            xLabel: "seconds since the subscribers began to connect",
            yLabel: "connections ready",
            series: [
                timeSeries("subscribers", "subscribers (max \(t.map(\.subscribers).max() ?? 0))", colors[0]) {
                    Double($0.subscribers)
                },
                timeSeries("writers", "writers (max \(t.map(\.writers).max() ?? 0))", colors[3]) { Double($0.writers) },
            ])
        connections.band = band
        connections.xIncludes = [0]
        return [latency, throughput, p99, connections]
    }

    /// The summary table: the figures ``LoadReport/table()`` prints.
    static func summaryTable(_ r: LoadReport) -> String {
        func row(_ name: String, _ value: String) -> String {
            "<tr><th>\(SVGChart.escape(name))</th><td>\(SVGChart.escape(value))</td></tr>\n"
        }
        var html = "<table class=\"summary\">\n"
        html += row(
            "connections",
            "\(r.connections.subscribers) subscribers, \(r.connections.writers) writers, \(r.connections.failed) failed, \(r.connections.closedByDaemon) closed by the daemon, \(r.connections.reconnects) reconnects"
        )
        for e in r.endpoints {
            html += row(
                "on \(e.endpoint)",
                "\(e.subscribers) subscribers, \(e.writers) writers (\(e.readyAtWindowEnd) connected at the window's end)"
            )
        }
        html += row(
            "mutations",
            "sent \(r.mutations.sent) (\(LoadReport.number(r.mutations.sentPerSecond))/s), acked \(r.mutations.acked) (\(LoadReport.number(r.mutations.ackedPerSecond))/s), rejected \(r.mutations.rejected), lost acks \(r.mutations.lostAcks)"
        )
        html += row(
            "committed (daemon)",
            "\(LoadReport.number(r.mutations.committedPerSecond)) mutations/s in \(r.deliveries.batches) batches (\(LoadReport.number(r.deliveries.batchesPerSecond))/s)"
        )
        html += row(
            "deliveries (frames × subscribers)",
            "\(r.deliveries.frames) (\(LoadReport.number(r.deliveries.framesPerSecond))/s), catch-up diffs \(r.deliveries.catchUpDiffs), snapshots \(r.deliveries.snapshots)"
        )
        html += row(
            "row changes delivered",
            "\(r.deliveries.rowChanges) (\(LoadReport.number(r.deliveries.rowChangesPerSecond))/s)")
        html += row(
            "bytes received",
            "\(LoadReport.number(Double(r.bytes.wire))) on the wire, \(LoadReport.number(Double(r.bytes.raw))) raw, ratio \(LoadReport.fixed(r.bytes.ratio, 2)), \(LoadReport.number(r.bytes.wirePerSecond)) B/s"
        )
        if let p = r.daemon.process {
            html += row(
                "daemon",
                "CPU \(LoadReport.fixed(p.cpuPercent, 0))% of a core, RSS \(p.rssKiB) KiB (peak \(p.peakRSSKiB) KiB)")
        }
        html += row(
            "load tool", "CPU \(LoadReport.fixed(r.loadTool.cpuPercent, 0))% of a core, RSS \(r.loadTool.rssKiB) KiB")
        html += row(
            "checks",
            "divergences \(r.checks.divergences); full compare \(r.checks.fullCompared) replicas, \(r.checks.fullCompareMismatches) mismatches; gaps \(r.checks.gaps), digest mismatches \(r.checks.digestMismatches), protocol errors \(r.checks.protocolErrors)"
        )
        html +=
            "</table>\n<table class=\"latency\">\n<tr><th>latency (ms)</th><th>count</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max</th></tr>\n"
        var latencies = [("write → delivery (every subscriber)", r.latency.writeToDelivery)]
        if let cross = r.latency.crossEndpointDelivery, let same = r.latency.sameEndpointDelivery {
            latencies += [("write on A → delivery on B", cross), ("write and delivery on one endpoint", same)]
        }
        latencies += [("write → ack", r.latency.writeToAck), ("send → ack (service time)", r.latency.sendToAck)]
        for (name, s) in latencies {
            html +=
                "<tr><th>\(SVGChart.escape(name))</th><td class=\"n\">\(s.count)</td>"
                + [s.p50, s.p90, s.p99, s.p999, s.max].map { "<td class=\"n\">\(LoadReport.fixed($0 / 1_000, 2))</td>" }
                .joined() + "</tr>\n"
        }
        return html + "</table>\n"
    }

    /// Milliseconds for an axis: 0.25, 3, 40, 1.2 k.
    static func milliseconds(_ value: Double) -> String {
        value >= 1_000
            ? LoadReport.number(value)
            : value >= 10 || value == value.rounded()
                ? String(Int(value.rounded())) : String(format: value >= 1 ? "%.1f" : "%.2f", value)
    }
}
