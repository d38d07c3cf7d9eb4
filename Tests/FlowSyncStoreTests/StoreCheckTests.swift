import FlowSyncCore
import FlowSyncTestSupport
import Foundation
import Testing

@testable import FlowSyncServer

/// `FileStore.check` (what `flowsyncd --check-store` runs): every list gets recovery's
/// verdict, one by one, and nothing in the data directory changes.
@Suite(.timeLimit(.minutes(2))) struct StoreCheckTests {
    /// Three lists ("a", "b", "c") of 20 batches each, stopped cleanly or not.
    static func store(cleanStop: Bool) throws -> (TemporaryDirectory, [String: ListVersion]) {
        let directory = TemporaryDirectory("check")
        let store = FileStore(
            directory: directory.path, options: .init(fsync: .always, snapshotEveryBatches: 0, snapshotEveryBytes: 0))
        _ = try store.recover(RecoveryOptions())
        var positions: [String: ListVersion] = [:]
        for (k, name) in ["a", "b", "c"].enumerated() {
            var driver = CommitDriver(name: name, seed: UInt64(40 + k))
            try driver.commit(20, to: store)
            positions[name] = driver.sequencer.position
        }
        if cleanStop { try store.close() } else { store.abandon() }
        return (directory, positions)
    }

    /// Every file of the data directory and its bytes (LOCK aside: the check takes it).
    static func contents(_ directory: String) throws -> [String: Data] {
        var files: [String: Data] = [:]
        let enumerator = FileManager.default.enumerator(atPath: directory)
        while let path = enumerator?.nextObject() as? String {
            var isDirectory: ObjCBool = false
            let full = directory + "/" + path
            guard FileManager.default.fileExists(atPath: full, isDirectory: &isDirectory), !isDirectory.boolValue,
                path != "LOCK"
            else { continue }
            files[path] = try Data(contentsOf: URL(fileURLWithPath: full))
        }
        return files
    }

    /// One byte flipped in the middle of `path` (valid records after it in a log).
    static func flipMiddleByte(of path: String) throws {
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        bytes[bytes.count / 2] ^= 0x40
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    static func segment(_ directory: String, list: String) throws -> String {
        let listDirectory = directory + "/lists/" + list
        let name = try #require(
            try FileManager.default.contentsOfDirectory(atPath: listDirectory).filter { $0.hasSuffix(".fsl") }.sorted()
                .last)
        return listDirectory + "/" + name
    }

    @Test(arguments: [false, true]) func healthyStoreIsOkAndUntouched(cleanStop: Bool) throws {
        let (directory, positions) = try Self.store(cleanStop: cleanStop)
        defer { directory.remove() }
        let before = try Self.contents(directory.path)
        let report = try FileStore.check(directory: directory.path)
        #expect(report.verdict == .ok, "\(report)")
        #expect(report.previousStop.hasPrefix(cleanStop ? "clean" : "unclean"), "\(report.previousStop)")
        #expect(report.lists.map(\.listName) == ["a", "b", "c"])
        for list in report.lists {
            #expect(list.verdict == .ok && list.details.isEmpty, "\(list)")
            #expect(list.position == positions[list.listName ?? ""], "\(list)")
        }
        #expect(try Self.contents(directory.path) == before, "the check changed the data directory")
        // And the store still starts exactly as before (the manifest, if any, is intact).
        let store = FileStore(directory: directory.path)
        defer { store.abandon() }
        let recovered = try store.recover(RecoveryOptions())
        #expect(recovered.lists.map(\.name).sorted() == ["a", "b", "c"] && recovered.truncatedBytes == 0)
    }

    @Test func damagedAndTornListsAmongHealthyOnesEachGetTheirVerdict() throws {
        let (directory, positions) = try Self.store(cleanStop: false)
        defer { directory.remove() }
        // "a": one byte flipped in the middle of its log (valid records after it).
        let damaged = try Self.segment(directory.path, list: "a")
        try Self.flipMiddleByte(of: damaged)
        // "c": its last record cut short (a torn tail after an unclean stop).
        let torn = try Self.segment(directory.path, list: "c")
        let tornLength = try #require(try FileManager.default.attributesOfItem(atPath: torn)[.size] as? Int)
        #expect(truncate(torn, off_t(tornLength - 5)) == 0)
        // A leftover temporary file: tidied silently by recovery, not damage.
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: directory.path + "/lists/b/snap-0000000000000009.fss.tmp"))
        let before = try Self.contents(directory.path)

        let report = try FileStore.check(directory: directory.path)
        #expect(try Self.contents(directory.path) == before, "the check changed the data directory")
        #expect(report.verdict == .damaged)
        let byName = Dictionary(uniqueKeysWithValues: report.lists.map { ($0.directory, $0) })
        let a = try #require(byName["a"])
        #expect(a.verdict == .damaged && a.exitCode == 65 && a.position == nil, "\(a)")
        #expect(a.details.contains { $0.contains(damaged) && $0.contains("at byte") }, "\(a.details)")
        let b = try #require(byName["b"])
        #expect(b.verdict == .ok && b.position == positions["b"], "\(b)")
        #expect(
            b.details.contains { $0.contains("would remove") && $0.hasSuffix(".tmp (left over, never read)") },
            "\(b.details)")
        let c = try #require(byName["c"])
        #expect(c.verdict == .repairable, "\(c)")
        #expect(c.details.contains { $0.hasPrefix("torn tail: would truncate \(torn)") }, "\(c.details)")
        let expected = ListVersion(epoch: positions["c"]!.epoch, version: positions["c"]!.version - 1)
        #expect(c.position == expected, "the torn last batch is not counted: \(String(describing: c.position))")

        // The daemon's start agrees: it refuses "a" (and would cut "c").
        let store = FileStore(directory: directory.path)
        defer { store.abandon() }
        #expect(throws: StoreError.self) { try store.recover(RecoveryOptions()) }
    }

    @Test func afterACleanStopNothingIsTornAndAMissingListIsDamaged() throws {
        let (directory, _) = try Self.store(cleanStop: true)
        defer { directory.remove() }
        let segment = try Self.segment(directory.path, list: "c")
        let length = try #require(try FileManager.default.attributesOfItem(atPath: segment)[.size] as? Int)
        #expect(truncate(segment, off_t(length - 5)) == 0)
        try FileManager.default.removeItem(atPath: directory.path + "/lists/b")
        let report = try FileStore.check(directory: directory.path)
        let byName = Dictionary(uniqueKeysWithValues: report.lists.map { ($0.directory, $0) })
        #expect(byName["a"]?.verdict == .ok)
        #expect(
            byName["b"]?.verdict == .damaged && byName["b"]?.details.first?.contains("missing") == true,
            "\(String(describing: byName["b"]))")
        #expect(
            byName["c"]?.verdict == .damaged && byName["c"]?.details.first?.contains("short of") == true,
            "\(String(describing: byName["c"]))")
    }

    @Test func aDamagedManifestIsReportedAndTheListsStillChecked() throws {
        let (directory, _) = try Self.store(cleanStop: true)
        defer { directory.remove() }
        let manifest = directory.path + "/STOPPED"
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: manifest)))
        bytes[bytes.count - 1] ^= 0xFF
        try Data(bytes).write(to: URL(fileURLWithPath: manifest))
        let report = try FileStore.check(directory: directory.path)
        #expect(report.storeVerdict == .damaged && report.verdict == .damaged)
        #expect(report.storeDetails.contains { $0.contains(manifest) }, "\(report.storeDetails)")
        #expect(report.lists.allSatisfy { $0.verdict == .ok }, "\(report.lists)")
    }

    @Test func aStoreHeldByADaemonIsRefused() throws {
        let (directory, _) = try Self.store(cleanStop: true)
        defer { directory.remove() }
        let running = FileStore(directory: directory.path)
        _ = try running.recover(RecoveryOptions())
        defer { running.abandon() }
        do {
            _ = try FileStore.check(directory: directory.path)
            Issue.record("a locked store was checked")
        } catch {
            #expect(error.description.contains("locked"), "\(error)")
        }
        #expect(throws: StoreError.self) { try FileStore.check(directory: directory.path + "/nowhere") }
    }

    @Test func offlineRepairLeavesAStoreTheCheckPasses() throws {
        let (directory, positions) = try Self.store(cleanStop: false)
        defer { directory.remove() }
        let damaged = try Self.segment(directory.path, list: "a")
        try Self.flipMiddleByte(of: damaged)
        let report = try FileStore.repairOffline(
            directory: directory.path, options: .init(), recovery: RecoveryOptions())
        #expect(report.repairedAnything && report.repairedBytes > 0)
        let check = try FileStore.check(directory: directory.path)
        #expect(check.verdict == .ok && check.previousStop.hasPrefix("clean"), "\(check)")
        let byName = Dictionary(uniqueKeysWithValues: check.lists.map { ($0.directory, $0) })
        #expect(
            byName["a"]?.position?.epoch != positions["a"]?.epoch && byName["a"]?.position?.version == 0,
            "a repaired list is in a new epoch")
        #expect(byName["b"]?.position == positions["b"])
    }
}
