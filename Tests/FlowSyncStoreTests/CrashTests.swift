import FlowSyncCore
import FlowSyncLoop
import FlowSyncProcess
import FlowSyncProtocol
import FlowSyncTestSupport
import Foundation
import Testing

/// The crash test, short: a real flowsyncd (the debug binary) under writers and
/// subscribers, SIGKILLed at random moments and restarted, at least 20 times. The long
/// run is `scripts/crash-test.sh --cycles 500` (figures in docs/BENCHMARKS.md).
@Suite(.serialized, .timeLimit(.minutes(5))) struct CrashTests {
    /// The debug flowsyncd (see ``BuiltProduct``).
    static func binary() throws -> String { try BuiltProduct.path("flowsyncd") }

    @Test func killedAndRestartedTwentyTimesLosesNothingAcknowledged() async throws {
        let directory = TemporaryDirectory("crash")
        defer { directory.remove() }
        let cycles = ProcessInfo.processInfo.environment["FLOWSYNC_CRASH_CYCLES"].flatMap(Int.init) ?? 20
        var options = CrashTestDriver.Options(binary: try Self.binary(), dataDirectory: directory.path)
        options.cycles = cycles
        options.seed = 2026
        options.log = { print("crash test: \($0)") }
        let result = try await CrashTestDriver(options).run()
        print("crash test: \(result)")
        #expect(result.cycles == cycles, "\(result)")
        #expect(result.problems.isEmpty, "\(result.problems)")
        #expect(result.ackedMutations > cycles * 5, "\(result)")
        // Every resume after the first cycle is a diff, or a snapshot the daemon's size rule
        // allows (checked per resume by the driver).
        #expect(
            result.resumesAsDiff + result.resumesAsSmallerSnapshot + result.resumesOfNeverWrittenList >= (cycles - 1)
                * options.subscribers * options.lists.count,
            "\(result)")
    }

    /// The same over TLS (issue #32), shorter: every client reconnects with a full
    /// handshake after each kill, and resumes from the restarted daemon.
    @Test func killedAndRestartedOverTLSLosesNothingAcknowledged() async throws {
        let directory = TemporaryDirectory("crash-tls")
        defer { directory.remove() }
        let certificates = try await TestCertificates.shared()
        let cycles = 8
        var options = CrashTestDriver.Options(binary: try Self.binary(), dataDirectory: directory.path)
        options.cycles = cycles
        options.seed = 3_202
        options.tls = try certificates.clientContext()
        options.extraConfiguration +=
            "[tls]\nmode = \"required\"\ncertificate_file = \"\(certificates.serverCertificate)\"\nkey_file = \"\(certificates.serverKey)\"\n"
        options.log = { print("crash test (TLS): \($0)") }
        let result = try await CrashTestDriver(options).run()
        print("crash test (TLS): \(result)")
        #expect(result.cycles == cycles, "\(result)")
        #expect(result.problems.isEmpty, "\(result.problems)")
        #expect(result.ackedMutations > cycles * 5, "\(result)")
    }
}

