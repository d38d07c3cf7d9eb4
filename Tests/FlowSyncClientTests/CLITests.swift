import FlowSyncCore
import FlowSyncProcess
import FlowSyncServer
import FlowSyncTestSupport
import Foundation
import Testing

/// The `flowsync` executable against a real daemon: output and exit codes.
@Suite(.serialized, .timeLimit(.minutes(3))) struct CLITests {
    /// The built executable `name` (see ``BuiltProduct``).
    static func binary(_ name: String = "flowsync") throws -> String { try BuiltProduct.path(name) }

    struct Run: CustomStringConvertible {
        var status: Int32
        var stdout: String
        var stderr: String
        var description: String { "exit \(status)\nstdout: \(stdout)\nstderr: \(stderr)" }
    }

    /// Runs `flowsync` with `arguments` (and `input` on stdin); killed after 30 s, so a
    /// hung CLI is a failed expectation, never a hung suite.
    static func run(
        _ arguments: [String], port: Int, input: String? = nil, executable: String = "flowsync"
    ) async throws -> Run {
        let timeout = arguments.contains("--timeout") || executable != "flowsync" ? [] : ["--timeout", "10"]
        let done = try await ChildProcess.run(
            try binary(executable), arguments: arguments + ["--port", "\(port)"] + timeout,
            input: input ?? "", separateStandardError: true, timeout: .seconds(30))
        return Run(status: done.status, stdout: done.output, stderr: done.errorOutput)
    }

    static func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    @Test func writesThenReadsBack() async throws {
        let server = try await EmbeddedServer()
        let p = server.port
        #expect(
            try await Self.run(
                ["add-section", "people", "--id", "friends", "--header", #"{"title":"Friends"}"#], port: p
            ).status == 0)
        let ada = try await Self.run(
            [
                "insert", "people", "--section", "friends", "--id", "ada", "--kind", "contact", "--json",
                #"{"id":"ada","name":"Ada"}"#,
            ], port: p)
        #expect(ada.status == 0 && ada.stdout.hasPrefix("OK people @ "), "\(ada)")
        #expect(
            try await Self.run(
                ["insert", "people", "--section", "friends", "--id", "bob", "--kind", "contact", "--json", "-"],
                port: p, input: #"{"id":"bob","name":"Bob"}"#
            ).status == 0)
        // A section that does not exist yet is created by insert.
        #expect(
            try await Self.run(["insert", "people", "--section", "foes", "--id", "eve", "--json", "1"], port: p).status
                == 0)
        #expect(try await Self.run(["move", "people", "--id", "bob", "--at", "0"], port: p).status == 0)
        #expect(
            try await Self.run(
                ["update", "people", "--id", "ada", "--json", #"{"id":"ada","name":"Ada L."}"#], port: p
            ).status == 0)
        #expect(try await Self.run(["move", "people", "--section", "foes", "--at", "0"], port: p).status == 0)

        let get = try await Self.run(["get", "people", "--json"], port: p)
        #expect(get.status == 0, "\(get)")
        let object = try Self.json(get.stdout)
        let sections = try #require(object["sections"] as? [[String: Any]])
        #expect(sections.map { $0["id"] as? String } == ["foes", "friends"])
        let rows = try #require(sections[1]["rows"] as? [[String: Any]])
        #expect(rows.map { $0["id"] as? String } == ["bob", "ada"])
        #expect((rows[1]["payload"] as? [String: Any])?["name"] as? String == "Ada L.")
        #expect(rows[1]["kind"] as? String == "contact")
        #expect((sections[1]["header"] as? [String: Any])?["title"] as? String == "Friends")

        // The server agrees.
        let state = try #require(await server.withServer { $0.state(of: "people") })
        #expect(state.director.sections.map(\.id) == ["foes", "friends"])
        let table = try await Self.run(["get", "people"], port: p)
        #expect(table.stdout.contains("[1,0] bob (contact)"), "\(table.stdout)")

        let removed = try await Self.run(["remove", "people", "--id", "eve", "--id", "bob"], port: p)
        #expect(removed.status == 0)
        #expect(await server.withServer { $0.state(of: "people")?.director.rowCount } == 1)
        #expect(await server.stop())
    }

    @Test func applyRunsAFileAsOneWrite() async throws {
        let server = try await EmbeddedServer()
        let file = NSTemporaryDirectory() + "flowsync-ops-\(UUID().uuidString).json"
        defer { try? FileManager.default.removeItem(atPath: file) }
        try Data(
            """
            [{"op": "insertSections", "sections": [{"id": "inbox"}, {"id": "archive"}]},
             {"op": "insertRows", "section": "inbox", "rows": [{"id": "m1", "kind": "mail", "payload": {"subject": "Hi"}}, {"id": "m2", "text": "plain"}]},
             {"op": "moveRow", "id": "m1", "toSection": "archive"},
             {"op": "setFooter", "section": "inbox", "value": "end"}]
            """.utf8
        ).write(to: URL(fileURLWithPath: file))
        let result = try await Self.run(["apply", "mail", file], port: server.port)
        #expect(result.status == 0, "\(result)")
        let state = try #require(await server.withServer { $0.state(of: "mail") })
        #expect(state.position.version == 1, "one write, one version")
        #expect(state.director.sections.map { $0.rows.map(\.id) } == [["m2"], ["m1"]])
        #expect(state.director.sections[0].footer == Array(#""end""#.utf8))
        // A failing operation anywhere refuses the whole file.
        try Data(
            #"[{"op": "removeRows", "ids": ["m2"]}, {"op": "moveRow", "id": "ghost", "toSection": "inbox", "at": 0}]"#
                .utf8
        ).write(to: URL(fileURLWithPath: file))
        let bad = try await Self.run(["apply", "mail", file], port: server.port)
        #expect(bad.status == 1 && bad.stderr.contains("4003"), "\(bad)")
        #expect(await server.withServer { $0.state(of: "mail")?.director.rowCount } == 2)
        #expect(await server.stop())
    }

    @Test func watchPrintsEveryBatch() async throws {
        let server = try await EmbeddedServer()
        let p = server.port
        #expect(try await Self.run(["add-section", "feed", "--id", "s"], port: p).status == 0)
        let watcher = Task.detached { try await Self.run(["watch", "feed", "--json", "--count", "3"], port: p) }
        // Wait until the watcher is subscribed before writing.
        #expect(await ClientTests.until { await server.withServer { $0.subscriberCount(of: "feed") } >= 1 })
        #expect(
            try await Self.run(["insert", "feed", "--section", "s", "--id", "a", "--json", #"{"n":1}"#], port: p).status
                == 0)
        #expect(try await Self.run(["remove", "feed", "--id", "a"], port: p).status == 0)
        let watched = try await watcher.value
        #expect(watched.status == 0, "\(watched)")
        let lines = watched.stdout.split(separator: "\n").map(String.init)
        try #require(lines.count == 3)
        let changes = try lines.map(Self.json)
        #expect(changes.map { $0["cause"] as? String } == ["initial", "remote", "remote"])
        let insert = try #require((changes[1]["stages"] as? [[String: Any]])?.first?["rowInserts"] as? [[String: Any]])
        #expect(insert.first?["path"] as? [Int] == [0, 0])
        #expect((insert.first?["row"] as? [String: Any])?["id"] as? String == "a")
        let delete = try #require((changes[2]["stages"] as? [[String: Any]])?.first?["rowDeletes"] as? [[Int]])
        #expect(delete == [[0, 0]])
        #expect(await server.stop())
    }

    @Test func mirrorExamplePrintsBatchUpdates() async throws {
        let server = try await EmbeddedServer()
        let p = server.port
        #expect(
            try await Self.run(
                [
                    "insert", "demo", "--section", "s", "--id", "ada", "--kind", "contact", "--json",
                    #"{"id":"ada","name":"Ada"}"#,
                ], port: p
            ).status == 0)
        let mirror = Task.detached {
            try await Self.run(["demo", "--count", "2"], port: p, executable: "flowsync-mirror")
        }
        #expect(await ClientTests.until { await server.withServer { $0.subscriberCount(of: "demo") } >= 1 })
        #expect(
            try await Self.run(
                [
                    "insert", "demo", "--section", "s", "--id", "bob", "--kind", "contact", "--json",
                    #"{"id":"bob","name":"Bob"}"#, "--at", "0",
                ], port: p
            ).status == 0)
        let output = try await mirror.value
        #expect(output.status == 0, "\(output)")
        #expect(output.stdout.contains("insertSections([0])"), "\(output.stdout)")
        #expect(output.stdout.contains("insertRows(at: [0,0])  // Bob (bob)"), "\(output.stdout)")
        #expect(await server.stop())
    }

    @Test func exitCodesSayWhatWentWrong() async throws {
        var configuration = ServerConfiguration()
        configuration.director.maxRows = 1
        let server = try await EmbeddedServer(configuration: configuration)
        let p = server.port
        #expect(
            try await Self.run(["insert", "l", "--section", "s", "--id", "a", "--json", "{}"], port: p).status == 0)
        // The server's own limit: refused by the server, exit 3 with its code.
        let refused = try await Self.run(["insert", "l", "--section", "s", "--id", "b", "--json", "{}"], port: p)
        #expect(refused.status == 3 && refused.stderr.contains("3005"), "\(refused)")
        // Bad JSON, and an edit that cannot apply: exit 1.
        let badJSON = try await Self.run(["insert", "l", "--section", "s", "--id", "c", "--json", "{nope"], port: p)
        #expect(badJSON.status == 1 && badJSON.stderr.contains("not valid JSON"), "\(badJSON)")
        let unknown = try await Self.run(["update", "l", "--id", "ghost", "--json", "{}"], port: p)
        #expect(unknown.status == 1 && unknown.stderr.contains("4003"), "\(unknown)")
        // Usage errors come from the argument parser.
        #expect(try await Self.run(["remove", "l"], port: p).status == 64)
        let stats = try await Self.run(["stats", "l", "--interval", "0", "--json"], port: p)
        #expect(stats.status == 0, "\(stats)")
        let entries = try Self.json(stats.stdout)
        #expect(entries["list.rows"] as? Int == 1 && entries["connections"] != nil)
        let lists = try await Self.run(["lists"], port: p)
        #expect(lists.status == 0 && lists.stdout.contains("l\tversion 1"), "\(lists)")
        #expect(await server.stop())
        // Nobody listening: exit 2 within the timeout.
        let closed = try await Self.run(["get", "l", "--timeout", "1"], port: p)
        #expect(closed.status == 2, "\(closed)")
    }
}
