import FlowSyncProcess
import FlowSyncTestSupport
import Foundation
import Testing

@testable import FlowSyncGateway

/// The demo page in headless Chromium (driven over CDP), twice, against a real daemon and
/// gateway: edits made in one page, through the CLI (`flowsync`) and through the HTTP API
/// appear in both pages in the same order, and a page that loses its connection resumes.
/// Outside CI a machine without Chromium skips this, saying so; with `CI=true` it runs and
/// a missing Chromium fails it (`make test` apt-installs chromium).
@Suite(
    .serialized, .timeLimit(.minutes(3)),
    .enabled(
        if: ChromiumDevTools.path != nil || ChromiumDevTools.isRequired,
        "skipped: no chromium on PATH (apt-get install chromium, or `make test`); under CI=true this test runs and fails instead"
    ))
struct DemoPageBrowserTests {
    /// The versions a page showed, each with its row IDs, in order (consecutive repeats of
    /// one version folded: an observer's first call and a later one may show the same).
    static let shown = """
        (() => { const out = []; for (const s of window.flowsyncDemo.shown) {
          if (s.version === null) continue;
          const key = s.version + ':' + s.ids.join(',');
          if (out[out.length - 1] !== key) out.push(key); } return out; })()
        """

    static func ids(_ session: String, _ browser: ChromiumDevTools) async throws -> String {
        try await browser.evaluate(
            "[...document.querySelectorAll('#rows li')].map((li) => li.dataset.id).join(',')", in: session)
            as? String ?? ""
    }

    @Test func twoPagesShowEveryEditInTheSameOrderAndADroppedPageResumes() async throws {
        let server = try await EmbeddedServer()
        let gateway = try await GatewayHarness(server: server)
        let browser = try await ChromiumDevTools.launch()
        defer { Task { await browser.close() } }
        let url = "http://127.0.0.1:\(gateway.port)/demo?list=browser"
        let a = try await browser.open(url)
        let b = try await browser.open(url)
        for page in [a, b] {
            #expect(
                try await browser.waitUntil(
                    "!!(window.flowsyncDemo && window.flowsyncDemo.list.isLoaded)", in: page, timeout: .seconds(30)),
                "the page loaded its list")
        }
        // 1. Page A adds two rows (the first creates the section).
        _ = try await browser.evaluate("window.flowsyncDemo.add('first', 'a1')", in: a)
        _ = try await browser.evaluate("window.flowsyncDemo.add('second', 'a2')", in: a)
        // 2. The HTTP API inserts at the top.
        _ = try await gateway.request(
            "POST", "/v1/lists/browser/mutations",
            body:
                #"{"operations":[{"op":"insertRows","section":"items","at":0,"rows":[{"id":"h1","kind":"item","payload":{"title":"from HTTP"}}]}]}"#
        )
        // 3. The CLI appends.
        let cli = try await ChildProcess.run(
            try BuiltProduct.path("flowsync"),
            arguments: [
                "--port", "\(server.port)", "insert", "browser", "--section", "items", "--id", "c1", "--kind", "item",
                "--json", #"{"title":"from the CLI"}"#,
            ], timeout: .seconds(30))
        #expect(cli.status == 0, "\(cli)")
        // 4. Page B clicks: move h1 down, then remove a2.
        #expect(try await browser.waitUntil("document.querySelectorAll('#rows li').length === 4", in: b))
        _ = try await browser.evaluate(
            "document.querySelector('li[data-id=\"h1\"] button:nth-of-type(2)').click()", in: b)
        #expect(try await browser.waitUntil("document.querySelector('#rows li').dataset.id === 'a1'", in: b))
        _ = try await browser.evaluate(
            "document.querySelector('li[data-id=\"a2\"] button:nth-of-type(3)').click()", in: b)
        let expected = "a1,h1,c1"
        for page in [a, b] {
            #expect(
                try await browser.waitUntil(
                    "[...document.querySelectorAll('#rows li')].map((li) => li.dataset.id).join(',') === '\(expected)'",
                    in: page))
        }
        let shownA = try await browser.evaluate(Self.shown, in: a) as? [String] ?? []
        let shownB = try await browser.evaluate(Self.shown, in: b) as? [String] ?? []
        print("DemoPageBrowserTests: both pages showed \(shownA)")
        #expect(shownA == shownB, "both pages showed the same versions in the same order:\n\(shownA)\n\(shownB)")
        #expect(shownA.last?.hasSuffix(":\(expected)") == true, "\(shownA)")

        // 5. Page B loses its connection; edits land meanwhile; it resumes.
        _ = try await browser.evaluate("window.flowsyncDemo.client.disconnect()", in: b)
        _ = try await gateway.request(
            "POST", "/v1/lists/browser/mutations",
            body:
                #"{"operations":[{"op":"insertRows","section":"items","at":3,"rows":[{"id":"h2","kind":"item","payload":{"title":"while away"}}]}]}"#
        )
        _ = try await browser.evaluate("window.flowsyncDemo.add('from A while B is away', 'a3')", in: a)
        let after = "a1,h1,c1,h2,a3"
        for page in [a, b] {
            let resumed = try await browser.waitUntil(
                "[...document.querySelectorAll('#rows li')].map((li) => li.dataset.id).join(',') === '\(after)'",
                in: page)
            let shows = try await Self.ids(page, browser)
            #expect(resumed, "the page shows \(shows)")
        }
        let statuses = try await browser.evaluate("window.flowsyncDemo.statuses", in: b) as? [String] ?? []
        #expect(statuses.contains("disconnected") && statuses.last == "connected", "\(statuses)")
        // The server agrees with both pages.
        let (answer, list) = try await gateway.json("GET", "/v1/lists/browser")
        #expect(answer.status == 200)
        let rows = ((list["sections"] as? [[String: Any]])?.first?["rows"] as? [[String: Any]]) ?? []
        #expect(rows.compactMap { $0["id"] as? String }.joined(separator: ",") == after)
        await browser.close()
        await gateway.stop()
        #expect(await server.stop())
    }
}
