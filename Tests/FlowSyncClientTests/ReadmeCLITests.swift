import FlowSyncProcess
import FlowSyncTestSupport
import Foundation
import Testing

/// The README's `flowsync` lines, taken from README.md as written and run by `/bin/sh`
/// against a real `flowsyncd` on 127.0.0.1 port 0 (issue #20, "the CLI as the README
/// shows it"): the "Try it" lines verbatim, then the same commands in the synopsis's
/// form, every connection option *before* the command.
@Suite(.serialized, .timeLimit(.minutes(3))) struct ReadmeCLITests {
    /// A README line that runs the CLI, with the `\`-continued lines joined.
    struct Line: CustomStringConvertible {
        var text: String
        var description: String { text }
        /// The command after `flowsync` (`insert todo …`), when the line starts with it.
        var command: String? {
            for prefix in [".build/debug/flowsync ", "flowsync "] where text.hasPrefix(prefix) {
                return String(text.dropFirst(prefix.count))
            }
            return nil
        }
    }

    /// The README's synopsis line and the CLI lines of its shell blocks (` ```sh `).
    static func readme() throws -> (synopsis: String, lines: [Line]) {
        let text = try String(contentsOf: BuiltProduct.root.appendingPathComponent("README.md"), encoding: .utf8)
        var synopsis: String?
        var lines: [Line] = []
        var block: String?  // the info string of the open fenced block
        var pending = ""
        for raw in text.components(separatedBy: "\n") {
            if raw.hasPrefix("```") {
                block = block == nil ? String(raw.dropFirst(3)) : nil
                continue
            }
            guard let block else { continue }
            if block.isEmpty, raw.hasPrefix("flowsync [--host") { synopsis = raw }
            guard block == "sh" else { continue }
            let joined = pending + raw.trimmingCharacters(in: .whitespaces)
            if joined.hasSuffix("\\") {
                pending = String(joined.dropLast()) + " "
                continue
            }
            pending = ""
            // A line that runs the CLI itself (not flowsync-mirror or flowsyncd).
            if joined.range(of: #"(^|[ (])(\.build/debug/)?flowsync "#, options: .regularExpression) != nil {
                lines.append(Line(text: joined))
            }
        }
        return (try #require(synopsis, "no synopsis line in README.md"), lines)
    }

    /// A scratch directory where `.build/debug` is the directory of the built CLI, and a
    /// `PATH` that finds `flowsync` there: both spellings the README uses resolve to it.
    static func scratch() throws -> (directory: String, path: String) {
        let binDirectory = URL(fileURLWithPath: try BuiltProduct.path("flowsync")).deletingLastPathComponent().path
        let directory = NSTemporaryDirectory() + "readme-cli-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory + "/.build", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(
            atPath: directory + "/.build/debug", withDestinationPath: binDirectory)
        return (directory, binDirectory + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"))
    }

    /// Runs `line` with `/bin/sh` in `directory`; killed after 30 s.
    static func sh(
        _ line: String, in directory: String, path: String, environment: [String: String?] = [:]
    ) async throws -> ChildProcess.Completed {
        var environment = environment
        environment["PATH"] = path
        for name in ["FLOWSYNC_HOST", "FLOWSYNC_PORT", "FLOWSYNC_TOKEN"] where environment[name] == nil {
            environment[name] = .some(nil)
        }
        return try await ChildProcess.run(
            "/bin/sh", arguments: ["-c", "cd '\(directory)' && \(line)"], environment: environment,
            separateStandardError: true, timeout: .seconds(30))
    }

    static func daemon(config: String = "") async throws -> DaemonProcess {
        var options = DaemonProcess.Options(binary: try BuiltProduct.path("flowsyncd"))
        options.configText = config
        return try await DaemonProcess.start(options)
    }

    /// The "Try it" lines as written (the port from `FLOWSYNC_PORT`, which the README
    /// names as `--port`'s fallback), then the same commands in the synopsis's form.
    @Test func tryItLinesRunAsWrittenAndInSynopsisForm() async throws {
        let (synopsis, lines) = try Self.readme()
        let tryIt = lines.filter { $0.text.hasPrefix(".build/debug/flowsync ") }
        #expect(tryIt.count >= 4, "README.md's \"Try it\" CLI lines: \(lines)")
        let (directory, path) = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }

        let asWritten = try await Self.daemon()
        for line in tryIt {
            let run = try await Self.sh(
                line.text, in: directory, path: path, environment: ["FLOWSYNC_PORT": "\(asWritten.port)"])
            #expect(run.status == 0, "\(line)\n\(run)")
            if line.command?.hasPrefix("get ") == true {
                #expect(run.output.contains("r1") && run.output.contains("r2"), "\(line)\n\(run)")
            }
        }
        #expect(await asWritten.terminate() == .exited(0), "\(asWritten.output)")

        // `flowsync [--host H[:P] …] [--port P] [--token T] [--timeout S] [--plaintext] COMMAND …`
        // with H, P, S filled in (no token: this daemon runs with auth off, on loopback),
        // `--host` twice: first a port nothing listens on, then the daemon's host, whose
        // port is `--port`'s (the CLI tries them in order).
        let synopsisForm = try await Self.daemon()
        let dead = try freeLoopbackPort()
        let options =
            synopsis
            .replacingOccurrences(of: "[--token T] ", with: "")
            .replacingOccurrences(of: "[--host H[:P] …]", with: "--host 127.0.0.1:\(dead) --host 127.0.0.1")
            .replacingOccurrences(of: "[--port P]", with: "--port \(synopsisForm.port)")
            .replacingOccurrences(of: "[--timeout S]", with: "--timeout 10")
            .replacingOccurrences(of: "[--plaintext]", with: "--plaintext")
            .replacingOccurrences(of: "COMMAND …", with: "")
        #expect(!options.contains("["), "a synopsis option this test does not fill in: \(synopsis)")
        for line in tryIt {
            let command = try #require(line.command)
            let run = try await Self.sh(options + command, in: directory, path: path)
            #expect(run.status == 0, "\(options + command)\n\(run)")
            if command.hasPrefix("get ") {
                #expect(run.output.contains("r1") && run.output.contains("r2"), "\(run)")
            }
        }
        // After the command, as before.
        let after = try await Self.sh(
            "flowsync get todo --json --port \(synopsisForm.port) --timeout 10", in: directory, path: path)
        #expect(after.status == 0 && after.output.contains("\"r2\""), "\(after)")
        // `--opt=value` before the command, and help after leading options.
        let equals = try await Self.sh(
            "flowsync --port=\(synopsisForm.port) --timeout=10 lists", in: directory, path: path)
        #expect(equals.status == 0 && equals.output.contains("todo\tversion"), "\(equals)")
        let help = try await Self.sh("flowsync --port 1 help insert", in: directory, path: path)
        #expect(help.status == 0 && help.output.contains("--section"), "\(help)")
        #expect(await synopsisForm.terminate() == .exited(0), "\(synopsisForm.output)")
    }

    /// The README's token line (the installed config's path replaced by a scratch config
    /// with the `dev` key enabled, as the README says), then that token given with
    /// `--token` before the command to a daemon that requires one.
    @Test func tokenLineMintsATokenThatWorksBeforeTheCommand() async throws {
        let (_, lines) = try Self.readme()
        let tokenLine = try #require(
            lines.first { $0.text.contains("flowsync token") }, "README.md's token line: \(lines)")
        let (directory, path) = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try "readme-cli-test-secret-0123456789abcdef\n".write(
            toFile: directory + "/dev.secret", atomically: true, encoding: .utf8)
        let auth = """
            [auth]
            mode = "required"
            [[auth.keys]]
            kid = "dev"
            alg = "HS256"
            secret_file = "\(directory)/dev.secret"

            """
        try auth.write(toFile: directory + "/flowsyncd.toml", atomically: true, encoding: .utf8)
        let line = tokenLine.text.replacingOccurrences(
            of: "/etc/flowsyncd/flowsyncd.toml", with: directory + "/flowsyncd.toml")
        let minted = try await Self.sh(line + #" && printf '%s' "$FLOWSYNC_TOKEN""#, in: directory, path: path)
        #expect(minted.status == 0, "\(line)\n\(minted)")
        let token = minted.output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(token.split(separator: ".").count == 3, "not a JWT: \(minted)")

        let daemon = try await Self.daemon(config: auth)
        let withToken = try await Self.sh(
            "flowsync --port \(daemon.port) --token '\(token)' --timeout 10 get team/42/inbox", in: directory,
            path: path)
        #expect(withToken.status == 0, "\(withToken)")
        let withoutToken = try await Self.sh(
            "flowsync --port \(daemon.port) --timeout 5 get team/42/inbox", in: directory, path: path)
        #expect(withoutToken.status != 0, "\(withoutToken)")
        #expect(await daemon.terminate() == .exited(0), "\(daemon.output)")
    }
}
