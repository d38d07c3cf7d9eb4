import Foundation
import Testing

@testable import FlowSyncLoad

#if canImport(FoundationXML)
import FoundationXML
#endif

/// `flowsync-load --html`: the page and its charts, checked without a browser (the
/// browser renders it in ``ReportPageBrowserTests``).
@Suite(.timeLimit(.minutes(2))) struct ReportPageTests {
    /// A report as a run fills it, from fixed data: a uniform 1–10,000 µs spread for
    /// write → delivery, 1–5,000 µs for write → ack, and 12 seconds of timeline (connect,
    /// warm-up, 7 measured seconds with one that recorded no ack, drain).
    static func sampleReport(scenario: String = "fanout") -> LoadReport {
        var c = LoadConfiguration()
        c.lists = 1
        c.subscribersPerList = 1_000
        c.writers = 1
        var report = LoadReport(configuration: c)
        report.scenario = scenario
        report.startedAt = "2026-11-24T09:00:00Z"
        report.measuredSeconds = 7
        var delivery = LatencyRecorder(), ack = LatencyRecorder()
        for us in 1...10_000 { delivery.record(nanoseconds: Int64(us) * 1_000) }
        for us in 1...5_000 { ack.record(nanoseconds: Int64(us) * 1_000) }
        report.latency.writeToDelivery = delivery.summary
        report.latency.writeToAck = ack.summary
        report.latency.writeToDeliveryCurve = delivery.percentileCurve()
        report.latency.writeToAckCurve = ack.percentileCurve()
        report.connections.subscribers = 1_000
        report.connections.writers = 1
        report.timeline = (0...11).map { k in
            let s = Double(k)
            switch k {
            case 0...2:
                return TimelineSample(
                    seconds: s, phase: .connect, subscribers: k * 400 > 1_000 ? 1_000 : k * 400, writers: k == 2 ? 1 : 0
                )
            case 3: return TimelineSample(seconds: s, phase: .warmUp, subscribers: 1_000, writers: 1)
            case 11: return TimelineSample(seconds: s, phase: .drain, subscribers: 1_000, writers: 1)
            default:
                return TimelineSample(
                    seconds: s, phase: .measure, subscribers: 1_000, writers: 1, answeredPerSecond: 400 + s,
                    deliveriesPerSecond: 40_000 + s * 100, rowChangesPerSecond: 4_000_000 + s * 1_000,
                    p99WriteToDeliveryMicroseconds: 20_000 + s * 500,
                    p99WriteToAckMicroseconds: k == 7 ? nil : 15_000 + s * 400)
            }
        }
        report.judge()
        return report
    }

    /// Each `<svg>…</svg>` of a page.
    static func svgs(in html: String) -> [String] {
        var result: [String] = []
        var rest = html[...]
        while let open = rest.range(of: "<svg "),
            let close = rest.range(of: "</svg>", range: open.upperBound..<rest.endIndex)
        {
            result.append(String(rest[open.lowerBound..<close.upperBound]))
            rest = rest[close.upperBound...]
        }
        return result
    }

    /// A chart's series: `data-series` → (declared `data-points`, the (x, y) pairs drawn).
    static func series(in svg: String) throws -> [String: (declared: Int, points: [(Double, Double)])] {
        final class Collector: NSObject, XMLParserDelegate {
            var found: [String: (declared: Int, points: [(Double, Double)])] = [:]
            var current: String?
            var failure: String?
            func parser(
                _ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                attributes: [String: String] = [:]
            ) {
                if name == "g", let id = attributes["data-series"] {
                    current = id
                    found[id] = (Int(attributes["data-points"] ?? "") ?? -1, [])
                } else if let id = current, name == "polyline" {
                    for pair in (attributes["points"] ?? "").split(separator: " ") {
                        let xy = pair.split(separator: ",").compactMap { Double($0) }
                        if xy.count == 2 {
                            found[id]!.points.append((xy[0], xy[1]))
                        } else {
                            failure = "bad point \(pair) in \(id)"
                        }
                    }
                } else if let id = current, name == "circle", let x = Double(attributes["cx"] ?? ""),
                    let y = Double(attributes["cy"] ?? "")
                {
                    found[id]!.points.append((x, y))
                }
            }
            func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?)
            {
                if name == "g" { current = nil }
            }
        }
        let parser = XMLParser(data: Data(svg.utf8))
        let collector = Collector()
        parser.delegate = collector
        let parsed = parser.parse()
        try #require(parsed, "not well-formed XML: \(parser.parserError.map { "\($0)" } ?? "?")\n\(svg.prefix(500))")
        try #require(collector.failure == nil, "\(collector.failure!)")
        return collector.found
    }

    @Test func percentileCurveFollowsTheDistribution() {
        var r = LatencyRecorder()
        #expect(r.percentileCurve().isEmpty)
        for us in 1...10_000 { r.record(nanoseconds: Int64(us) * 1_000) }
        let curve = r.percentileCurve()
        // 10,000 values tell percentiles apart up to 99.99 %; then the max.
        #expect(curve.map(\.percentile).last == 100)
        #expect(curve.contains { $0.percentile == 99.99 } && !curve.contains { $0.percentile == 99.995 })
        #expect(
            zip(curve, curve.dropFirst()).allSatisfy {
                $0.percentile < $1.percentile && $0.microseconds <= $1.microseconds
            })
        #expect(abs(curve.first { $0.percentile == 50 }!.microseconds - 5_000) <= 5)
        #expect(abs(curve.last!.microseconds - 10_000) <= 10)
    }

    @Test func timelineSamplerCountsOnlyTheWindow() {
        let m = LoadMetrics()
        var sampler = TimelineSampler(start: 0)
        sampler.sample(now: 1_000_000_000, phase: .connect, metrics: m, subscribers: 10, writers: 0)
        m.startWindow(at: 1_000_000_000)
        m.mutationsAcked = 49
        m.mutationsRejected = 1
        m.batchDeliveries = 200
        m.rowChangesDelivered = 2_000
        sampler.secondWriteToDelivery.record(nanoseconds: 3_000_000)
        sampler.sample(now: 1_500_000_000, phase: .measure, metrics: m, subscribers: 10, writers: 1)
        let s = sampler.samples
        #expect(s.map(\.phase) == [.connect, .connect, .measure])
        #expect(s[0].subscribers == 0 && s[1].subscribers == 10 && s[1].deliveriesPerSecond == nil)
        // Half a second: rates are per second.
        #expect(s[2].answeredPerSecond == 100 && s[2].deliveriesPerSecond == 400 && s[2].rowChangesPerSecond == 4_000)
        // A window that opens mid-second: only its part of the second counts.
        var late = TimelineSampler(start: 0)
        m.startWindow(at: 750_000_000)
        m.batchDeliveries = 100
        late.sample(now: 1_000_000_000, phase: .measure, metrics: m, subscribers: 10, writers: 1)
        #expect(late.samples.last?.deliveriesPerSecond == 400)
        #expect(s[2].p99WriteToDeliveryMicroseconds.map { abs($0 - 3_000) <= 3 } == true)
        #expect(s[2].p99WriteToAckMicroseconds == nil, "nothing was acked in that second")
        #expect(sampler.secondWriteToDelivery.count == 0, "each second starts afresh")
    }

    @Test func everyChartHoldsItsSeriesWellFormed() throws {
        let report = Self.sampleReport()
        let html = LoadReportPage.html(for: report)
        let svgs = Self.svgs(in: html)
        #expect(svgs.count == LoadReportPage.ChartID.allCases.count)
        // The timeline's measured seconds (7), with the one second without an ack left out.
        let expected: [String: Int] = [
            "write-to-delivery": report.latency.writeToDeliveryCurve.count,
            "write-to-ack": report.latency.writeToAckCurve.count,
            "row-changes-per-second": 7, "deliveries-per-second": 7, "answered-per-second": 7,
            "p99-write-to-delivery": 7, "p99-write-to-ack": 6, "subscribers": 12, "writers": 12,
        ]
        for (chart, svg) in zip(LoadReportPage.ChartID.allCases, svgs) {
            #expect(svg.contains("id=\"\(chart.rawValue)\""), "charts in page order")
            let found = try Self.series(in: svg)
            #expect(Set(found.keys) == Set(LoadReportPage.seriesIDs[chart]!), "\(chart)")
            for (id, series) in found {
                #expect(series.declared == expected[id], "\(id): \(series.declared) points declared")
                #expect(series.points.count == series.declared, "\(id): \(series.points.count) drawn")
                // Inside the 900 × 340 view box, left to right.
                #expect(
                    series.points.allSatisfy {
                        $0.0.isFinite && $0.1.isFinite && (0...900).contains($0.0) && (0...340).contains($0.1)
                    }, "\(id)")
                #expect(zip(series.points, series.points.dropFirst()).allSatisfy { $0.0 <= $1.0 }, "\(id)")
            }
        }
        // A latency curve rises (SVG y grows downwards), and the gap splits the ack line.
        let curve = try Self.series(in: svgs[0])["write-to-delivery"]!.points
        #expect(curve.first!.1 > curve.last!.1)
        #expect(
            svgs[2].components(separatedBy: "<polyline").count - 1 == 3,
            "p99 per second: one delivery line, the ack line in two")
    }

    @Test func thePageIsSelfContainedAndHoldsTheSummary() {
        let report = Self.sampleReport(scenario: "a <b> & \"c\"")
        let html = LoadReportPage.html(for: report)
        #expect(html.hasPrefix("<!DOCTYPE html>") && html.hasSuffix("</html>\n"))
        // Nothing fetched: no src/href attributes, no URL but the SVG namespace name,
        // and the only script block is JSON data.
        #expect(
            !html.contains("src=") && !html.contains("href=") && !html.contains("@import") && !html.contains("url("))
        #expect(
            html.replacingOccurrences(of: "http://www.w3.org/2000/svg", with: "").range(
                of: "https?://", options: .regularExpression) == nil)
        #expect(
            html.components(separatedBy: "<script").count == 2
                && html.contains("<script type=\"application/json\" id=\"report-json\">"))
        #expect(html.contains("a &lt;b&gt; &amp; &quot;c&quot;") && !html.contains("<b>"))
        // The summary table and the latency table.
        for text in [
            "1000 subscribers, 1 writers", "write → delivery (every subscriber)", "send → ack (service time)",
            "divergences 0", "PASS",
        ] {
            #expect(html.contains(text), "\(text)")
        }
        // The embedded JSON is the report.
        let start = html.range(of: "id=\"report-json\">")!.upperBound
        let json = html[start...].prefix { $0 != "<" }
        let decoded = try? JSONDecoder().decode(LoadReport.self, from: Data(json.utf8))
        #expect(
            decoded?.timeline == report.timeline && decoded?.latency.writeToAckCurve == report.latency.writeToAckCurve)
    }

    @Test func reportsWithoutTimelineOrCurvesStillDecodeAndRender() throws {
        var object = try #require(
            try JSONSerialization.jsonObject(with: Data(Self.sampleReport().json().utf8)) as? [String: Any])
        object["timeline"] = nil
        var latency = try #require(object["latency"] as? [String: Any])
        latency["writeToDeliveryCurve"] = nil
        latency["writeToAckCurve"] = nil
        object["latency"] = latency
        let old = try JSONDecoder().decode(LoadReport.self, from: try JSONSerialization.data(withJSONObject: object))
        #expect(old.timeline.isEmpty && old.latency.writeToDeliveryCurve.isEmpty)
        let svgs = Self.svgs(in: LoadReportPage.html(for: old))
        #expect(svgs.count == 4)
        for svg in svgs { #expect(try Self.series(in: svg).values.allSatisfy { $0.declared == 0 }) }
    }
}
