import FlowSyncCore
import FlowSyncServer
import FlowSyncTestSupport
import Foundation
import Testing

/// Torn and corrupt files: every case is detected — the tail truncated (and the state
/// is exactly that of a prefix of the batches), or recovery refuses — never silently
/// wrong data.
@Suite(.timeLimit(.minutes(2))) struct FileStoreDamageTests {
    struct Fixture {
        let directory: TemporaryDirectory
        let driver: CommitDriver
        let segment: String
        /// Byte offset where each record starts, and the end of the file.
        let recordStarts: [Int]
        let fileLength: Int
    }

    /// A list with `batches` committed batches in one segment, every one synced, then the
    /// process "killed" (`abandon()`): an unclean stop, so the torn-tail rule applies.
    /// (After a clean stop every damage is refused: CleanStopManifestTests.)
    static func fixture(batches: Int, seed: UInt64, snapshotAfter: Int? = nil) throws -> Fixture {
        let directory = TemporaryDirectory("damage")
        let store = FileStore(
            directory: directory.path, options: .init(fsync: .always, snapshotEveryBatches: 0, snapshotEveryBytes: 0))
        _ = try store.recover(RecoveryOptions())
        var driver = CommitDriver(name: "list", seed: seed, historyLimits: .init(maxBatches: 0))
        if let snapshotAfter {
            try driver.commit(snapshotAfter, to: store)
            try store.compact(driver.snapshotAtOldestResumable())
            try driver.commit(batches - snapshotAfter, to: store)
        } else {
            try driver.commit(batches, to: store)
        }
        store.abandon()
        let listDirectory = directory.path + "/lists/list"
        let names = try FileManager.default.contentsOfDirectory(atPath: listDirectory).filter { $0.hasSuffix(".fsl") }
            .sorted()
        let segment = listDirectory + "/" + names.last!
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: segment)))
        // Walk the records by their length fields.
        // Header: magic 8, format 2, flags 2, epoch 8, first version 8, name (u16 + bytes), crc 4.
        let nameLength = Int(bytes[28]) | Int(bytes[29]) << 8
        var offset = 30 + nameLength + 4
        var starts: [Int] = []
        while offset < bytes.count {
            starts.append(offset)
            let length =
                Int(bytes[offset]) | Int(bytes[offset + 1]) << 8 | Int(bytes[offset + 2]) << 16 | Int(bytes[offset + 3])
                << 24
            offset += 8 + length
        }
        guard offset == bytes.count else { throw CrashTestError("records do not end at the end of the file") }
        return Fixture(
            directory: directory, driver: driver, segment: segment, recordStarts: starts, fileLength: bytes.count)
    }

    static func recover(_ directory: String, repair: Bool = false) throws -> RecoveryReport {
        let store = FileStore(directory: directory)
        defer { store.abandon() }
        return try store.recover(RecoveryOptions(historyLimits: .init(maxBatches: 0), repair: repair))
    }

    static func copy(_ fixture: Fixture) throws -> TemporaryDirectory {
        let target = TemporaryDirectory("damage-copy")
        try FileManager.default.removeItem(atPath: target.path)
        try FileManager.default.copyItem(atPath: fixture.directory.path, toPath: target.path)
        return target
    }

    /// Truncating the log at every offset inside its last three records: recovery keeps
    /// exactly the complete records, truncates the rest and says how many bytes.
    @Test func tornTailAtEveryOffset() async throws {
        let problems = try await offThePool { () throws -> [String] in
            let p = Problems()
            try Self.tornTailAtEveryOffsetBody(p)
            return p.list
        }
        #expect(problems.isEmpty, "\(problems)")
    }

    static func tornTailAtEveryOffsetBody(_ p: Problems) throws {
        let f = try Self.fixture(batches: 12, seed: 11)
        defer { f.directory.remove() }
        let firstCut = f.recordStarts[f.recordStarts.count - 3]
        let segmentName = String(f.segment.dropFirst(f.directory.path.count))
        var checked = 0
        for cut in firstCut..<f.fileLength {
            let copy = try Self.copy(f)
            defer { copy.remove() }
            let path = copy.path + segmentName
            p.check(truncate(path, off_t(cut)) == 0)
            let ends = Array(f.recordStarts.dropFirst()) + [f.fileLength]
            let complete = ends.filter { $0 <= cut }.count
            let report = try Self.recover(copy.path)
            let list = try required(report.list("list"))
            p.check(list.sequencer.position.version == UInt64(complete), "cut at \(cut)")
            p.check(list.sequencer.director == f.driver.state(afterCommits: complete), "cut at \(cut)")
            p.check(
                report.truncatedBytes == cut - (complete == 0 ? f.recordStarts[0] : ends[complete - 1]), "cut at \(cut)"
            )
            p.check(!list.needsNewEpoch, "a torn tail under `always` was never acknowledged")
            // The truncation is durable: a second recovery finds nothing to cut.
            try p.check(Self.recover(copy.path).truncatedBytes == 0)
            checked += 1
        }
        p.check(checked > 100)
    }

    /// Random bit flips anywhere in the log: refused (corruption), or — only in the last
    /// record — truncated as a torn tail; the state is always an exact prefix.
    @Test func bitFlipsInRecordsAreDetected() async throws {
        let problems = try await offThePool { () throws -> [String] in
            let p = Problems()
            try Self.bitFlipsInRecordsAreDetectedBody(p)
            return p.list
        }
        #expect(problems.isEmpty, "\(problems)")
    }

    static func bitFlipsInRecordsAreDetectedBody(_ p: Problems) throws {
        let f = try Self.fixture(batches: 15, seed: 12)
        defer { f.directory.remove() }
        let segmentName = String(f.segment.dropFirst(f.directory.path.count))
        var random = SeededRandom(seed: 1212)
        var refused = 0, truncated = 0
        for trial in 0..<150 {
            let copy = try Self.copy(f)
            defer { copy.remove() }
            let path = copy.path + segmentName
            var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
            let position = random.int(0..<bytes.count)
            bytes[position] ^= UInt8(1 << random.int(0..<8))
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            do {
                let report = try Self.recover(copy.path)
                let list = try required(report.list("list"))
                // Accepted only as a torn tail: the flip was in the last record.
                p.check(position >= f.recordStarts.last!, "trial \(trial): flip at \(position) accepted silently")
                p.check(list.sequencer.position.version == UInt64(f.recordStarts.count - 1))
                p.check(list.sequencer.director == f.driver.state(afterCommits: f.recordStarts.count - 1))
                p.check(report.truncatedBytes > 0)
                truncated += 1
            } catch let error as StoreError {
                p.check(error.isCorruption, "trial \(trial): \(error)")
                p.check(
                    error.description.contains(path) || error.description.contains(copy.path),
                    "the message names the file: \(error)")
                refused += 1
            }
        }
        p.check(refused > 100 && truncated > 0, "refused \(refused), truncated \(truncated)")
    }

    /// Flips in a snapshot are refused; `repair` then keeps what is valid and asks for a
    /// new epoch.
    @Test func bitFlipsInSnapshotsAreDetected() async throws {
        let problems = try await offThePool { () throws -> [String] in
            let p = Problems()
            try Self.bitFlipsInSnapshotsAreDetectedBody(p)
            return p.list
        }
        #expect(problems.isEmpty, "\(problems)")
    }

    static func bitFlipsInSnapshotsAreDetectedBody(_ p: Problems) throws {
        let f = try Self.fixture(batches: 20, seed: 13, snapshotAfter: 10)
        defer { f.directory.remove() }
        let listDirectory = f.directory.path + "/lists/list/"
        let snapshotName = try required(
            try FileManager.default.contentsOfDirectory(atPath: listDirectory).first { $0.hasSuffix(".fss") })
        var random = SeededRandom(seed: 1313)
        for trial in 0..<40 {
            let copy = try Self.copy(f)
            defer { copy.remove() }
            let path = copy.path + "/lists/list/" + snapshotName
            var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
            bytes[random.int(0..<bytes.count)] ^= UInt8(1 << random.int(0..<8))
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            do {
                _ = try Self.recover(copy.path)
                p.fail("trial \(trial): a damaged snapshot was accepted")
            } catch is StoreError {
            }
            if trial < 3 {
                let report = try Self.recover(copy.path, repair: true)
                // The snapshot is gone and the log starts after it: nothing usable is
                // left, which the report says; the files are set aside.
                p.check(report.notes.contains { $0.contains("repair") }, "\(report.notes)")
                p.check(FileManager.default.fileExists(atPath: path + ".damaged"))
                p.check(report.list("list")?.needsNewEpoch ?? true)
            }
        }
    }

    /// Damage in the middle: refused with a message naming file and offset; `repair`
    /// keeps the valid prefix, sets the original aside and starts a new epoch.
    @Test func midFileCorruptionRefusesThenRepairKeepsThePrefix() async throws {
        let problems = try await offThePool { () throws -> [String] in
            let p = Problems()
            try Self.midFileCorruptionRefusesThenRepairKeepsThePrefixBody(p)
            return p.list
        }
        #expect(problems.isEmpty, "\(problems)")
    }

    static func midFileCorruptionRefusesThenRepairKeepsThePrefixBody(_ p: Problems) throws {
        let f = try Self.fixture(batches: 10, seed: 14)
        defer { f.directory.remove() }
        let segmentName = String(f.segment.dropFirst(f.directory.path.count))
        let path = f.directory.path + segmentName
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        let damaged = f.recordStarts[4] + 12
        bytes[damaged] ^= 0x40
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        do {
            _ = try Self.recover(f.directory.path)
            p.fail("mid-file corruption accepted")
        } catch let error as StoreError {
            p.check(error.isCorruption)
            p.check(error.description.contains("at byte \(f.recordStarts[4])"), "\(error)")
            p.check(error.description.contains("--repair"), "\(error)")
        }
        let report = try Self.recover(f.directory.path, repair: true)
        let list = try required(report.list("list"))
        p.check(list.sequencer.position.version == 4)
        p.check(list.sequencer.director == f.driver.state(afterCommits: 4))
        p.check(list.needsNewEpoch)
        p.check(report.repairedBytes == f.fileLength - f.recordStarts[4])
        p.check(FileManager.default.fileExists(atPath: path + ".damaged"))
        // After the repair, the store starts clean.
        let again = try Self.recover(f.directory.path)
        p.check(again.list("list")?.sequencer.position.version == 4)
    }
}
