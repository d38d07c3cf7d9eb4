// Why this file is over 450 lines: one case per way a clean-stop manifest can be wrong
// (missing, emptied, short, zeroed, longer, damaged, reserved bits), each a few lines of
// setup the next one reads beside; split, the matrix would no longer read as one table.
import FlowSyncCore
import FlowSyncTestSupport
import Foundation
import Testing

@testable import FlowSyncServer

/// After a clean stop the store accepts exactly what its clean-stop manifest (`STOPPED`)
/// records: a missing, emptied, short, zeroed, longer or damaged newest segment is
/// refused like any corruption (the file named, `--repair` the way out), never taken for
/// a torn write. After an unclean stop the torn-tail rule of docs/STORAGE.md stays.
/// Reserved fields that are not zero are refused, even with their checksum recomputed.
///
/// Every test runs its file work on a thread of its own (``offThePool(_:)``) and
/// collects failures in ``Problems``.
@Suite(.timeLimit(.minutes(3))) struct CleanStopManifestTests {
    /// List "list": 10 batches, a compaction (a snapshot at version 5: the history keeps
    /// 5 batches, so the first segment stays), then 6 batches in a second segment
    /// (versions 11–16). Stopped cleanly or abandoned (a crash after the last sync).
    struct Fixture {
        let directory: TemporaryDirectory
        let driver: CommitDriver
        /// Paths relative to the data directory, so they apply to copies.
        let snapshot: String
        let olderSegment: String
        let newestSegment: String
        /// Where each record of the newest segment starts (versions 11…16), and its end.
        let newestRecordStarts: [Int]
        let newestLength: Int
        /// The last version of the older segment (what is left without the newest).
        let olderLastVersion = 10
        let lastVersion = 16
    }

    static let options = FileStore.Options(fsync: .always, snapshotEveryBatches: 0, snapshotEveryBytes: 0)

    static func fixture(cleanStop: Bool, seed: UInt64 = 21) throws -> Fixture {
        let directory = TemporaryDirectory("manifest")
        let store = FileStore(directory: directory.path, options: options)
        _ = try store.recover(RecoveryOptions())
        var driver = CommitDriver(name: "list", seed: seed, historyLimits: .init(maxBatches: 5))
        try driver.commit(10, to: store)
        try store.compact(driver.snapshotAtOldestResumable())
        try driver.commit(6, to: store)
        if cleanStop { try store.close() } else { store.abandon() }
        let listDirectory = directory.path + "/lists/list"
        let names = try FileManager.default.contentsOfDirectory(atPath: listDirectory).sorted()
        let segments = names.filter { $0.hasSuffix(".fsl") }
        let snapshots = names.filter { $0.hasSuffix(".fss") }
        guard segments.count == 2, snapshots.count == 1 else { throw CrashTestError("fixture: \(names)") }
        let newest = listDirectory + "/" + segments[1]
        let bytes = try read(newest)
        // Header: magic 8, format 2, flags 2, epoch 8, first version 8, name (u16 + bytes), crc 4.
        let nameLength = Int(bytes[28]) | Int(bytes[29]) << 8
        var offset = 30 + nameLength + 4
        var starts: [Int] = []
        while offset < bytes.count {
            starts.append(offset)
            offset += 8 + Int(u32(bytes, at: offset))
        }
        guard offset == bytes.count, starts.count == 6 else {
            throw CrashTestError("fixture: records do not end at the end of the file")
        }
        return Fixture(
            directory: directory, driver: driver, snapshot: "/lists/list/" + snapshots[0],
            olderSegment: "/lists/list/" + segments[0],
            newestSegment: "/lists/list/" + segments[1], newestRecordStarts: starts, newestLength: bytes.count)
    }

    // MARK: Helpers

    static func read(_ path: String) throws -> [UInt8] { try [UInt8](Data(contentsOf: URL(fileURLWithPath: path))) }
    static func write(_ bytes: [UInt8], to path: String) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }
    static func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }

    static func u32(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[offset + $1]) << (8 * $1) }
    }

    static func put(_ value: UInt32, into bytes: inout [UInt8], at offset: Int) {
        for k in 0..<4 { bytes[offset + k] = UInt8(truncatingIfNeeded: value >> (8 * k)) }
    }

    /// Recovers as flowsyncd does at start, then drops the store like a killed process
    /// (so `RUNNING` stays: the next start is an unclean one unless it finds a manifest).
    static func recover(_ directory: String, repair: Bool = false) throws -> RecoveryReport {
        let store = FileStore(directory: directory, options: options)
        defer { store.abandon() }
        return try store.recover(RecoveryOptions(historyLimits: .init(maxBatches: 0), repair: repair))
    }

    static func copy(_ fixture: Fixture) throws -> TemporaryDirectory {
        let target = TemporaryDirectory("manifest-copy")
        try FileManager.default.removeItem(atPath: target.path)
        try FileManager.default.copyItem(atPath: fixture.directory.path, toPath: target.path)
        return target
    }

    /// Runs `body` off the cooperative pool with a fresh ``Problems``; returns its list.
    static func offPool(_ body: @escaping @Sendable (Problems) throws -> Void) async throws -> [String] {
        try await offThePool { () throws -> [String] in
            let p = Problems()
            try body(p)
            return p.list
        }
    }

    /// Expects a refusal: corruption, naming `path` (and `offset` when given), pointing
    /// at `--repair`.
    static func expectRefusal(
        _ p: Problems, _ label: String, path: String, offset: Int? = nil, _ recovery: () throws -> RecoveryReport,
        file: String = #fileID, line: Int = #line
    ) {
        do {
            let report = try recovery()
            p.fail(
                "\(label): accepted (lists \(report.lists.map { "\($0.name) \($0.sequencer.position)" }), notes \(report.notes))",
                file: file, line: line)
        } catch let error as StoreError {
            p.check(error.isCorruption, "\(label): \(error)", file: file, line: line)
            p.check(
                error.description.contains(path), "\(label): the message names \(path): \(error)", file: file,
                line: line)
            p.check(
                error.description.contains("--repair"), "\(label): the message names --repair: \(error)", file: file,
                line: line)
            if let offset {
                p.check(
                    error.description.contains("at byte \(offset):"), "\(label): at byte \(offset): \(error)",
                    file: file, line: line)
            }
        } catch {
            p.fail("\(label): \(error)", file: file, line: line)
        }
    }

    // MARK: The manifest's life cycle

    /// A clean stop writes `STOPPED` (and removes `RUNNING`) recording every file and its
    /// length and the list's position; the next start recovers exactly that and consumes
    /// the manifest before any write, so a crash after it is an unclean stop again.
    @Test func cleanStopRecordsTheFilesAndTheNextStartConsumesIt() async throws {
        let problems = try await Self.offPool { p in
            let f = try Self.fixture(cleanStop: true)
            defer { f.directory.remove() }
            let root = f.directory.path
            p.check(Self.exists(root + "/STOPPED") && !Self.exists(root + "/RUNNING"))
            p.check(!Self.exists(root + "/STOPPED.tmp"))
            let manifest = try CleanStopManifest.decode(Self.read(root + "/STOPPED"))
            let list = try required(manifest.list(inDirectory: "list"))
            p.check(list.name == "list" && list.position == f.driver.sequencer.position, "\(list)")
            let expected = try [f.snapshot, f.olderSegment, f.newestSegment].map { relative in
                CleanStopManifest.File(
                    name: String(relative.split(separator: "/").last!), length: try Self.read(root + relative).count)
            }.sorted { $0.name < $1.name }
            p.check(list.files == expected, "\(list.files) vs \(expected)")
            try p.check(CleanStopManifest.decode(manifest.encoded()) == manifest)

            // The next start: exact, and the manifest is gone before the store is written.
            let store = FileStore(directory: root, options: Self.options)
            let report = try store.recover(RecoveryOptions())
            let recovered = try required(report.list("list"))
            p.check(recovered.sequencer.position == f.driver.sequencer.position && !recovered.needsNewEpoch)
            p.check(recovered.sequencer.director == f.driver.sequencer.director)
            p.check(report.truncatedBytes == 0 && report.notes.isEmpty, "\(report.notes)")
            p.check(
                !Self.exists(root + "/STOPPED") && Self.exists(root + "/RUNNING"),
                "the manifest is consumed, RUNNING written")
            // Appends continue, then a crash: the torn tail of that run is a torn tail.
            var driver = f.driver
            try driver.commit(3, to: store)
            store.abandon()
            let newest = root + f.newestSegment
            let length = try Self.read(newest).count
            p.check(truncate(newest, off_t(length - 3)) == 0)
            let after = try Self.recover(root)
            p.check(
                after.list("list")?.sequencer.position.version == 18,
                "\(String(describing: after.list("list")?.sequencer.position))")
            p.check(after.truncatedBytes > 0 && after.notes.contains { $0.contains("torn tail") }, "\(after.notes)")
        }
        #expect(problems.isEmpty, "\(problems)")
    }

    /// Clean stops in a row, with appends, compactions, a continued segment and a new
    /// epoch between them: every manifest matches the files exactly (a start after each
    /// is accepted and exact), and stopping without a write records the same files.
    @Test func cleanStopsInARowStayExact() async throws {
        let problems = try await Self.offPool { p in
            let directory = TemporaryDirectory("manifest-cycles")
            defer { directory.remove() }
            var driver = CommitDriver(name: "cycled", seed: 41, historyLimits: .init(maxBatches: 4))
            var other = CommitDriver(name: "other list/with a slash", seed: 42)
            for cycle in 0..<6 {
                let store = FileStore(directory: directory.path, options: Self.options)
                let report = try store.recover(RecoveryOptions(historyLimits: .init(maxBatches: 4)))
                p.check(report.notes.isEmpty, "cycle \(cycle): \(report.notes)")
                if cycle > 0 {
                    p.check(report.list("cycled")?.sequencer.position == driver.sequencer.position, "cycle \(cycle)")
                    p.check(report.list("cycled")?.sequencer.director == driver.sequencer.director, "cycle \(cycle)")
                    p.check(report.list(other.name)?.sequencer.position == other.sequencer.position, "cycle \(cycle)")
                }
                switch cycle % 3 {
                case 0:
                    try driver.commit(5, to: store)
                    try other.commit(2, to: store)
                case 1:
                    try driver.commit(3, to: store)
                    try store.compact(driver.snapshotAtOldestResumable())
                    try driver.commit(2, to: store)
                default:
                    // A new epoch, as after a repair; then nothing else this run.
                    driver.sequencer.startEpoch(UInt64(1_000 + cycle))
                    let s = driver.sequencer
                    try store.startEpoch(
                        StoredSnapshot(
                            listName: driver.name, position: s.position, digest: s.director.digest,
                            sections: s.director.sections, dedupe: s.dedupeRecords()))
                }
                try store.close()
                let before = try Self.read(directory.path + "/STOPPED")
                // A start and a stop with no write in between record the same files.
                let idle = FileStore(directory: directory.path, options: Self.options)
                _ = try idle.recover(RecoveryOptions(historyLimits: .init(maxBatches: 4)))
                try idle.close()
                try p.check(
                    Self.read(directory.path + "/STOPPED") == before, "cycle \(cycle): an idle run changed the manifest"
                )
            }
        }
        #expect(problems.isEmpty, "\(problems)")
    }

    /// Both `STOPPED` and `RUNNING` (a crash between writing the manifest and removing
    /// `RUNNING` at the stop, or between writing `RUNNING` and removing the manifest at
    /// the start): the manifest wins — no new epoch even when `RUNNING` names a lossy
    /// policy, and damage is still refused.
    @Test func bothMarkersReadAsACleanStop() async throws {
        let problems = try await Self.offPool { p in
            let f = try Self.fixture(cleanStop: true)
            defer { f.directory.remove() }
            let root = f.directory.path
            try Self.write(Array("fsync=interval\n".utf8), to: root + "/RUNNING")
            let copy = try Self.copy(f)
            defer { copy.remove() }
            let report = try Self.recover(root)
            let list = try required(report.list("list"))
            p.check(
                list.sequencer.position.version == 16 && !list.needsNewEpoch,
                "\(list.sequencer.position) \(report.notes)")
            try Self.write(Array("fsync=interval\n".utf8), to: copy.path + "/RUNNING")
            p.check(truncate(copy.path + f.newestSegment, off_t(f.newestLength - 1)) == 0)
            Self.expectRefusal(p, "short with both markers", path: copy.path + f.newestSegment) {
                try Self.recover(copy.path)
            }
        }
        #expect(problems.isEmpty, "\(problems)")
    }

    /// A store whose write or sync failed never records a clean stop: `close()` throws
    /// the failure, writes no manifest and leaves `RUNNING`, so the next start applies
    /// the unclean-stop rules (a partial record is a torn tail).
    @Test func aFailedStoreRecordsNoCleanStop() async throws {
        let problems = try await Self.offPool { p in
            let directory = TemporaryDirectory("manifest-fault")
            defer { directory.remove() }
            let io = FaultInjectingFileIO()
            let store = FileStore(directory: directory.path, options: Self.options, io: io)
            _ = try store.recover(RecoveryOptions())
            var driver = CommitDriver(name: "list", seed: 31)
            try driver.commit(4, to: store)
            io.arm(.shortWrite(nth: 1))
            do {
                try driver.commit(1, to: store)
                p.fail("the short write was not reported")
            } catch {}
            do {
                try store.close()
                p.fail("close() after a failed write recorded a clean stop")
            } catch let error as StoreError {
                p.check(error.errno == ENOSPC, "\(error)")
            }
            p.check(!Self.exists(directory.path + "/STOPPED") && Self.exists(directory.path + "/RUNNING"))
            let report = try Self.recover(directory.path)
            p.check(report.list("list")?.sequencer.position.version == 4)
            p.check(report.truncatedBytes > 0, "the half record is a torn tail")
        }
        #expect(problems.isEmpty, "\(problems)")
    }

    /// No manifest and no `RUNNING` (a store last stopped by a flowsyncd that wrote no
    /// manifest): the unclean-stop rules, and a note saying so.
    @Test func aStoreWithoutAManifestIsRecoveredUnderTheUncleanRules() async throws {
        let problems = try await Self.offPool { p in
            let f = try Self.fixture(cleanStop: true)
            defer { f.directory.remove() }
            let root = f.directory.path
            try FileManager.default.removeItem(atPath: root + "/STOPPED")
            p.check(truncate(root + f.newestSegment, off_t(f.newestLength - 2)) == 0)
            let report = try Self.recover(root)
            p.check(report.list("list")?.sequencer.position.version == 15)
            p.check(report.truncatedBytes == f.newestLength - 2 - f.newestRecordStarts[5])
            p.check(report.notes.contains { $0.contains("no clean-stop manifest") }, "\(report.notes)")
        }
        #expect(problems.isEmpty, "\(problems)")
    }

    // MARK: Damage to the newest segment, after a clean and after an unclean stop

    enum Damage: String, CaseIterable, Sendable {
        /// Cut inside the record of version 13.
        case truncatedMidRecord
        /// Cut where the record of version 14 starts.
        case truncatedAtRecordBoundary
        /// Zeros from inside the record of version 15 to the end (same length).
        case zeroedTail
        /// Length 0.
        case emptied
        /// The file is gone.
        case deleted
        /// 100 bytes of garbage after the end.
        case garbageAppended
        /// The last record appended again: its checksum holds.
        case validRecordAppended

        func apply(to path: String, _ f: Fixture) throws {
            var bytes = try CleanStopManifestTests.read(path)
            switch self {
            case .truncatedMidRecord: bytes.removeLast(bytes.count - (f.newestRecordStarts[2] + 5))
            case .truncatedAtRecordBoundary: bytes.removeLast(bytes.count - f.newestRecordStarts[3])
            case .zeroedTail:
                for k in (f.newestRecordStarts[4] + 3)..<bytes.count { bytes[k] = 0 }
            case .emptied: bytes = []
            case .deleted:
                try FileManager.default.removeItem(atPath: path)
                return
            case .garbageAppended: bytes += [UInt8](repeating: 0xAB, count: 100)
            case .validRecordAppended: bytes += Array(bytes[f.newestRecordStarts[5]...])
            }
            try CleanStopManifestTests.write(bytes, to: path)
        }

        /// The version `--repair` keeps after a clean stop.
        func repairedVersion(_ f: Fixture) -> Int {
            switch self {
            case .truncatedMidRecord: return 12
            case .truncatedAtRecordBoundary: return 13
            case .zeroedTail: return 14
            case .emptied, .deleted: return f.olderLastVersion
            case .garbageAppended, .validRecordAppended: return f.lastVersion
            }
        }

        /// After an unclean stop: the version the torn-tail rule recovers and the bytes
        /// it truncates, or nil when the damage is corruption even then.
        func uncleanOutcome(_ f: Fixture) -> (version: Int, truncated: Int)? {
            switch self {
            case .truncatedMidRecord: return (12, 5)
            // A cut at a record boundary leaves a shorter, valid log: nothing to see.
            case .truncatedAtRecordBoundary: return (13, 0)
            case .zeroedTail: return (14, f.newestLength - f.newestRecordStarts[4])
            // An empty last segment reads as a segment whose header was never written.
            case .emptied: return (f.olderLastVersion, 0)
            // Without a manifest, a deleted last segment cannot be seen.
            case .deleted: return (f.olderLastVersion, 0)
            case .garbageAppended: return (f.lastVersion, 100)
            // A record that passes its checksum but repeats a version is corruption.
            case .validRecordAppended: return nil
            }
        }
    }

    /// After a clean stop each damage is refused, naming the newest segment — and refused
    /// again at the next start (the manifest stays until a start succeeds). `--repair`
    /// keeps the valid prefix in a new epoch and says what it dropped; the start after it
    /// is clean.
    @Test(arguments: Damage.allCases)
    func damageAfterACleanStopIsRefusedThenRepaired(_ damage: Damage) async throws {
        let problems = try await Self.offPool { p in
            let f = try Self.fixture(cleanStop: true)
            defer { f.directory.remove() }
            let root = f.directory.path
            let path = root + f.newestSegment
            try damage.apply(to: path, f)
            let offset: Int?
            switch damage {
            case .truncatedMidRecord: offset = f.newestRecordStarts[2] + 5
            case .truncatedAtRecordBoundary: offset = f.newestRecordStarts[3]
            case .zeroedTail: offset = f.newestRecordStarts[4]
            case .emptied: offset = 0
            case .deleted: offset = 0
            case .garbageAppended, .validRecordAppended: offset = f.newestLength
            }
            Self.expectRefusal(p, "\(damage)", path: path, offset: offset) { try Self.recover(root) }
            p.check(Self.exists(root + "/STOPPED"), "\(damage): the manifest stays after a refusal")
            Self.expectRefusal(p, "\(damage), second start", path: path, offset: offset) { try Self.recover(root) }

            let report = try Self.recover(root, repair: true)
            let list = try required(report.list("list"))
            let version = damage.repairedVersion(f)
            p.check(
                list.sequencer.position.version == UInt64(version),
                "\(damage): repaired to \(list.sequencer.position), \(version) expected")
            p.check(
                list.sequencer.director == f.driver.state(afterCommits: version),
                "\(damage): the state of version \(version)")
            p.check(list.needsNewEpoch, "\(damage): a repaired list starts a new epoch")
            p.check(
                report.notes.contains { $0.hasPrefix("repair:") && $0.contains(path) },
                "\(damage): the report names the file: \(report.notes)")
            p.check(
                report.notes.contains { $0.contains("recorded through \(f.driver.sequencer.position)") },
                "\(damage): \(report.notes)")
            if version < f.lastVersion {
                p.check(
                    report.notes.contains { $0.contains("\(f.lastVersion - version) acknowledged batches lost") },
                    "\(damage): \(report.notes)")
            }
            // Repair copies every file it changes or drops; a file cut at a record
            // boundary is kept as it is (it is the valid prefix), a deleted one is gone.
            if damage != .deleted && damage != .truncatedAtRecordBoundary {
                p.check(Self.exists(path + ".damaged"), "\(damage): the original is set aside")
            }
            p.check(!Self.exists(root + "/STOPPED"), "\(damage): the repair consumed the manifest")
            let again = try Self.recover(root)
            p.check(
                again.list("list")?.sequencer.position.version == UInt64(version),
                "\(damage): the start after the repair")
            p.check(again.truncatedBytes == 0 && again.repairedBytes == 0, "\(damage): \(again.notes)")
        }
        #expect(problems.isEmpty, "\(problems)")
    }

    /// The same damages after an unclean stop follow the documented torn-tail rule:
    /// a bad tail of the last segment is truncated (and an empty last segment removed);
    /// what cannot be seen without a manifest (a cut at a record boundary, a deleted
    /// last segment) is not seen; a well-formed record that does not fit is refused.
    @Test(arguments: Damage.allCases)
    func damageAfterAnUncleanStopFollowsTheTornTailRule(_ damage: Damage) async throws {
        let problems = try await Self.offPool { p in
            let f = try Self.fixture(cleanStop: false)
            defer { f.directory.remove() }
            let root = f.directory.path
            let path = root + f.newestSegment
            p.check(!Self.exists(root + "/STOPPED") && Self.exists(root + "/RUNNING"))
            try damage.apply(to: path, f)
            guard let outcome = damage.uncleanOutcome(f) else {
                Self.expectRefusal(p, "\(damage)", path: path, offset: f.newestLength) { try Self.recover(root) }
                let report = try Self.recover(root, repair: true)
                p.check(
                    report.list("list")?.sequencer.position.version == UInt64(f.lastVersion)
                        && report.list("list")?.needsNewEpoch == true)
                return
            }
            let report = try Self.recover(root)
            let list = try required(report.list("list"))
            p.check(
                list.sequencer.position.version == UInt64(outcome.version),
                "\(damage): \(list.sequencer.position), \(outcome.version) expected")
            p.check(list.sequencer.director == f.driver.state(afterCommits: outcome.version), "\(damage)")
            p.check(
                report.truncatedBytes == outcome.truncated,
                "\(damage): truncated \(report.truncatedBytes), \(outcome.truncated) expected")
            p.check(!list.needsNewEpoch, "\(damage): a torn tail under `always` was never acknowledged")
            if outcome.truncated > 0 || damage == .emptied {
                p.check(
                    report.notes.contains { $0.hasPrefix("torn tail:") && $0.contains(path) },
                    "\(damage): \(report.notes)")
            }
            // Durable: the next start finds nothing more to cut.
            let again = try Self.recover(root)
            p.check(
                again.truncatedBytes == 0 && again.list("list")?.sequencer.position.version == UInt64(outcome.version),
                "\(damage)")
        }
        #expect(problems.isEmpty, "\(problems)")
    }

    // MARK: Other damage after a clean stop

    /// A file the manifest does not record, a missing snapshot, a missing list directory,
    /// a damaged or flagged manifest: each refused naming the file; `--repair` recovers.
    @Test func otherDamageAfterACleanStopIsRefusedThenRepaired() async throws {
        let problems = try await Self.offPool { p in
            let f = try Self.fixture(cleanStop: true)
            defer { f.directory.remove() }

            // A segment nobody recorded (as if something appended after the stop).
            do {
                let copy = try Self.copy(f)
                defer { copy.remove() }
                let extra = copy.path + "/lists/list/log-00000000000000ff.fsl"
                try Self.write(
                    Array(try Self.read(copy.path + f.newestSegment).prefix(f.newestRecordStarts[0])), to: extra)
                Self.expectRefusal(p, "extra segment", path: extra, offset: 0) { try Self.recover(copy.path) }
                let report = try Self.recover(copy.path, repair: true)
                p.check(
                    report.list("list")?.sequencer.position.version == 16 && report.list("list")?.needsNewEpoch == true,
                    "\(report.notes)")
                p.check(Self.exists(extra + ".damaged") && !Self.exists(extra))
            }
            // The snapshot deleted: the log still starts at version 1, so repair keeps all.
            do {
                let copy = try Self.copy(f)
                defer { copy.remove() }
                try FileManager.default.removeItem(atPath: copy.path + f.snapshot)
                Self.expectRefusal(p, "snapshot deleted", path: copy.path + f.snapshot, offset: 0) {
                    try Self.recover(copy.path)
                }
                let report = try Self.recover(copy.path, repair: true)
                let list = try required(report.list("list"))
                p.check(
                    list.sequencer.position.version == 16 && list.needsNewEpoch
                        && list.sequencer.director == f.driver.sequencer.director)
            }
            // The snapshot cut short.
            do {
                let copy = try Self.copy(f)
                defer { copy.remove() }
                let snapshot = copy.path + f.snapshot
                let bytes = try Self.read(snapshot)
                try Self.write(Array(bytes.dropLast(1)), to: snapshot)
                Self.expectRefusal(p, "snapshot short", path: snapshot, offset: bytes.count - 1) {
                    try Self.recover(copy.path)
                }
                try p.check(Self.recover(copy.path, repair: true).list("list")?.sequencer.position.version == 16)
                p.check(Self.exists(snapshot + ".damaged"))
            }
            // The list's directory deleted.
            do {
                let copy = try Self.copy(f)
                defer { copy.remove() }
                try FileManager.default.removeItem(atPath: copy.path + "/lists/list")
                Self.expectRefusal(p, "list deleted", path: copy.path + "/lists/list", offset: 0) {
                    try Self.recover(copy.path)
                }
                let report = try Self.recover(copy.path, repair: true)
                p.check(
                    report.lists.isEmpty && report.notes.contains { $0.contains("is lost and starts empty") },
                    "\(report.notes)")
            }
            // A list directory the manifest does not know, holding a segment.
            do {
                let copy = try Self.copy(f)
                defer { copy.remove() }
                try FileManager.default.createDirectory(
                    atPath: copy.path + "/lists/other", withIntermediateDirectories: false)
                let stray = copy.path + "/lists/other/" + String(f.olderSegment.split(separator: "/").last!)
                try FileManager.default.copyItem(atPath: copy.path + f.olderSegment, toPath: stray)
                Self.expectRefusal(p, "unrecorded list", path: stray, offset: 0) { try Self.recover(copy.path) }
            }
            // The manifest: a flipped bit, then reserved flags with the checksum recomputed.
            for flags in [false, true] {
                let copy = try Self.copy(f)
                defer { copy.remove() }
                let manifest = copy.path + "/STOPPED"
                var bytes = try Self.read(manifest)
                if flags {
                    bytes[10] = 1
                    Self.put(CRC32C.checksum(bytes[0..<(bytes.count - 4)]), into: &bytes, at: bytes.count - 4)
                } else {
                    bytes[bytes.count / 2] ^= 0x04
                }
                try Self.write(bytes, to: manifest)
                Self.expectRefusal(p, "manifest, flags \(flags)", path: manifest, offset: flags ? 10 : bytes.count - 4)
                { try Self.recover(copy.path) }
                let report = try Self.recover(copy.path, repair: true)
                let list = try required(report.list("list"))
                p.check(
                    list.sequencer.position.version == 16 && list.needsNewEpoch,
                    "a damaged manifest: every list starts a new epoch")
                p.check(Self.exists(manifest + ".damaged") && !Self.exists(manifest))
            }
        }
        #expect(problems.isEmpty, "\(problems)")
    }

    /// Every single bit flip in the newest segment after a clean stop is refused: none is
    /// taken for a torn write, not even in the last record.
    @Test func everyBitFlipAfterACleanStopIsRefused() async throws {
        let problems = try await Self.offPool { p in
            let f = try Self.fixture(cleanStop: true)
            defer { f.directory.remove() }
            var random = SeededRandom(seed: 4242)
            var lastRecord = 0
            for trial in 0..<60 {
                let copy = try Self.copy(f)
                defer { copy.remove() }
                let path = copy.path + f.newestSegment
                var bytes = try Self.read(path)
                // Half of the flips in the last record, where an unclean stop would truncate.
                let position =
                    trial % 2 == 0 ? random.int(f.newestRecordStarts[5]..<bytes.count) : random.int(0..<bytes.count)
                if position >= f.newestRecordStarts[5] { lastRecord += 1 }
                bytes[position] ^= UInt8(1 << random.int(0..<8))
                try Self.write(bytes, to: path)
                Self.expectRefusal(p, "trial \(trial), flip at \(position)", path: path) { try Self.recover(copy.path) }
            }
            p.check(lastRecord >= 30)
        }
        #expect(problems.isEmpty, "\(problems)")
    }

    // MARK: Reserved fields

    enum Reserved: String, CaseIterable, Sendable {
        case segmentHeaderFlags
        case snapshotFlags
        case recordKind
        case snapshotHasForgotten
    }

    /// Reserved fields set, with every checksum recomputed so only the field is wrong:
    /// refused with the file and the offset named, after a clean and after an unclean
    /// stop (never truncated as a torn tail); `--repair` sets the file aside.
    @Test(arguments: Reserved.allCases)
    func reservedFieldsAreRefused(_ field: Reserved) async throws {
        let problems = try await Self.offPool { p in
            for clean in [true, false] {
                let f = try Self.fixture(cleanStop: clean)
                defer { f.directory.remove() }
                let root = f.directory.path
                let label = "\(field), clean stop \(clean)"
                let path: String
                let offset: Int
                switch field {
                case .segmentHeaderFlags:
                    path = root + f.newestSegment
                    var bytes = try Self.read(path)
                    bytes[10] = 1
                    let crcOffset = f.newestRecordStarts[0] - 4
                    Self.put(CRC32C.checksum(bytes[0..<crcOffset]), into: &bytes, at: crcOffset)
                    try Self.write(bytes, to: path)
                    offset = 10
                case .snapshotFlags:
                    path = root + f.snapshot
                    var bytes = try Self.read(path)
                    bytes[10] = 1
                    Self.put(CRC32C.checksum(bytes[0..<(bytes.count - 4)]), into: &bytes, at: bytes.count - 4)
                    try Self.write(bytes, to: path)
                    offset = 10
                case .recordKind:
                    // The last record of the last segment: where a torn write would be.
                    path = root + f.newestSegment
                    var bytes = try Self.read(path)
                    let start = f.newestRecordStarts[5]
                    bytes[start + 8] = 2
                    var crc = CRC32C.checksum(bytes[start..<(start + 4)])
                    crc = CRC32C.checksum(bytes[(start + 8)...], continuing: crc)
                    Self.put(crc, into: &bytes, at: start + 4)
                    try Self.write(bytes, to: path)
                    offset = start
                case .snapshotHasForgotten:
                    path = root + f.snapshot
                    var bytes = try Self.read(path)
                    // magic 8, format 2, flags 2, epoch 8, version 8, name, frame, clients.
                    var at = 28
                    at += 2 + (Int(bytes[at]) | Int(bytes[at + 1]) << 8)
                    at += 4 + Int(Self.u32(bytes, at: at))
                    guard Self.u32(bytes, at: at) > 0 else {
                        p.fail("the snapshot holds no client to flag")
                        return
                    }
                    at += 4
                    at += 2 + (Int(bytes[at]) | Int(bytes[at + 1]) << 8)
                    p.check(bytes[at] <= 1)
                    bytes[at] = 2
                    Self.put(CRC32C.checksum(bytes[0..<(bytes.count - 4)]), into: &bytes, at: bytes.count - 4)
                    try Self.write(bytes, to: path)
                    offset = at
                }
                Self.expectRefusal(p, label, path: path, offset: offset) { try Self.recover(root) }
                let report = try Self.recover(root, repair: true)
                let list = try required(report.list("list"))
                p.check(list.needsNewEpoch && Self.exists(path + ".damaged"), "\(label): \(report.notes)")
                switch field {
                case .segmentHeaderFlags:
                    p.check(
                        list.sequencer.position.version == UInt64(f.olderLastVersion),
                        "\(label): \(list.sequencer.position)")
                case .recordKind:
                    p.check(
                        list.sequencer.position.version == UInt64(f.lastVersion - 1),
                        "\(label): \(list.sequencer.position)")
                case .snapshotFlags, .snapshotHasForgotten:
                    // The log still starts at version 1: everything is kept.
                    p.check(
                        list.sequencer.position.version == UInt64(f.lastVersion), "\(label): \(list.sequencer.position)"
                    )
                }
            }
        }
        #expect(problems.isEmpty, "\(problems)")
    }
}
