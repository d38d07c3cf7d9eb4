import FlowSyncLoop
import FlowSyncProcess
import FlowSyncServer
import FlowSyncTestSupport
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `flowsyncd` under systemd's protocols, with the real binary: the notify protocol
/// (READY, WATCHDOG, RELOADING, STOPPING) received on a datagram socket the test owns,
/// socket activation through `systemd-socket-activate`, and the shipped unit files
/// checked by `systemd-analyze`. Every wait is bounded; every started process is
/// stopped on every path.
@Suite(.serialized, .timeLimit(.minutes(3))) struct SystemdTests {
    static let systemdDirectory = DaemonProcessTests.root.appendingPathComponent("systemd")

    // MARK: Notify protocol

    @Test func notifiesReadyWatchdogReloadAndStopping() async throws {
        let path = NSTemporaryDirectory() + "flowsyncd-notify-\(UUID().uuidString.prefix(8)).sock"
        let socket = try NotifySocket(path: path)
        let daemon = try await Daemon.start(
            ["--port", "0", "--metrics-port", "0"], environment: ["NOTIFY_SOCKET": path, "WATCHDOG_USEC": "200000"])
        defer { daemon.stop() }

        // READY=1 first, with a status line.
        let ready = await socket.next(timeout: 10)
        #expect(
            ready.map(Self.assignments)?["READY"] == "1",
            "first message: \(ready ?? "none"); output: \(daemon.output.text)")
        #expect(
            ready.map(Self.assignments)?["STATUS"]?.contains("listening on 127.0.0.1:") == true, "\(ready ?? "none")")

        // WATCHDOG_USEC=200 ms → a ping every 100 ms. Two pings, waited for as events (the
        // datagrams queue in the socket): a starved test task must not turn a late read
        // into a missing ping.
        var pings = 0
        var received = await socket.collect(timeout: 30) { message in
            if Self.assignments(message)["WATCHDOG"] == "1" { pings += 1 }
            return pings >= 2
        }
        #expect(pings >= 2, "pings: \(received)")
        // SIGHUP: RELOADING=1 (with MONOTONIC_USEC) and then READY=1 again.
        daemon.signal(SIGHUP)
        received += await socket.collect(timeout: 30) { Self.assignments($0)["READY"] == "1" }
        let reloading = received.first { Self.assignments($0)["RELOADING"] == "1" }
        let stamp = reloading.flatMap { Self.assignments($0)["MONOTONIC_USEC"] }.flatMap(UInt64.init)
        #expect(stamp != nil && stamp! > 0, "RELOADING=1 carries MONOTONIC_USEC: \(reloading ?? "none")")

        // SIGTERM: STOPPING=1, then a clean exit.
        daemon.signal(SIGTERM)
        received += await socket.collect(timeout: 30) { Self.assignments($0)["STOPPING"] == "1" }
        #expect(await daemon.waitForExit(timeout: 15), "still running: \(daemon.output.text)")
        #expect(daemon.terminationStatus == 0, "exit \(daemon.terminationStatus): \(daemon.output.text)")
        // The supervision timers were closed too: the loop closed with no handle open.
        #expect(
            !daemon.output.text.contains("loop closed with open handles")
                && !daemon.output.text.contains("handles left open at stop"), "\(daemon.output.text)")

        // The order of the state changes, leaving out pings and status-only lines.
        let events = ([ready ?? ""] + received).compactMap { message -> String? in
            let fields = Self.assignments(message)
            for key in ["READY", "RELOADING", "STOPPING"] where fields[key] == "1" { return key }
            return nil
        }
        #expect(events == ["READY", "RELOADING", "READY", "STOPPING"], "\(events) from \([ready ?? ""] + received)")
    }

    @Test func abstractNotifySocketReceivesReady() async throws {
        let name = "flowsyncd-test-\(UUID().uuidString)"
        let socket = try NotifySocket(abstractName: name)
        let daemon = try await Daemon.start(
            ["--port", "0", "--metrics-port", "0"], environment: ["NOTIFY_SOCKET": "@" + name])
        defer { daemon.stop() }
        let ready = await socket.collect(timeout: 10) { Self.assignments($0)["READY"] == "1" }
        #expect(ready.last.map(Self.assignments)?["READY"] == "1", "got \(ready); output: \(daemon.output.text)")
        daemon.signal(SIGTERM)
        #expect(await daemon.waitForExit(timeout: 15))
        #expect(daemon.terminationStatus == 0, "\(daemon.output.text)")
    }

    @Test func withoutNotifySocketNothingIsSentAndWatchdogIsOff() throws {
        let silent = SystemdNotifier(environment: [:], logger: .init(label: "test"))
        #expect(!silent.isEnabled && silent.watchdogInterval == nil)
        silent.ready(status: "x")  // no socket: must be a harmless no-op
        let own = SystemdNotifier(
            environment: ["WATCHDOG_USEC": "10000000", "WATCHDOG_PID": "\(getpid())"], logger: .init(label: "test"))
        #expect(own.watchdogInterval == .seconds(5), "half of WatchdogSec")
        let other = SystemdNotifier(
            environment: ["WATCHDOG_USEC": "10000000", "WATCHDOG_PID": "\(getpid() + 1)"], logger: .init(label: "test"))
        #expect(other.watchdogInterval == nil, "WATCHDOG_PID of another process disables the watchdog")
    }

    // MARK: Socket activation

    @Test func socketActivationAdoptsTheListener() async throws {
        let tool = "/usr/bin/systemd-socket-activate"
        guard FileManager.default.isExecutableFile(atPath: tool) else {
            Issue.record("\(tool) is missing: install Debian's `systemd` package (it ships the tool) to run this test")
            return
        }
        let port = try freeLoopbackPort()
        // --port 0: were the socket not adopted, the daemon would listen elsewhere and the
        // handshake below would time out instead of reaching a stray daemon on 7400.
        let daemon = try await Daemon.start(
            ["-l", "127.0.0.1:\(port)", try DaemonProcessTests.binary(), "--port", "0", "--metrics-port", "0"],
            executable: tool)
        defer { daemon.stop() }
        // systemd-socket-activate listens at once, but only execs flowsyncd when the
        // first connection arrives; TestClient.connect retries nothing, so wait for the
        // port to accept before connecting.
        #expect(
            await eventually(timeout: 10) { Self.canConnect(port: port) },
            "nothing listens on \(port): \(daemon.output.text)")
        let thread = try EventLoopThread()
        defer { _ = thread.shutdown() }
        do {
            // connect performs the handshake: it returns only once Welcome has arrived.
            let client = try await TestClient.connect(port: port, on: thread)
            #expect(client.messages.contains { if case .welcome = $0 { true } else { false } })
            client.close()
        } catch {
            Issue.record("no Welcome through the activated socket: \(error); output: \(daemon.output.text)")
        }
        #expect(await eventually(timeout: 10) { daemon.output.text.contains("listening on") }, "\(daemon.output.text)")
        daemon.signal(SIGTERM)
        #expect(await daemon.waitForExit(timeout: 15), "\(daemon.output.text)")
        #expect(daemon.terminationStatus == 0, "exit \(daemon.terminationStatus): \(daemon.output.text)")
        #expect(!daemon.output.text.contains("handles left open at stop"), "\(daemon.output.text)")
    }

    // MARK: Unit files

    @Test func unitFilesVerifyCleanlyAndStayHardened() async throws {
        let analyze = "/usr/bin/systemd-analyze"
        guard FileManager.default.isExecutableFile(atPath: analyze) else {
            Issue.record("\(analyze) is missing: install Debian's `systemd` package to run this test")
            return
        }
        // verify needs ExecStart's binary to exist: check a copy of the units whose
        // ExecStart is the binary just built, instead of installing it.
        let directory = NSTemporaryDirectory() + "flowsyncd-units-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let binary = try DaemonProcessTests.binary()
        let service = try String(
            contentsOf: Self.systemdDirectory.appendingPathComponent("flowsyncd.service"), encoding: .utf8)
        #expect(
            service.contains("ExecStart=/usr/local/bin/flowsyncd "), "the shipped ExecStart changed; update this test")
        #expect(
            service.contains("Type=notify\n") && service.contains("WatchdogSec=")
                && service.contains("NotifyAccess=main"))
        try service.replacingOccurrences(of: "ExecStart=/usr/local/bin/flowsyncd ", with: "ExecStart=\(binary) ")
            .write(toFile: directory + "/flowsyncd.service", atomically: true, encoding: .utf8)
        try FileManager.default.copyItem(
            atPath: Self.systemdDirectory.appendingPathComponent("flowsyncd.socket").path,
            toPath: directory + "/flowsyncd.socket")

        // verify exits 0 even on parse errors: any stderr is a failure.
        let verify = try await Self.run(
            analyze, ["verify", "--man=no", directory + "/flowsyncd.service", directory + "/flowsyncd.socket"])
        #expect(verify.status == 0 && verify.stderr.isEmpty, "systemd-analyze verify: \(verify.stderr)")

        let security = try await Self.run(analyze, ["security", "--offline=yes", directory + "/flowsyncd.service"])
        let exposure = security.stdout.split(separator: "\n")
            .first { $0.contains("Overall exposure level") }
            .flatMap { $0.split(separator: ":").last?.split(separator: " ").first }
            .flatMap { Double($0) }
        #expect(
            exposure != nil && exposure! <= 2.0,
            "exposure \(exposure.map { "\($0)" } ?? "unparsed"): \(security.stdout.suffix(300)) \(security.stderr)")
    }

    // MARK: Helpers

    /// `KEY=value` lines of one notify datagram.
    static func assignments(_ message: String) -> [String: String] {
        var fields: [String: String] = [:]
        for line in message.split(separator: "\n") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            fields[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        return fields
    }

    /// Whether a TCP listener accepts connections on 127.0.0.1:`port` (a probe that
    /// connects and closes; to systemd-socket-activate it is the first connection,
    /// which starts the daemon — harmless, the daemon sees an empty connection).
    static func canConnect(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    /// Runs a short-lived tool; stdout and stderr apart. Killed after 60 s.
    static func run(
        _ executable: String, _ arguments: [String]
    ) async throws -> (status: Int32, stdout: String, stderr: String) {
        let done = try await ChildProcess.run(
            executable, arguments: arguments, separateStandardError: true, timeout: .seconds(60))
        return (done.status, done.output, done.errorOutput)
    }
}

/// A started process (flowsyncd, or a tool that execs it) with its output collected
/// (stdout and stderr combined). ``stop()`` ends it on every path without waiting;
/// a test that checks the exit awaits ``waitForExit(timeout:)``.
final class Daemon: Sendable {
    let child: ChildProcess
    /// The daemon's own data directory (the file store), removed at stop.
    let dataDirectory: String

    private init(child: ChildProcess, dataDirectory: String) {
        self.child = child
        self.dataDirectory = dataDirectory
    }

    static func start(
        _ arguments: [String], environment extra: [String: String] = [:], executable: String? = nil
    ) async throws -> Daemon {
        // Inherited supervisor variables (the test runner might itself run under
        // systemd) must not leak into the daemon; the test sets its own.
        var environment: [String: String?] = [:]
        for key in ["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES"] {
            environment[key] = .some(nil)
        }
        for (key, value) in extra { environment[key] = value }
        let dataDirectory = DaemonProcessTests.temporaryDataDirectory()
        // Every daemon gets its own store (the default data directory is shared and
        // locked); appended last, so it reaches flowsyncd behind systemd-socket-activate too.
        let all = arguments.contains("--data-dir") ? arguments : arguments + ["--data-dir", dataDirectory]
        let child = try await ChildProcess.start(
            try executable ?? DaemonProcessTests.binary(), arguments: all, environment: environment)
        return Daemon(child: child, dataDirectory: dataDirectory)
    }

    /// What it printed so far.
    var output: OutputLog { child.log }

    /// Sends a signal.
    func signal(_ signal: Int32) { child.signal(signal) }

    private let terminationBox = Mutex<ChildProcess.Termination?>(nil)

    /// Waits for the exit, at most `timeout` seconds; true when it exited.
    func waitForExit(timeout: Double) async -> Bool {
        guard let ended = await child.waitForExit(timeout: .milliseconds(Int(timeout * 1000))) else { return false }
        terminationBox.withLock { $0 = ended }
        return true
    }

    /// Its exit status once ``waitForExit(timeout:)`` saw it end (-1 before).
    var terminationStatus: Int32 { terminationBox.withLock { $0?.status ?? -1 } }

    /// Ends it if it still runs (SIGKILL, no wait: the kernel finishes it and the run
    /// task reaps it) and removes its data directory. Synchronous, so it fits a `defer`.
    func stop() {
        if !child.hasExited { child.signal(SIGKILL) }
        try? FileManager.default.removeItem(atPath: dataDirectory)
    }
}

/// The test's end of `NOTIFY_SOCKET`: a nonblocking `AF_UNIX` datagram socket bound to
/// a path (removed again on deinit) or an abstract name.
final class NotifySocket {
    private let descriptor: Int32
    private let path: String?

    convenience init(path: String) throws {
        try self.init(name: Array(path.utf8) + [0], path: path)
    }

    /// `name` without the leading NUL, which this adds.
    convenience init(abstractName name: String) throws {
        try self.init(name: [0] + Array(name.utf8), path: nil)
    }

    private init(name: [UInt8], path: String?) throws {
        let fd = socket(
            AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        guard name.count <= MemoryLayout.size(ofValue: address.sun_path) else {
            close(fd)
            throw POSIXError(.ENAMETOOLONG)
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: name) }
        let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + name.count)
        let result = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard result == 0 else {
            let code = errno
            close(fd)
            throw POSIXError(.init(rawValue: code) ?? .EIO)
        }
        descriptor = fd
        self.path = path
    }

    deinit {
        close(descriptor)
        if let path { unlink(path) }
    }

    /// The next datagram, or `nil` after `timeout` seconds. Polls without blocking a
    /// thread of the test runner's pool.
    func next(timeout: Double) async -> String? {
        let clock = ContinuousClock()
        let deadline = clock.now + .milliseconds(Int(timeout * 1_000))
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while true {
            let count = buffer.withUnsafeMutableBytes {
                recv(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT))
            }
            if count >= 0 { return String(decoding: buffer[..<count], as: UTF8.self) }
            if clock.now >= deadline { return nil }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Datagrams up to and including the first that satisfies `stop`, for at most
    /// `timeout` seconds in all.
    func collect(timeout: Double, until stop: (String) -> Bool) async -> [String] {
        let clock = ContinuousClock()
        let deadline = clock.now + .milliseconds(Int(timeout * 1_000))
        var messages: [String] = []
        while clock.now < deadline {
            guard let message = await next(timeout: 0.1) else { continue }
            messages.append(message)
            if stop(message) { break }
        }
        return messages
    }
}