/// The flowsyncd binary and damaged data: refuses to start (exit 65, the file named),
/// then `--repair` keeps the valid prefix and starts a new epoch.
@Suite(.serialized, .timeLimit(.minutes(3))) struct DaemonRepairTests {
    @Test func refusesDamagedDataThenRepairs() async throws {
        let directory = TemporaryDirectory("repair")
        defer { directory.remove() }
        let binary = try CrashTests.binary()
        let thread = try EventLoopThread()
        defer { _ = thread.shutdown() }
        let daemon = try await DaemonProcess.start(binary: binary, dataDirectory: directory.path, config: nil)
        let writer = try await TestClient.connect(port: daemon.port, on: thread, clientID: "writer")
        #expect(await commit(writer, "r", seq: 1, [.insertSections([Section(id: "s")], at: 0)]) != nil)
        var last: ListVersion?
        for seq in 2...12 { last = await commit(writer, "r", seq: UInt64(seq), insertRow("row\(seq)")) }
        let before = try #require(last)
        writer.close()
        #expect(await daemon.terminate() == .exited(0), "\(daemon.output)")

        // Damage one byte in the middle of the log.
        let listDirectory = directory.path + "/lists/r"
        let segment =
            listDirectory + "/"
            + (try #require(
                try FileManager.default.contentsOfDirectory(atPath: listDirectory).first { $0.hasSuffix(".fsl") }))
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: segment)))
        bytes[bytes.count / 2] ^= 0x10
        try Data(bytes).write(to: URL(fileURLWithPath: segment))

        let refused = try await ChildProcess.run(
            binary, arguments: ["--port", "0", "--no-metrics", "--data-dir", directory.path],
            timeout: .seconds(60))
        #expect(refused.termination == .exited(65), "\(refused)")
        let output = refused.output
        #expect(
            output.contains("refusing to start") && output.contains(segment) && output.contains("--repair"), "\(output)"
        )

        let repaired = try await DaemonProcess.start(
            binary: binary, dataDirectory: directory.path, config: nil, extraArguments: ["--repair"])
        #expect(repaired.output.contains("repair:"), "\(repaired.output)")
        let reader = try await TestClient.connect(port: repaired.port, on: thread, clientID: "reader")
        reader.send(.subscribe(Subscribe(listName: "r")))
        guard
            case .snapshot(let snapshot)? = await reader.waitFor({
                if case .snapshot = $0 { return true } else { return false }
            })
        else {
            Issue.record("no snapshot after repair")
            return
        }
        #expect(
            snapshot.position.epoch != before.epoch && snapshot.position.version == 0,
            "a repaired list starts a new epoch: \(snapshot.position)")
        let rows = snapshot.sections.first?.rows.count ?? 0
        #expect(rows >= 1 && rows < 11, "the valid prefix is kept: \(rows) rows")
        reader.close()
        #expect(await repaired.terminate() == .exited(0))
    }
}

/// The flowsyncd binary and a failing disk: a file-size limit (`prlimit --fsize`, with
/// SIGXFSZ ignored so the write fails with EFBIG instead of killing the process) makes
/// a log write fail mid-run. No ack for that batch, exit 74 (EX_IOERR), and the next
/// start recovers every acknowledged batch.
@Suite(.serialized, .timeLimit(.minutes(3))) struct DaemonStorageFailureTests {
    @Test func failedWriteExits74AndRestartKeepsEveryAck() async throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/prlimit") else {
            Issue.record("/usr/bin/prlimit is missing (util-linux)")
            return
        }
        let directory = TemporaryDirectory("eio")
        defer { directory.remove() }
        let binary = try CrashTests.binary()
        let thread = try EventLoopThread()
        defer { _ = thread.shutdown() }
        // `trap "" XFSZ` ignores the signal; the disposition survives the exec.
        let wrapper = directory.path + "/run.sh"
        try "#!/bin/bash\ntrap '' XFSZ\nexec /usr/bin/prlimit --fsize=65536 \"$@\"\n".write(
            toFile: wrapper, atomically: true, encoding: .utf8)
        chmod(wrapper, 0o755)
        let data = directory.path + "/data"
        let daemon = try await DaemonProcess.start(
            binary: wrapper, dataDirectory: data, config: nil, prefixArguments: [binary])
        let writer = try await TestClient.connect(port: daemon.port, on: thread, clientID: "writer")
        #expect(await commit(writer, "big", seq: 1, [.insertSections([Section(id: "s")], at: 0)]) != nil)
        var acked: [String] = []
        var unacked: String?
        // Incompressible payloads, so the log really grows.
        var random = SeededRandom(seed: 74)
        let payload = (0..<2_000).map { _ in UInt8.random(in: 0...255, using: &random) }
        for seq in 2...200 {
            let id = "row\(seq)"
            writer.send(
                .mutate(
                    Mutate(
                        listName: "big", clientID: "writer", seq: UInt64(seq), base: ListVersion(epoch: 0, version: 0),
                        operations: [
                            .insertRows(
                                [Row(id: id, kind: "t", payload: payload + Array("\(seq)".utf8))], in: .index(0), at: 0)
                        ])))
            let reply = await writer.waitFor(timeout: 2) { ackOrReject($0, seq: UInt64(seq)) }
            guard case .ack? = reply else {
                unacked = id
                break
            }
            acked.append(id)
        }
        #expect(unacked != nil, "the file size limit was never hit")
        // The failed write ends the process by itself (exit 74).
        guard let ended = await daemon.waitForExit(timeout: .seconds(10)) else {
            Issue.record("flowsyncd still runs after the failed write: \(daemon.output)")
            await daemon.kill9()
            return
        }
        #expect(ended == .exited(74), "\(ended): \(daemon.output)")
        #expect(daemon.output.contains("File too large"), "\(daemon.output)")
        writer.close()

        let restarted = try await DaemonProcess.start(binary: binary, dataDirectory: data, config: nil)
        let reader = try await TestClient.connect(port: restarted.port, on: thread, clientID: "reader")
        reader.send(.subscribe(Subscribe(listName: "big")))
        guard
            case .snapshot(let snapshot)? = await reader.waitFor({
                if case .snapshot = $0 { return true } else { return false }
            })
        else {
            Issue.record("no snapshot after the restart: \(restarted.output)")
            await restarted.terminate()
            return
        }
        let rows = Set(snapshot.sections.flatMap { $0.rows.map(\.id) })
        #expect(Set(acked).isSubset(of: rows), "acknowledged rows lost: \(Set(acked).subtracting(rows).sorted())")
        #expect(
            snapshot.position.version == UInt64(acked.count + 1),
            "\(snapshot.position) after \(acked.count + 1) acked batches")
        reader.close()
        #expect(await restarted.terminate() == .exited(0))
    }
}

