import FlowSyncCore
import FlowSyncLoop
import FlowSyncProcess
import FlowSyncProtocol
import FlowSyncTestSupport
import Foundation
import Testing

/// The binaries end to end: `flowsyncd --check-store` (refused while a daemon holds the
/// store, exit 0 healthy, 3 a torn tail, 65 a damaged list among healthy ones,
/// `--repair`), and `flowsync backup` followed by a daemon started on the backup.
@Suite(.serialized, .timeLimit(.minutes(3))) struct DaemonStoreCheckTests {
    static func check(_ directory: String, _ extra: [String] = []) async throws -> ChildProcess.Completed {
        try await ChildProcess.run(
            try CrashTests.binary(), arguments: ["--check-store", "--data-dir", directory] + extra,
            timeout: .seconds(60))
    }

    @Test func checkStoreRefusesARunningDaemonThenReportsEachList() async throws {
        let directory = TemporaryDirectory("check-daemon")
        let backup = TemporaryDirectory("check-backup")
        defer {
            directory.remove()
            backup.remove()
        }
        let thread = try EventLoopThread()
        defer { _ = thread.shutdown() }
        let daemon = try await DaemonProcess.start(
            binary: try CrashTests.binary(), dataDirectory: directory.path, config: nil)
        let writer = try await TestClient.connect(port: daemon.port, on: thread, clientID: "writer")
        var seq: UInt64 = 0
        for list in ["one", "two", "three"] {
            seq += 1
            #expect(await commit(writer, list, seq: seq, [.insertSections([Section(id: "s")], at: 0)]) != nil)
            for k in 0..<8 {
                seq += 1
                #expect(await commit(writer, list, seq: seq, insertRow("\(list)-\(k)")) != nil)
            }
        }
        writer.close()

        // The daemon holds the store: the check is refused, and changes nothing.
        let locked = try await Self.check(directory.path)
        #expect(locked.termination == .exited(1) && locked.output.contains("locked"), "\(locked)")

        // An online backup through the CLI, while the daemon runs.
        let target = backup.path + "/b"
        let cli = try BuiltProduct.path("flowsync")
        let taken = try await ChildProcess.run(
            cli, arguments: ["backup", target, "--port", "\(daemon.port)"], timeout: .seconds(60))
        #expect(taken.termination == .exited(0) && taken.output.contains("backup of 3 lists written"), "\(taken)")
        let again = try await ChildProcess.run(
            cli, arguments: ["backup", target, "--port", "\(daemon.port)"], timeout: .seconds(60))
        #expect(
            again.termination == .exited(4) && again.output.contains("backup-refused")
                && again.output.contains("not empty"), "\(again)")
        #expect(await daemon.terminate() == .exited(0), "\(daemon.output)")

        let healthy = try await Self.check(directory.path)
        #expect(healthy.termination == .exited(0), "\(healthy)")
        #expect(healthy.output.contains("3 lists: 3 ok, 0 repairable, 0 damaged"), "\(healthy.output)")
        let backupCheck = try await Self.check(target)
        #expect(
            backupCheck.termination == .exited(0) && backupCheck.output.contains("previous stop: clean"),
            "\(backupCheck)")

        // Restore: a daemon on the backup serves the lists as they were.
        let restored = try await DaemonProcess.start(
            binary: try CrashTests.binary(), dataDirectory: target, config: nil)
        let reader = try await TestClient.connect(port: restored.port, on: thread, clientID: "reader")
        reader.send(.subscribe(Subscribe(listName: "two")))
        if case .snapshot(let snapshot)? = await reader.waitFor({
            if case .snapshot = $0 { return true } else { return false }
        }) {
            #expect(snapshot.position.version == 9 && snapshot.sections.first?.rows.count == 8, "\(snapshot.position)")
        } else {
            Issue.record("no snapshot from the restored daemon")
        }
        reader.close()
        #expect(await restored.terminate() == .exited(0), "\(restored.output)")

        // One list damaged mid-log among healthy ones: 65, that list named with the
        // file, the others ok.
        let segmentDirectory = directory.path + "/lists/two"
        let name = try #require(
            try FileManager.default.contentsOfDirectory(atPath: segmentDirectory).first { $0.hasSuffix(".fsl") })
        let segment = segmentDirectory + "/" + name
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: segment)))
        bytes[bytes.count / 2] ^= 0x10
        try Data(bytes).write(to: URL(fileURLWithPath: segment))
        let damaged = try await Self.check(directory.path)
        #expect(damaged.termination == .exited(65), "\(damaged)")
        let lines = damaged.output.split(separator: "\n").map(String.init)
        #expect(
            lines.contains {
                $0.hasPrefix("damaged") && $0.contains("\"two\"") || $0.hasPrefix("damaged") && $0.contains("lists/two")
            }, "\(damaged.output)")
        #expect(
            damaged.output.contains(segment) && damaged.output.contains("2 ok, 0 repairable, 1 damaged"),
            "\(damaged.output)")
        #expect(
            lines.contains { $0.hasPrefix("ok") && $0.contains("\"one\"") }
                && lines.contains { $0.hasPrefix("ok") && $0.contains("\"three\"") }, "\(damaged.output)")

        // --repair: the valid prefix kept in a new epoch, then the check passes.
        let repaired = try await Self.check(directory.path, ["--repair"])
        #expect(
            repaired.termination == .exited(0) && repaired.output.contains("repair:")
                && repaired.output.contains("3 ok"), "\(repaired)")
        #expect(FileManager.default.fileExists(atPath: segment + ".damaged"))
    }

    @Test func aTornTailIsReportedAsRepairable() async throws {
        let directory = TemporaryDirectory("check-torn")
        defer { directory.remove() }
        let thread = try EventLoopThread()
        defer { _ = thread.shutdown() }
        let daemon = try await DaemonProcess.start(
            binary: try CrashTests.binary(), dataDirectory: directory.path, config: nil)
        let writer = try await TestClient.connect(port: daemon.port, on: thread, clientID: "writer")
        #expect(await commit(writer, "t", seq: 1, [.insertSections([Section(id: "s")], at: 0)]) != nil)
        for seq in 2...6 { #expect(await commit(writer, "t", seq: UInt64(seq), insertRow("r\(seq)")) != nil) }
        writer.close()
        // A crash (no clean-stop manifest), then the last record cut short.
        _ = await daemon.kill9()
        let listDirectory = directory.path + "/lists/t"
        let name = try #require(
            try FileManager.default.contentsOfDirectory(atPath: listDirectory).first { $0.hasSuffix(".fsl") })
        let segment = listDirectory + "/" + name
        let length = try #require(try FileManager.default.attributesOfItem(atPath: segment)[.size] as? Int)
        #expect(truncate(segment, off_t(length - 3)) == 0)
        let torn = try await Self.check(directory.path)
        #expect(torn.termination == .exited(3), "\(torn)")
        #expect(
            torn.output.contains("repairable \"t\"") && torn.output.contains("torn tail: would truncate \(segment)"),
            "\(torn.output)")
        // Reported, not changed.
        #expect(try FileManager.default.attributesOfItem(atPath: segment)[.size] as? Int == length - 3)
    }
}
