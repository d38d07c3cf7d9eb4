import FlowSyncProcess
import FlowSyncTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The `flowsyncd` executable itself: --check-config exit codes, start on port 0,
/// SIGHUP reload, SIGTERM shutdown with exit 0.
@Suite(.serialized, .timeLimit(.minutes(3))) struct DaemonProcessTests {
    static let root = BuiltProduct.root

    /// The debug flowsyncd (see ``BuiltProduct``).
    static func binary() throws -> String { try BuiltProduct.path("flowsyncd") }

    /// Runs flowsyncd to its end (stdout and stderr combined); killed after 60 s.
    static func run(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        let done = try await ChildProcess.run(try binary(), arguments: arguments, timeout: .seconds(60))
        return (done.status, done.output)
    }

    /// A fresh directory for a spawned daemon's store (`--data-dir`); the caller removes it.
    static func temporaryDataDirectory() -> String {
        NSTemporaryDirectory() + "flowsyncd-data-\(UUID().uuidString)"
    }

    static func temporaryFile(_ text: String) throws -> String {
        let path = NSTemporaryDirectory() + "flowsyncd-test-\(UUID().uuidString).toml"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func checkConfigExitCodes() async throws {
        let good = try await Self.run([
            "--check-config", "--config", Self.root.appendingPathComponent("config/flowsyncd.toml").path,
        ])
        #expect(good.status == 0 && good.output.contains("configuration OK"), "\(good)")
        let badPath = try Self.temporaryFile("[limits]\nmax_frame_bytez = 5\n")
        defer { unlink(badPath) }
        let bad = try await Self.run(["--check-config", "--config", badPath])
        #expect(bad.status == 2 && bad.output.contains("limits.max_frame_bytez: unknown key"), "\(bad)")
        let flag = try await Self.run(["--check-config", "--log-level", "loud"])
        #expect(flag.status == 2 && flag.output.contains("logging.level"), "a bad flag value names its key: \(flag)")
        let missing = try await Self.run(["--check-config", "--config", "/nonexistent/flowsyncd.toml"])
        #expect(missing.status == 2 && missing.output.contains("cannot read"), "\(missing)")
    }

    /// `--check-config` reads `[cluster] peer_secret_file` as a start would: missing,
    /// unreadable and short files are refused with the key and the file named.
    @Test func checkConfigReadsThePeerSecretFile() async throws {
        func config(_ secret: String) throws -> String {
            try Self.temporaryFile(
                "[cluster]\npostgres = \"host=127.0.0.1 dbname=flowsync\"\nnode = \"a\"\npeer_secret_file = \"\(secret)\"\n"
            )
        }
        let good = NSTemporaryDirectory() + "flowsyncd-peer-\(UUID().uuidString).secret"
        try "a cluster credential of more than 32 bytes, shared by the nodes\n".write(
            toFile: good, atomically: true, encoding: .utf8)
        let short = NSTemporaryDirectory() + "flowsyncd-peer-\(UUID().uuidString).secret"
        try "too short\n".write(toFile: short, atomically: true, encoding: .utf8)
        let unreadable = NSTemporaryDirectory() + "flowsyncd-peer-\(UUID().uuidString).secret"
        try "a cluster credential of more than 32 bytes, shared by the nodes\n".write(
            toFile: unreadable, atomically: true, encoding: .utf8)
        chmod(unreadable, 0)
        let configs = try [good, short, unreadable, "/nonexistent/peer.secret"].map(config)
        defer { for path in configs + [good, short, unreadable] { unlink(path) } }
        let ok = try await Self.run(["--check-config", "--config", configs[0]])
        #expect(ok.status == 0 && ok.output.contains("configuration OK"), "\(ok)")
        let tooShort = try await Self.run(["--check-config", "--config", configs[1]])
        #expect(
            tooShort.status == 2 && tooShort.output.contains("cluster.peer_secret_file: \(short) holds 9 bytes"),
            "\(tooShort)")
        // root reads a file of mode 0 all the same: only an ordinary user sees it refused.
        if getuid() != 0 {
            let denied = try await Self.run(["--check-config", "--config", configs[2]])
            #expect(denied.status == 2 && denied.output.contains("check its owner and mode"), "\(denied)")
        }
        let missing = try await Self.run(["--check-config", "--config", configs[3]])
        #expect(
            missing.status == 2
                && missing.output.contains(
                    "cluster.peer_secret_file: cannot read /nonexistent/peer.secret: no such file"),
            "\(missing)")
    }

    @Test func reloadsOnSIGHUPAndExitsCleanlyOnSIGTERM() async throws {
        let configPath = try Self.temporaryFile("[server]\nport = 0\n[logging]\nlevel = \"info\"\n")
        defer { unlink(configPath) }
        var options = DaemonProcess.Options(binary: try Self.binary(), config: configPath)
        options.metrics = true
        options.logLevel = "info"
        let daemon = try await DaemonProcess.start(options)

        try "[server]\nport = 0\n[limits]\nmax_ops_per_mutation = 7\n[logging]\nlevel = \"info\"\n".write(
            toFile: configPath, atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        let reloaded = await daemon.child.waitForLine(timeout: .seconds(30)) {
            $0.contains("configuration reloaded") ? true : nil
        }
        #expect(reloaded == true, "\(daemon.output)")
        #expect(daemon.output.contains("limits.director"), "the reload names what changed: \(daemon.output)")

        let ended = await daemon.terminate()
        #expect(ended == .exited(0), "\(ended): \(daemon.output)")
        #expect(daemon.output.contains("stopped"))
    }
}

final class LockedText: @unchecked Sendable {
    private let lock = NSLock()
    private var buffer = ""
    func append(_ s: String) {
        lock.lock()
        buffer += s
        lock.unlock()
    }
    var text: String {
        lock.lock()
        defer { lock.unlock() }
        return buffer
    }
}
