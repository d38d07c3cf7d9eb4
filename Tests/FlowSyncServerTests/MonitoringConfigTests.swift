import FlowSyncCore
import FlowSyncLoop
import FlowSyncProcess
import FlowSyncProtocol
import FlowSyncTestSupport
import Foundation
import Testing

/// The Grafana dashboard (`config/grafana/flowsyncd.json`) and the alerting rules
/// (`config/prometheus/flowsyncd-rules.yml`) name only metrics a running `flowsyncd`
/// exports, with the labels they select on (issue #20). Their PromQL is checked by
/// `promtool` in `scripts/check-monitoring.sh`.
@Suite(.serialized, .timeLimit(.minutes(3))) struct MonitoringConfigTests {
    /// A metric a query names, with the label names its selector uses.
    struct Reference: Hashable, CustomStringConvertible {
        var metric: String
        var labels: Set<String>
        var description: String { labels.isEmpty ? metric : "\(metric){\(labels.sorted().joined(separator: ","))}" }
    }

    /// Labels Prometheus adds at scrape time (`instance`, `job`): never in the exposition.
    static let targetLabels: Set<String> = ["instance", "job"]

    /// Every `flowsync_…` metric in `query`, with the label names of the `{…}` selector
    /// right after it (except the target labels).
    static func references(in query: String) -> [Reference] {
        let pattern = try! NSRegularExpression(pattern: #"\b(flowsync_[a-z0-9_]+)(\{([^}]*)\})?"#)
        let text = query as NSString
        return pattern.matches(in: query, range: NSRange(location: 0, length: text.length)).map { match in
            let metric = text.substring(with: match.range(at: 1))
            var labels: Set<String> = []
            if match.range(at: 3).location != NSNotFound {
                for matcher in text.substring(with: match.range(at: 3)).split(separator: ",") {
                    let name = matcher.prefix { $0.isLetter || $0.isNumber || $0 == "_" }
                    if !name.isEmpty, !targetLabels.contains(String(name)) { labels.insert(String(name)) }
                }
            }
            return Reference(metric: metric, labels: labels)
        }
    }

    /// The queries of the dashboard's panels and annotations.
    static func dashboardQueries() throws -> [String] {
        let data = try Data(contentsOf: BuiltProduct.root.appendingPathComponent("config/grafana/flowsyncd.json"))
        let dashboard = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let panels = try #require(dashboard["panels"] as? [[String: Any]])
        var queries = panels.flatMap { ($0["targets"] as? [[String: Any]] ?? []).compactMap { $0["expr"] as? String } }
        queries += ((dashboard["annotations"] as? [String: Any])?["list"] as? [[String: Any]] ?? []).compactMap {
            $0["expr"] as? String
        }
        return queries
    }

    /// The `expr:` lines of the rules file (each rule's expression is on one line there).
    static func ruleQueries() throws -> [String] {
        let text = try String(
            contentsOf: BuiltProduct.root.appendingPathComponent("config/prometheus/flowsyncd-rules.yml"),
            encoding: .utf8)
        return text.split(separator: "\n").compactMap { line in
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            return trimmed.hasPrefix("expr:") ? String(trimmed.dropFirst(5)) : nil
        }
    }

    /// The exposition's samples: metric name → label names seen on it.
    static func samples(_ exposition: String) -> [String: Set<String>] {
        var found: [String: Set<String>] = [:]
        for line in exposition.split(separator: "\n") where !line.hasPrefix("#") {
            let name = String(line.prefix { $0 != "{" && $0 != " " })
            var labels: Set<String> = []
            if let open = line.firstIndex(of: "{"), let close = line.lastIndex(of: "}") {
                for pair in line[line.index(after: open)..<close].split(separator: ",") {
                    labels.insert(String(pair.prefix { $0 != "=" }))
                }
            }
            found[name, default: []].formUnion(labels)
        }
        return found
    }

    @Test func referencesAreParsed() {
        #expect(
            Self.references(
                in: #"sum by (reason) (rate(flowsync_connections_closed_total{instance=~"$i",reason!="peer"}[5m]))"#)
                == [Reference(metric: "flowsync_connections_closed_total", labels: ["reason"])])
        #expect(
            Self.references(
                in:
                    "histogram_quantile(0.99, sum by (le) (rate(flowsync_store_sync_seconds_bucket[5m]))) > 0.05 or flowsync_lists"
            )
                == [
                    Reference(metric: "flowsync_store_sync_seconds_bucket", labels: []),
                    Reference(metric: "flowsync_lists", labels: []),
                ])
    }

    @Test func everyMetricTheDashboardAndTheRulesNameIsExported() async throws {
        let dashboard = try Self.dashboardQueries()
        let rules = try Self.ruleQueries()
        #expect(dashboard.count >= 10 && rules.count >= 4, "dashboard \(dashboard.count) queries, rules \(rules.count)")
        let wanted = Set((dashboard + rules).flatMap(Self.references))
        // What the issue asks the dashboard and the rules to show.
        for metric in [
            "flowsync_connections", "flowsync_lists", "flowsync_batches_total", "flowsync_frames_sent_total",
            "flowsync_bytes_sent_total", "flowsync_subscribers_paused", "flowsync_store_sync_seconds_bucket",
            "flowsync_mutations_rejected_total", "flowsync_connections_closed_total",
            "flowsync_store_failed", "flowsync_handshake_budget_exhausted_total",
            "flowsync_tls_certificate_expiry_timestamp_seconds", "flowsync_tls_certificate_loads_total",
        ] {
            #expect(wanted.contains { $0.metric == metric }, "\(metric) is in neither the dashboard nor the rules")
        }

        // A real daemon (file store, fsync always: the store sync histogram moves), and
        // the traffic that creates the labelled series: a commit, a Reject, a close.
        // Over TLS (issue #32), so the TLS series exist: the certificate's expiry, the
        // loads by result.
        let certificates = try await TestCertificates.shared()
        var options = DaemonProcess.Options(binary: try DaemonProcessTests.binary())
        options.metrics = true
        options.configText =
            "[tls]\nmode = \"required\"\ncertificate_file = \"\(certificates.serverCertificate)\"\nkey_file = \"\(certificates.serverKey)\"\n"
        let daemon = try await DaemonProcess.start(options)
        let metricsPort = try #require(daemon.metricsPort)
        let thread = try EventLoopThread()
        let client = try await TestClient.connect(
            port: daemon.port, on: thread, clientID: "monitoring-test",
            tls: certificates.clientContext())
        client.send(.subscribe(Subscribe(listName: "m", resumeFrom: nil, digest: nil)))
        #expect(await client.waitFor { if case .snapshot = $0 { return true } else { return false } } != nil)
        client.send(
            .mutate(
                Mutate(
                    listName: "m", clientID: "monitoring-test", seq: 1, base: ListVersion(epoch: 0, version: 0),
                    operations: [.insertSections([Section(id: "s")], at: 0)])))
        client.send(
            .mutate(
                Mutate(
                    listName: "m", clientID: "monitoring-test", seq: 2, base: ListVersion(epoch: 0, version: 0),
                    operations: [.removeRows([.id("nope")])])))
        #expect(await client.waitFor { if case .reject(let r) = $0 { return r.seq == 2 } else { return false } } != nil)
        client.close()
        #expect(thread.shutdown())
        // The close is counted when the daemon sees it: wait for that event.
        var scrape = ""
        #expect(
            await eventually(timeout: 30) {
                scrape = (try? MetricsTests.get(port: metricsPort, path: "/metrics").body) ?? ""
                return Self.samples(scrape)["flowsync_connections_closed_total"] != nil
            }, "no connection close counted:\n\(scrape.prefix(3000))")

        let exported = Self.samples(scrape)
        for reference in wanted.sorted(by: { $0.description < $1.description }) {
            let labels = exported[reference.metric]
            #expect(
                labels != nil,
                "\(reference.metric) is named by the dashboard or the rules but not exported:\n\(exported.keys.sorted().joined(separator: "\n"))"
            )
            if let labels {
                #expect(
                    reference.labels.isSubset(of: labels),
                    "\(reference): the daemon exports the labels \(labels.sorted())")
            }
        }
        #expect(await daemon.terminate() == .exited(0), "\(daemon.output)")
    }
}
