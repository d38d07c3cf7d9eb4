import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A `flowsyncd` process on 127.0.0.1, port 0, with a data directory of its own: the one
/// launcher the tests, the benchmarks and `flowsync-load --spawn` share.
///
/// It waits for the daemon's "listening on HOST:PORT" line (and "metrics on HOST:PORT"
/// when metrics are on) without polling and without blocking a thread; a daemon that
/// exits or stays silent past ``Options/startTimeout`` is a thrown error that carries
/// its output. Supervisor variables inherited from the caller (`NOTIFY_SOCKET`,
/// `WATCHDOG_*`, `LISTEN_*`) never reach it unless ``Options/environment`` sets them.
///
/// Stop it with ``terminate(gracePeriod:)`` (SIGTERM, then SIGKILL) or ``kill9()``;
/// both return how it ended. A temporary data directory it made is removed by either.
public final class DaemonProcess: Sendable {
    /// How to start it.
    public struct Options: Sendable {
        /// The `flowsyncd` binary (or a wrapper that execs it, with ``prefixArguments``).
        public var binary: String
        /// `--data-dir`; `nil` makes a temporary one that stopping removes.
        public var dataDirectory: String?
        /// `--config PATH`, when given.
        public var config: String?
        /// A config file's text, written to a temporary file and passed as `--config`
        /// (only when ``config`` is `nil`).
        public var configText: String?
        /// More arguments, after the standard ones.
        public var arguments: [String] = []
        /// Arguments before the standard ones (when ``binary`` is a wrapper such as
        /// `prlimit` that takes the daemon's path first).
        public var prefixArguments: [String] = []
        /// Changes to the environment (`nil` removes a variable).
        public var environment: [String: String?] = [:]
        /// Metrics on an OS-picked port (`--metrics-port 0`) instead of `--no-metrics`.
        public var metrics = false
        /// `--log-level`.
        public var logLevel = "warning"
        /// Start it under `setpriv --pdeathsig TERM` (util-linux), so the kernel stops it
        /// when this process dies without stopping it (a crashed load tester).
        public var stopsWithParent = false
        /// How long to wait for the listening line.
        public var startTimeout: Duration = .seconds(60)

        public init(binary: String, dataDirectory: String? = nil, config: String? = nil) {
            self.binary = binary
            self.dataDirectory = dataDirectory
            self.config = config
        }
    }

    /// The process.
    public let child: ChildProcess
    /// The client port it listens on.
    public let port: Int
    /// The metrics port, when ``Options/metrics`` was set.
    public let metricsPort: Int?
    /// Its data directory.
    public let dataDirectory: String
    /// Files and directories this launcher made, removed at stop.
    private let temporaryPaths: [String]

    private init(child: ChildProcess, port: Int, metricsPort: Int?, dataDirectory: String, temporaryPaths: [String]) {
        self.child = child
        self.port = port
        self.metricsPort = metricsPort
        self.dataDirectory = dataDirectory
        self.temporaryPaths = temporaryPaths
    }

    /// Starts the daemon and waits for its listening line.
    /// - Throws: ``ChildProcessError`` with the daemon's output when it does not start.
    public static func start(_ options: Options) async throws -> DaemonProcess {
        guard FileManager.default.isExecutableFile(atPath: options.binary) else {
            throw ChildProcessError("no daemon binary at \(options.binary) (build it: swift build --product flowsyncd)")
        }
        var temporary: [String] = []
        let dataDirectory: String
        if let given = options.dataDirectory {
            dataDirectory = given
        } else {
            dataDirectory = NSTemporaryDirectory() + "flowsyncd-\(getpid())-\(UUID().uuidString)"
            temporary.append(dataDirectory)
        }
        var config = options.config
        if config == nil, let text = options.configText {
            let path = NSTemporaryDirectory() + "flowsyncd-\(getpid())-\(UUID().uuidString).toml"
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            temporary.append(path)
            config = path
        }
        var arguments = options.prefixArguments + (config.map { ["--config", $0] } ?? [])
        arguments += [
            "--host", "127.0.0.1", "--port", "0", "--log-level", options.logLevel, "--data-dir", dataDirectory,
        ]
        arguments += options.metrics ? ["--metrics-port", "0"] : ["--no-metrics"]
        arguments += options.arguments
        var executable = options.binary
        let setpriv = "/usr/bin/setpriv"
        if options.stopsWithParent, FileManager.default.isExecutableFile(atPath: setpriv) {
            arguments = ["--pdeathsig", "TERM", "--", executable] + arguments
            executable = setpriv
        }
        var environment: [String: String?] = [:]
        for key in ["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES"] {
            environment[key] = .some(nil)
        }
        environment.merge(options.environment) { $1 }
        let child: ChildProcess
        do {
            child = try await ChildProcess.start(executable, arguments: arguments, environment: environment)
        } catch {
            remove(temporary)
            throw error
        }
        let port = await child.waitForLine(timeout: options.startTimeout) { portNumber(in: $0, after: "listening on ") }
        let metricsPort =
            options.metrics
            ? await child.waitForLine(timeout: options.startTimeout) { portNumber(in: $0, after: "metrics on ") } : nil
        guard let port, metricsPort != nil || !options.metrics else {
            let termination = await child.stop(gracePeriod: .seconds(5))
            remove(temporary)
            throw ChildProcessError("flowsyncd did not start (\(termination)): \(child.output)")
        }
        return DaemonProcess(
            child: child, port: port, metricsPort: metricsPort, dataDirectory: dataDirectory, temporaryPaths: temporary)
    }