/// The crash test with lists on demand: four lists, three writers rotating over them (a
/// different list rests each cycle) and subscribers on two, so lists go idle and are
/// unloaded mid-cycle (a 20 ms idle timeout), and every list is loaded cold after each
/// SIGKILL — by the same recovery rules, torn tails included.
@Suite(.serialized, .timeLimit(.minutes(3))) struct OnDemandCrashTests {
    @Test func killedWithUnloadingEnabledLosesNothingAcknowledged() async throws {
        let directory = TemporaryDirectory("crash-on-demand")
        defer { directory.remove() }
        let cycles = ProcessInfo.processInfo.environment["FLOWSYNC_CRASH_CYCLES"].flatMap(Int.init) ?? 20
        var options = CrashTestDriver.Options(binary: try CrashTests.binary(), dataDirectory: directory.path)
        options.cycles = cycles
        options.seed = 2027
        options.lists = ["crash-a", "crash-b", "crash-c", "crash-d"]
        options.subscribedLists = ["crash-a", "crash-b"]
        options.rotateWriterLists = true
        options.extraConfiguration += "[lists]\non_demand = true\nidle_unload_ms = 20\n"
        options.countInOutput = "unloaded idle lists"
        options.daemonArguments = ["--log-level", "info"]
        options.log = { print("on-demand crash test: \($0)") }
        let result = try await CrashTestDriver(options).run()
        print("on-demand crash test: \(result)")
        #expect(result.cycles == cycles, "\(result)")
        #expect(result.problems.isEmpty, "\(result.problems)")
        #expect(result.ackedMutations > cycles * 5, "\(result)")
        #expect(
            result.resumesAsDiff + result.resumesAsSmallerSnapshot + result.resumesOfNeverWrittenList >= (cycles - 1)
                * options.subscribers * 2,
            "\(result)")
        // Lists were unloaded under load, not only loaded after each kill.
        print("on-demand crash test: \(result.outputMatches) unload scans unloaded lists")
        #expect(result.outputMatches >= 2, "\(result.outputMatches) unload scans unloaded lists")
    }
}
