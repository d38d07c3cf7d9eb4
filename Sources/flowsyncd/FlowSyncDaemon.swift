import ArgumentParser
import FlowSyncLoop
import FlowSyncServer
import Foundation
import Logging
import Metrics
import Prometheus

#if canImport(Glibc)
import Glibc
#endif

/// `flowsyncd`: reads the config, applies flag overrides, bootstraps logging, and runs
/// the server on the main thread's libuv loop until SIGTERM/SIGINT. Thin by design:
/// everything testable lives in FlowSyncServer.
@main
struct FlowSyncDaemon: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "flowsyncd",
        abstract: "The FlowSync daemon: mirrors ordered lists to subscribed clients.",
        discussion: """
            Exit codes: 0 after a clean shutdown (SIGTERM/SIGINT) or a valid --check-config;
            2 for a configuration error (the message names the key; --check-config also reads
            the TLS certificate pair); 1 when the listener cannot be opened, the TLS pair does
            not load, or the loop fails; 65 (EX_DATAERR) when the store holds damaged
            data at start, or after a clean stop anything but exactly what the stop recorded
            (--repair keeps the valid prefix); 74 (EX_IOERR) when a write or an
            fsync of the store fails (nothing unsynced was acknowledged; systemd restarts the
            daemon, and recovery keeps every acknowledged batch).
            """
    )

    @Option(name: .long, help: "TOML configuration file (default: built-in defaults).")
    var config: String?

    @Option(name: .long, help: "Listen address, overriding server.host.")
    var host: String?

    @Option(name: .long, help: "Listen port, overriding server.port (0: let the OS choose).")
    var port: Int?

    @Option(name: .customLong("data-dir"), help: "Data directory, overriding server.data_dir.")
    var dataDir: String?

    @Option(
        name: .customLong("log-level"),
        help: "trace|debug|info|notice|warning|error|critical, overriding logging.level.")
    var logLevel: String?

    @Option(
        name: .customLong("metrics-port"),
        help: "Port of the Prometheus endpoint (GET /metrics), overriding metrics.port (0: let the OS choose).")
    var metricsPort: Int?

    @Flag(name: .customLong("no-metrics"), help: "Do not serve metrics (overrides metrics.enabled).")
    var noMetrics = false

    @Flag(name: .customLong("check-config"), help: "Validate the configuration and exit (0 valid, 2 invalid).")
    var checkConfig = false

    @Flag(
        name: .long,
        help:
            "Start even when a stored log or snapshot is damaged: keep the valid prefix, set damaged files aside (*.damaged), start a new epoch for the lists concerned, and say what was dropped."
    )
    var repair = false

    @Flag(
        name: .customLong("check-store"),
        help:
            "Check every list of the data directory offline with recovery's rules, change nothing, and exit: 0 all ok, 3 a torn tail the next start cuts, 65 damaged lists, 1 the store is locked by a running daemon. With --repair, repair first (as --repair at start), then check."
    )
    var checkStore = false

    func run() throws {
        // A process started from a test runner thread (Foundation.Process) can inherit
        // a blocked SIGTERM and would never stop: start from an empty signal mask.
        var empty = sigset_t()
        sigemptyset(&empty)
        pthread_sigmask(SIG_SETMASK, &empty, nil)
        // A write to a client that has gone must fail with EPIPE, not kill the daemon.
        // The executable decides this for its process; FlowSyncLoop (a library) does not.
        signal(SIGPIPE, SIG_IGN)

        let configuration: ServerConfiguration
        do {
            configuration = try loadConfiguration()
        } catch {
            FileHandle.standardError.write(Data("flowsyncd: configuration error: \(error)\n".utf8))
            throw ExitCode(2)
        }
        if checkConfig {
            // The certificate pair is read too: a start would refuse it.
            if let problem = configuration.tls.checkFiles(host: configuration.host) {
                FileHandle.standardError.write(Data("flowsyncd: configuration error: \(problem)\n".utf8))
                throw ExitCode(2)
            }
            // So is the peer secret file: a start would refuse a missing or short one.
            if let problem = configuration.checkPeerSecretFile() {
                FileHandle.standardError.write(Data("flowsyncd: configuration error: \(problem)\n".utf8))
                throw ExitCode(2)
            }
            print("flowsyncd: configuration OK\(config.map { " (\($0))" } ?? "")")
            return
        }
        if checkStore {
            let code = StoreCheckCommand.run(configuration, repair: repair)
            if code != 0 { throw ExitCode(code) }
            return
        }

        let level = Logger.Level(rawValue: configuration.logLevel) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .trace  // each Logger instance filters by its own level
            return handler
        }
        var logger = Logger(label: "flowsyncd")
        logger.logLevel = level
        // The library records through swift-metrics; the executable picks Prometheus.
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))

        let loop = try EventLoop()
        let server = Server(configuration: configuration, loop: loop, logger: logger)
        // A failed write or fsync: the batch was not acknowledged, and memory is now ahead
        // of the disk. Exit at once (no graceful flush: nothing more may be sent) and let
        // systemd restart us; recovery keeps every acknowledged batch. As Redis does
        // under appendfsync always.
        server.onFatalStorageError = { error in
            logger.critical("storage failure, exiting for a restart", metadata: ["error": "\(error)"])
            Glibc.exit(74)  // EX_IOERR
        }
        // The signal watchers first, before the store is opened and long before READY=1:
        // a SIGHUP (systemctl reload) or SIGTERM that arrives as soon as the daemon says
        // it is ready must find its handler, not the default action, which would kill
        // the process. Their callbacks run on the loop, so once it turns.
        let supervision = ServiceSupervision(server: server, notifier: SystemdNotifier(logger: logger))
        var metricsEndpoint: MetricsEndpoint?
        var watchers: [SignalWatcher] = []
        for signum in [SIGTERM, SIGINT] {
            watchers.append(
                try SignalWatcher(loop: loop, signal: signum) { received in
                    logger.notice("signal received, shutting down", metadata: ["signal": "\(received)"])
                    supervision.stopping()
                    server.shutdown {
                        // The server's handles are closed; close ours too (timers, signal
                        // watchers — `watchers` is captured by reference, so it is the full
                        // list by now), so stop() finds nothing left open. Closing clears
                        // each watcher's callback, which breaks the watcher → closure →
                        // `watchers` cycle.
                        supervision.close()
                        metricsEndpoint?.close()
                        for watcher in watchers { watcher.close() }
                        loop.stop()
                    }
                })
        }
        watchers.append(
            try SignalWatcher(loop: loop, signal: SIGHUP) { _ in
                supervision.reloading()
                do {
                    let fresh = try loadConfiguration()
                    let changes = server.reload(fresh)
                    server.logger.logLevel = Logger.Level(rawValue: fresh.logLevel) ?? .info
                    logger.notice(
                        "configuration reloaded",
                        metadata: ["changes": "\(changes.isEmpty ? "none" : changes.joined(separator: "; "))"])
                    supervision.reloaded("reloaded")
                } catch {
                    logger.error("reload failed; keeping the running configuration", metadata: ["error": "\(error)"])
                    supervision.reloaded("reload failed, running configuration kept")
                }
            })
        do {
            let report = try server.recover(repair: repair)
            if repair {
                // A repair can drop nothing and still matter (a segment deleted after a
                // clean stop is found missing): say "repaired", not "nothing was damaged".
                let dropped =
                    report.repairedBytes > 0
                    ? "dropped \(report.repairedBytes) damaged bytes"
                    : report.repairedAnything ? "repaired" : "nothing was damaged"
                FileHandle.standardOutput.write(
                    Data(
                        "flowsyncd: repair: \(dropped)\(report.notes.isEmpty ? "" : "; " + report.notes.joined(separator: "; "))\n"
                            .utf8))
            }
        } catch {
            if error.isCorruption {
                logger.critical("refusing to start: the store holds damaged data", metadata: ["error": "\(error)"])
                FileHandle.standardError.write(Data("flowsyncd: refusing to start: \(error)\n".utf8))
                throw ExitCode(65)  // EX_DATAERR
            }
            logger.critical(
                "cannot open the store", metadata: ["error": "\(error)", "data_dir": "\(configuration.dataDirectory)"])
            FileHandle.standardError.write(
                Data("flowsyncd: cannot open the store in \(configuration.dataDirectory): \(error)\n".utf8))
            throw ExitCode(error.errno == nil ? 1 : 74)
        }
        do {
            try server.start(adoptingDescriptor: Self.activationDescriptor())
        } catch {
            logger.critical("cannot listen", metadata: ["error": "\(error)"])
            throw ExitCode(1)
        }
        // Unbuffered, so a supervisor or test reading stdout sees it at once.
        FileHandle.standardOutput.write(Data("flowsyncd: listening on \(configuration.host):\(server.port)\n".utf8))
        if configuration.metricsEnabled {
            do {
                let endpoint = try MetricsEndpoint(
                    loop: loop, address: SocketAddress(host: configuration.metricsHost, port: configuration.metricsPort)
                ) {
                    var text: [UInt8] = []
                    registry.emit(into: &text)
                    return text
                }
                metricsEndpoint = endpoint
                FileHandle.standardOutput.write(
                    Data("flowsyncd: metrics on \(configuration.metricsHost):\(endpoint.port)\n".utf8))
            } catch {
                logger.critical(
                    "cannot open the metrics listener (set [metrics] enabled = false to run without)",
                    metadata: ["error": "\(error)"])
                throw ExitCode(1)
            }
        }
        // READY=1 only now: systemd starts dependent units (and a socket-activated
        // client's wait ends) once the listener accepts.
        supervision.started()
        let result = loop.run()
        if result != 0 { logger.warning("loop closed with open handles", metadata: ["result": "\(result)"]) }
        // A handle nobody closed (stop() had to) is a lifecycle bug even when the loop
        // then closes cleanly: say so, the process tests look for this line.
        if loop.handlesOpenAtStop != 0 {
            logger.warning("handles left open at stop", metadata: ["count": "\(loop.handlesOpenAtStop)"])
        }
    }

    /// The file (if any) over the defaults, then the flags over the file.
    func loadConfiguration() throws -> ServerConfiguration {
        var configuration = ServerConfiguration()
        if let config {
            let text: String
            do {
                text = try String(contentsOfFile: config, encoding: .utf8)
            } catch {
                throw ConfigurationError(key: "", problem: "cannot read \(config): \(error.localizedDescription)")
            }
            configuration = try ServerConfiguration(toml: text)
        }
        if let host { configuration.host = host }
        if let port { configuration.port = port }
        if let dataDir { configuration.dataDirectory = dataDir }
        if let logLevel { configuration.logLevel = logLevel }
        if let metricsPort { configuration.metricsPort = metricsPort }
        if noMetrics { configuration.metricsEnabled = false }
        if let (key, problem) = configuration.validate() { throw ConfigurationError(key: key, problem: problem) }
        return configuration
    }

    /// The listening socket systemd passed (socket activation), if any: fd 3 when
    /// `LISTEN_PID` is this process and `LISTEN_FDS` ≥ 1.
    static func activationDescriptor() -> Int32? {
        let environment = ProcessInfo.processInfo.environment
        guard let pid = environment["LISTEN_PID"].flatMap(Int32.init), pid == getpid(),
            let count = environment["LISTEN_FDS"].flatMap(Int.init), count >= 1
        else { return nil }
        unsetenv("LISTEN_PID")
        unsetenv("LISTEN_FDS")
        return 3
    }
}