    /// Starts `binary` with `--data-dir dataDirectory` (and `--config config` when given)
    /// plus `extraArguments`; `prefixArguments` come first (for a wrapper that execs it).
    public static func start(
        binary: String, dataDirectory: String?, config: String?, extraArguments: [String] = [],
        prefixArguments: [String] = []
    ) async throws -> DaemonProcess {
        var options = Options(binary: binary, dataDirectory: dataDirectory, config: config)
        options.arguments = extraArguments
        options.prefixArguments = prefixArguments
        return try await start(options)
    }

    /// The port in a line "…\(marker)HOST:PORT".
    static func portNumber(in line: Substring, after marker: String) -> Int? {
        guard let range = line.range(of: marker) else { return nil }
        let address = line[range.upperBound...].prefix { !$0.isWhitespace }
        guard let colon = address.lastIndex(of: ":") else { return nil }
        return Int(address[address.index(after: colon)...])
    }

    private static func remove(_ paths: [String]) {
        for path in paths { try? FileManager.default.removeItem(atPath: path) }
    }

    /// Everything it printed so far (stdout and stderr).
    public var output: String { child.output }

    /// Its process ID.
    public var pid: Int32 { child.pid }

    /// True once it has exited.
    public var hasExited: Bool { child.hasExited }

    /// A `/proc` sample of the daemon; nil once it is gone.
    public func sample() -> ProcessSample? { ProcessSample.read(pid: String(pid)) }

    /// Sends a signal (SIGHUP to reload, …).
    public func signal(_ signal: Int32) { child.signal(signal) }

    /// Waits for it to exit by itself, at most `timeout`.
    public func waitForExit(timeout: Duration) async -> ChildProcess.Termination? {
        let termination = await child.waitForExit(timeout: timeout)
        if termination != nil { Self.remove(temporaryPaths) }
        return termination
    }

    /// SIGKILL (a crash), then waits for the exit.
    @discardableResult
    public func kill9() async -> ChildProcess.Termination {
        let termination = await child.stop(gracePeriod: .seconds(30), signal: SIGKILL)
        Self.remove(temporaryPaths)
        return termination
    }

    /// SIGTERM (a graceful stop), SIGKILL after `gracePeriod`, then waits for the exit.
    @discardableResult
    public func terminate(gracePeriod: Duration = .seconds(30)) async -> ChildProcess.Termination {
        let termination = await child.stop(gracePeriod: gracePeriod)
        Self.remove(temporaryPaths)
        return termination
    }
}

extension DaemonProcess {
    /// ``start(_:)`` for a caller on a thread of its own (a command-line tool's main
    /// thread, a load run's thread): blocks that thread, never a cooperative one.
    /// - Precondition: not called from async code (it would block a pool thread).
    public static func startBlocking(_ options: Options) throws -> DaemonProcess {
        try blocking { try await start(options) }
    }

    /// ``terminate(gracePeriod:)`` for a caller on a thread of its own.
    /// - Precondition: not called from async code.
    @discardableResult
    public func terminateBlocking(gracePeriod: Duration = .seconds(10)) -> ChildProcess.Termination {
        // `terminate` does not throw; the force-unwrap cannot fail.
        try! blocking { await self.terminate(gracePeriod: gracePeriod) }
    }
}

/// Runs `body` in a task and blocks the calling thread until it is done. Only for
/// threads outside Swift's cooperative pool: the work itself runs on the pool, so
/// blocking one of its threads here could starve it.
func blocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let done = DispatchSemaphore(value: 0)
    let result = ResultBox<T>()
    Task.detached {
        do { result.set(.success(try await body())) } catch { result.set(.failure(error)) }
        done.signal()
    }
    done.wait()
    return try result.get()
}

private final class ResultBox<T: Sendable>: @unchecked Sendable {
    // Written once by the task before `signal`, read once after `wait`: the semaphore
    // orders the two, so no lock is needed.
    private var value: Result<T, any Error>?
    func set(_ value: Result<T, any Error>) { self.value = value }
    func get() throws -> T { try value!.get() }
}

extension ChildProcess {
    /// ``run(_:arguments:environment:input:separateStandardError:timeout:)`` for a caller
    /// on a thread of its own (a load run making its certificate).
    /// - Precondition: not called from async code (it would block a pool thread).
    public static func runBlocking(
        _ executable: String, arguments: [String], timeout: Duration = .seconds(60)
    ) throws -> Completed {
        try blocking { try await run(executable, arguments: arguments, timeout: timeout) }
    }
}
