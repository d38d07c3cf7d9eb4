// flowsync-load: the load tester (issue #8). Options, defaults per scenario, and exit
// codes; the work is in the FlowSyncLoad library (docs/BENCHMARKS.md, "Load tests").
import ArgumentParser
import FlowSyncLoad
import Foundation

struct FlowSyncLoadCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "flowsync-load",
        abstract: "Load-tests a flowsyncd: many subscribers and writers, latency, throughput, and a divergence check.",
        discussion: """
            Scenarios (--scenario): \(Scenario.allCases.map { "\n  \($0.rawValue): \($0.summary)" }.joined())

            Options given explicitly override the scenario's. Exit code: 0 passed, 1 a \
            divergence, lost ack, Reject, protocol error or failed connection, 2 the run \
            could not start.
            """
    )

    @Option(help: "Daemon host (a numeric address or localhost).") var host: String?
    @Option(help: "Daemon port.") var port: Int?
    @Option(
        help:
            "Several daemons (cluster nodes), host:port,host:port,…: subscribers and writers spread over them round robin; the report gives the clients per endpoint and write-on-A → delivery-on-B latency apart. Lists are set up through the first."
    ) var endpoints: String?
    @Flag(help: "Start a flowsyncd on a free loopback port with a temporary data dir, and stop it at the end.")
    var spawn = false
    @Option(help: "flowsyncd binary for --spawn.") var daemon: String?
    @Option(help: "With --spawn: the daemon's storage engine, file|memory (default: the daemon's, file).") var storage:
        String?
    @Option(help: "With --spawn: the daemon's fsync policy, always|interval|never (default: the daemon's, always).")
    var fsync: String?
    @Option(help: "With --spawn: the daemon's write path, libuv|io_uring|auto (default: the daemon's).") var writePath:
        String?
    @Option(help: "With --spawn: the daemon's flush slice in µs, 0 = unsliced (default: the daemon's).")
    var flushSliceUs: Int?
    @Option(help: "With --spawn: the daemon's seal wait in µs, 0 = no pacing (default: the daemon's).") var sealWaitUs:
        Int?
    @Option(help: "A named scenario: \(Scenario.allCases.map(\.rawValue).joined(separator: "|")).") var scenario:
        String?
    @Option(help: "Lists.") var lists: Int?
    @Option(help: "Subscribers per list.") var subscribers: Int?
    @Option(
        name: .customLong("full-replicas"),
        help: "Subscribers per list keeping a full replica (default: all; the others check versions and digests only).")
    var fullReplicas: Int?
    @Option(help: "Writer connections.") var writers: Int?
    @Option(help: "Mutations per second in total, open loop (0: closed loop, as fast as the in-flight window allows).")
    var rate: Double?
    @Option(name: .customLong("max-in-flight"), help: "Unanswered mutations per writer.") var maxInFlight: Int?
    @Option(name: .customLong("ops-per-mutation"), help: "Operations per mutation.") var opsPerMutation: Int?
    @Option(
        help:
            "Each Mutate's base: head (epoch 0) or acked (the writer's last Ack version: the daemon rebases; needs --max-in-flight 1)."
    ) var base: String?
    @Option(name: .customLong("initial-rows"), help: "Rows per list before the run.") var initialRows: Int?
    @Option(help: "Sections per list before the run.") var sections: Int?
    @Option(name: .customLong("payload-bytes"), help: "Bytes per row payload.") var payloadBytes: Int?
    @Option(help: "Operation mix in percent, e.g. insert=35,remove=35,move=10,update=15,cross=5,section=0.") var mix:
        String?
    @Option(help: "Measured seconds.") var duration: Double?
    @Option(help: "Warm-up seconds (not measured).") var warmup: Double?
    @Option(help: "Random seed.") var seed: UInt64?
    @Option(name: .customLong("resume-storm"), help: "Subscribers dropped and resumed mid-run.") var resumeStorm: Int?
    @Option(name: .customLong("slow-consumers"), help: "Subscribers that periodically stop reading.") var slowConsumers:
        Int?
    @Option(name: .customLong("slow-pause-ms"), help: "How long a slow consumer stops reading.") var slowPause: Int?
    @Option(name: .customLong("slow-period-ms"), help: "How often a slow consumer stops reading.") var slowPeriod: Int?
    @Option(
        name: .customLong("slow-receive-buffer"),
        help: "A slow consumer's socket receive buffer in bytes (0: the kernel's autotuned one).")
    var slowReceiveBuffer: Int?
    @Option(
        name: .customLong("source-addresses"),
        help: "Loopback source addresses to spread connections over (127.0.0.1…n).") var sourceAddresses: Int?
    @Flag(
        help:
            "TLS to the daemon (with --spawn: the spawned daemon serves TLS, with --tls-cert/--tls-key or a throw-away self-signed P-256 certificate)."
    ) var tls = false
    @Option(help: "With --tls: a PEM file of CAs to trust besides the system's.") var cacert: String?
    @Option(
        name: .customLong("server-name"),
        help: "With --tls: the name checked against the daemon's certificate (default localhost).") var serverName:
        String?
    @Option(name: .customLong("tls-cert"), help: "With --spawn --tls: the daemon's certificate chain (PEM).")
    var tlsCert: String?
    @Option(name: .customLong("tls-key"), help: "With --spawn --tls: the daemon's private key (PEM).") var tlsKey:
        String?
    @Flag(help: "Print the report as JSON (every figure) instead of the table.") var json = false
    @Option(name: .customLong("json-file"), help: "Also write the JSON report to this file.") var jsonFile: String?
    @Option(
        help:
            "Also write the report as one self-contained HTML page with inline SVG charts (latency percentiles, throughput and p99 per second, connections over time, the summary)."
    ) var html: String?
    @Flag(help: "No progress lines on stderr.") var quiet = false

    func run() throws {
        var c: LoadConfiguration
        var scenarioName: String?
        if let scenario {
            guard let named = Scenario(rawValue: scenario) else {
                throw ValidationError(
                    "unknown scenario '\(scenario)' (\(Scenario.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            c = named.configuration
            scenarioName = named.rawValue
        } else {
            c = LoadConfiguration()
        }
        if let host { c.host = host }
        if let port { c.port = port }
        if let endpoints {
            c.endpoints = endpoints.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        }
        if spawn { c.spawn = true }
        if let daemon { c.daemonPath = daemon }
        if let storage { c.daemonStorage = storage }
        if let fsync { c.daemonFsync = fsync }
        if let writePath { c.daemonWritePath = writePath }
        if let flushSliceUs { c.daemonFlushSliceMicroseconds = flushSliceUs }
        if let sealWaitUs { c.daemonSealWaitMicroseconds = sealWaitUs }
        if let lists { c.lists = lists }
        if let subscribers { c.subscribersPerList = subscribers }
        if let fullReplicas { c.fullReplicasPerList = fullReplicas }
        if let writers { c.writers = writers }
        if let rate { c.rate = rate }
        if let maxInFlight { c.maxInFlightPerWriter = maxInFlight }
        if let opsPerMutation { c.opsPerMutation = opsPerMutation }
        if let base {
            guard let parsed = LoadConfiguration.WriteBase(rawValue: base) else {
                throw ValidationError("--base must be head or acked")
            }
            c.writeBase = parsed
        }
        if let initialRows { c.initialRows = initialRows }
        if let sections { c.sectionsPerList = sections }
        if let payloadBytes { c.payloadBytes = payloadBytes }
        if let mix {
            do { c.mix = try OperationMix(parsing: mix) } catch { throw ValidationError(error.description) }
        }
        if let duration { c.duration = duration }
        if let warmup { c.warmup = warmup }
        if let seed { c.seed = seed }
        if let resumeStorm { c.resumeStormSubscribers = resumeStorm }
        if let slowConsumers { c.slowConsumers = slowConsumers }
        if let slowPause { c.slowPauseMilliseconds = slowPause }
        if let slowPeriod { c.slowPeriodMilliseconds = slowPeriod }
        if let slowReceiveBuffer { c.slowReceiveBufferBytes = slowReceiveBuffer }
        if let sourceAddresses { c.sourceAddresses = sourceAddresses }
        if tls || cacert != nil || tlsCert != nil {
            guard (tlsCert == nil) == (tlsKey == nil) else {
                throw ValidationError("--tls-cert and --tls-key go together")
            }
            c.tls = LoadTLS(caFile: cacert, serverName: serverName, daemonCertificate: tlsCert, daemonKey: tlsKey)
        }
        let problems = c.validationErrors()
        guard problems.isEmpty else { throw ValidationError(problems.joined(separator: "; ")) }

        let report: LoadReport
        do {
            report = try LoadRunner(configuration: c, scenario: scenarioName, progress: !quiet).run()
        } catch {
            FileHandle.standardError.write(Data("flowsync-load: \(error)\n".utf8))
            throw ExitCode(2)
        }
        print(json ? report.json() : report.table())
        if let jsonFile { try write(report.json(), to: jsonFile) }
        if let html { try write(LoadReportPage.html(for: report), to: html) }
        if !report.passed { throw ExitCode(1) }
    }

    /// Writes an output file; a failure is exit code 2 with the reason on stderr.
    private func write(_ text: String, to path: String) throws {
        do {
            try text.write(toFile: path, atomically: true, encoding: .utf8)
        } catch {
            FileHandle.standardError.write(Data("flowsync-load: cannot write \(path): \(error)\n".utf8))
            throw ExitCode(2)
        }
    }
}

FlowSyncLoadCommand.main()
