import FlowSyncCore
import Foundation
import Testing

@testable import FlowSyncServer

/// The TOML configuration: the shipped file, every kind of mistake with the key it
/// names, and the cross-field rules.
@Suite(.timeLimit(.minutes(2))) struct ConfigurationTests {
    static let shippedPath = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("config/flowsyncd.toml").path

    @Test func theShippedFileParsesToTheDocumentedDefaults() throws {
        let text = try String(contentsOfFile: Self.shippedPath, encoding: .utf8)
        let parsed = try ServerConfiguration(toml: text)
        var expected = ServerConfiguration()
        expected.dataDirectory = "/var/lib/flowsyncd"
        #expect(parsed == expected, "config/flowsyncd.toml and ServerConfiguration's defaults must agree")
    }

    @Test func valuesAreRead() throws {
        let c = try ServerConfiguration(
            toml: """
                [server]
                host = "0.0.0.0"
                port = 9000
                lists = ["a", "b"]
                auto_create_lists = false
                [limits]
                max_ops_per_mutation = 10
                max_rows = 500
                [backpressure]
                low_watermark_bytes = 1
                high_watermark_bytes = 2
                hard_limit_bytes = 3
                [ordering]
                dedupe_per_client = 16
                [compression]
                level = 1
                [logging]
                level = "debug"
                [auth]
                mode = "off"
                allow_off_beyond_loopback = true
                [tls]
                mode = "off"
                allow_plaintext_beyond_loopback = true
                """)
        #expect(c.host == "0.0.0.0" && c.port == 9000 && c.declaredLists == ["a", "b"] && !c.autoCreateLists)
        #expect(c.director.maxOpsPerMutation == 10 && c.director.maxRows == 500)
        #expect(c.lowWatermarkBytes == 1 && c.highWatermarkBytes == 2 && c.hardLimitBytes == 3)
        #expect(c.dedupePerClient == 16 && c.compressionLevel == 1 && c.logLevel == "debug")
    }

    @Test func clusterModeIsOffByDefaultAndReadFromItsSection() throws {
        #expect(!ServerConfiguration().cluster.isEnabled)
        let c = try ServerConfiguration(
            toml: """
                [cluster]
                postgres = "host=127.0.0.1 dbname=flowsync"
                node = "node-1"
                lease_ms = 3000
                """)
        #expect(c.cluster.isEnabled && c.cluster.postgres == "host=127.0.0.1 dbname=flowsync")
        #expect(c.cluster.node == "node-1" && c.cluster.leaseMilliseconds == 3_000)
        // Restart-only: a reload keeps the running group and names it.
        var changed = c
        changed.cluster.node = "node-2"
        let reloaded = c.reloaded(to: changed)
        #expect(reloaded.applied.cluster == c.cluster && reloaded.ignored.contains("cluster"))
    }

    static let mistakes: [(String, String, String)] = [
        ("[limits]\nmax_frame_bytez = 5", "limits.max_frame_bytez", "unknown key"),
        ("[limitz]\nx = 1", "limitz", "unknown section"),
        ("[server]\nport = \"7400\"", "server.port", "expected an integer"),
        ("[server]\nport = 70000", "server.port", "outside"),
        ("[server]\nlists = [1, 2]", "server.lists", "array of strings"),
        ("[server]\nauto_create_lists = 1", "server.auto_create_lists", "true or false"),
        ("[compression]\nlevel = 10", "compression.level", "outside"),
        (
            "[backpressure]\nlow_watermark_bytes = 10\nhigh_watermark_bytes = 5", "backpressure.low_watermark_bytes",
            "must not exceed"
        ),
        (
            "[backpressure]\nlow_watermark_bytes = 1\nhigh_watermark_bytes = 10\nhard_limit_bytes = 5",
            "backpressure.high_watermark_bytes", "must not exceed"
        ),
        ("[logging]\nlevel = \"loud\"", "logging.level", "must be one of"),
        ("port = 1", "port", "expected a [port] table"),
        ("[cluster]\nnode = \"a\"", "cluster.node", "needs cluster.postgres"),
        ("[cluster]\npostgres = \"host=db\"", "cluster.node", "is required"),
        ("[cluster]\npostgres = \"\"\nnode = \"a\"", "cluster.postgres", "must not be empty"),
        ("[cluster]\npostgres = \"host=db\"\nnode = \"a\"\nlease_ms = 100", "cluster.lease_ms", "outside"),
        ("[cluster]\npostgress = \"host=db\"", "cluster.postgress", "unknown key"),
        ("[server\nport = 1", "", "TOML syntax error"),
    ]

    @Test(arguments: 0..<mistakes.count)
    func mistakesNameTheirKey(index: Int) {
        let (text, key, problem) = Self.mistakes[index]
        do {
            _ = try ServerConfiguration(toml: text)
            Issue.record("accepted: \(text)")
        } catch {
            #expect(error.key == key, "\(text): \(error)")
            #expect(error.problem.contains(problem), "\(text): \(error)")
        }
    }
}
