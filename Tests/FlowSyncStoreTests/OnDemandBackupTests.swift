import FlowSyncCore
import FlowSyncLoop
import FlowSyncProtocol
import FlowSyncTestSupport
import Foundation
import Testing

@testable import FlowSyncServer

/// The online backup with lists on demand (docs/STORAGE.md, "Backup and restore"): most
/// lists are on disk only, and lists load and unload while the backup reads them.
@Suite(.serialized, .timeLimit(.minutes(3))) struct OnDemandBackupTests {
    static let coldLists = (0..<150).map { "cold-\($0)" }
    static let hotLists = ["feed", "inbox", "board"]

    static func configuration() -> ServerConfiguration {
        var c = ServerDurabilityTests.fileConfiguration()
        c.listsOnDemand = true
        // Short: lists unload while the backup runs, and load again under writes.
        c.idleUnloadMilliseconds = 20
        c.snapshotEveryBatches = 8
        return c
    }

    /// Writes each list — a section, then a row `<list>-r` — through a server on
    /// `directory`, then stops it cleanly: the next start holds them all on disk, none
    /// loaded. Returns each list's version after its row.
    static func store(
        _ lists: [String], in directory: String, clients: EventLoopThread
    ) async throws -> [String: ListVersion] {
        let server = try await EmbeddedServer(configuration: configuration(), storage: .file(directory: directory))
        let setup = try await TestClient.connect(port: server.port, on: clients, clientID: "setup")
        var seq: UInt64 = 0
        var versions: [String: ListVersion] = [:]
        for list in lists {
            seq += 1
            #expect(await commit(setup, list, seq: seq, [.insertSections([Section(id: "s")], at: 0)]) != nil)
            seq += 1
            versions[list] = await commit(setup, list, seq: seq, insertRow("\(list)-r"))
            #expect(versions[list] != nil)
        }
        setup.close()
        #expect(await server.stop())
        return versions
    }

    /// One writer: inserts uniquely named rows, alternately into a hot list and a cold
    /// one (so cold lists load, during the backup too); each write awaited.
    static func write(
        _ client: TestClient, log: BackupRestoreTests.AckLog, stop: Shared<Bool>, maxWrites: Int, offset: Int
    ) async {
        let deadline = ContinuousClock.now + .seconds(60)
        var seq: UInt64 = 1
        while !stop.get() && seq <= UInt64(maxWrites) && ContinuousClock.now < deadline {
            let list =
                seq % 2 == 0
                ? hotLists[Int(seq / 2) % hotLists.count] : coldLists[(Int(seq) * 7 + offset * 31) % coldLists.count]
            let id = "\(client.clientID)-\(seq)"
            guard let version = await commit(client, list, seq: seq, insertRow(id), timeout: 20) else { break }
            log.acks.update { $0[id] = (list, version) }
            _ = client.drain()
            seq += 1
        }
    }

    /// 153 stored lists, of which only those being written are loaded; a backup in
    /// chunks of 8 while 3 writers load cold lists (whether a load meets a chunk being
    /// read is timing: the count is printed, not asserted; `BackupPlanTests` checks that
    /// rule against every interleaving it generates). The backup passes `--check-store`, and a daemon restored from it has every
    /// list at a committed version with every write acknowledged before the backup.
    @Test func backupReadsTheListsOnDiskWhileTheyLoadAndUnload() async throws {
        let source = TemporaryDirectory("od-backup-source")
        let backup = TemporaryDirectory("od-backup-target")
        defer {
            source.remove()
            backup.remove()
        }
        let target = backup.path + "/taken"
        let clients = try EventLoopThread()
        defer { _ = clients.shutdown() }

        // Every list gets a section and one row, then a clean stop: the next start holds
        // them all on disk, none loaded.
        let setupVersions = try await Self.store(Self.hotLists + Self.coldLists, in: source.path, clients: clients)

        let second = try await EmbeddedServer(
            configuration: Self.configuration(), storage: .file(directory: source.path))
        await second.withServer { $0.backupChunkSize = 8 }
        let log = BackupRestoreTests.AckLog()
        let stop = Shared(false)
        let writers = try await (0..<3).asyncMap {
            try await TestClient.connect(port: second.port, on: clients, clientID: "w\($0)")
        }
        let load = Task {
            await withTaskGroup(of: Void.self) { group in
                for (k, writer) in writers.enumerated() {
                    group.addTask { await Self.write(writer, log: log, stop: stop, maxWrites: 600, offset: k) }
                }
            }
        }
        #expect(await eventually { log.acks.get().count >= 60 }, "the writers did not get going")
        let loadedAtRequest = await second.withServer { $0.listNames.count }

        let ackedBefore = log.acks.get()
        let admin = try await TestClient.connect(port: second.port, on: clients, clientID: "admin")
        admin.send(.backupRequest(BackupRequest(requestID: 9, directory: target)))
        let answer = await admin.waitFor(timeout: 60) {
            if case .backupReply(let r) = $0 { return r.requestID == 9 } else { return false }
        }
        let ackedAtReply = log.acks.get().count
        #expect(await eventually { log.acks.get().count >= ackedAtReply + 20 }, "writes did not go on after the backup")
        stop.set(true)
        await load.value
        for writer in writers { writer.close() }
        admin.close()
        let statistics = await second.withServer { $0.statistics }
        #expect(await second.stop())
        guard case .backupReply(let reply)? = answer else {
            Issue.record("no BackupReply")
            return
        }
        let all = Self.hotLists + Self.coldLists
        #expect(reply.failure == nil && reply.lists == UInt64(all.count), "\(reply)")
        // The run did what it is meant to exercise: most lists were on disk only when
        // the backup began, and lists loaded and unloaded around it.
        #expect(loadedAtRequest < all.count / 2, "\(loadedAtRequest) lists loaded at the request")
        #expect(
            statistics.listLoads >= 20 && statistics.listUnloads > 0,
            "loads \(statistics.listLoads), unloads \(statistics.listUnloads)")
        print(
            "on-demand backup: \(loadedAtRequest) lists loaded at the request, \(statistics.listLoads) loads, \(statistics.listUnloads) unloads, \(statistics.loadsHeldByBackup) loads held by the backup's reads, \(ackedBefore.count) acks before it"
        )

        let check = try FileStore.check(directory: target)
        #expect(
            check.verdict == .ok && check.previousStop.hasPrefix("clean") && check.lists.count == all.count, "\(check)")

        // Restore, every list loaded at start (a full recovery of the backup).
        let acks = log.acks.get()
        let restored = try await EmbeddedServer(
            configuration: ServerDurabilityTests.fileConfiguration(), storage: .file(directory: target))
        let reader = try await TestClient.connect(port: restored.port, on: clients, clientID: "reader")
        for list in all {
            reader.send(.subscribe(Subscribe(listName: list)))
            guard
                case .snapshot(let snapshot)? = await reader.waitFor({
                    if case .snapshot(let s) = $0 { return s.listName == list } else { return false }
                })
            else {
                Issue.record("no snapshot of \(list) from the restored server")
                continue
            }
            // One subscription at a time (a connection holds at most 64).
            reader.send(.unsubscribe(Unsubscribe(listName: list)))
            let state = try Director(sections: snapshot.sections, limits: DirectorLimits(maxRows: 1_000_000))
            let v = snapshot.position
            #expect(state.digest == snapshot.digest, "\(list): the restored digest does not match its state")
            #expect(
                v.epoch == setupVersions[list]?.epoch && v.version >= setupVersions[list]?.version ?? .max,
                "\(list): restored at \(v), set up at \(String(describing: setupVersions[list]))")
            let rows = Set(state.sections.flatMap { $0.rows.map(\.id) })
            #expect(rows.contains("\(list)-r"), "\(list): its first row is missing")
            // Exactly the writers' rows acknowledged at or before that version, so
            // every write acknowledged before the backup began.
            let written = rows.filter { $0.hasPrefix("w") }
            let expected = Set(
                acks.filter { $0.value.list == list && $0.value.version.version <= v.version }.map(\.key))
            #expect(
                written == expected,
                "\(list) at \(v): \(written.subtracting(expected).count) rows not acked by then, \(expected.subtracting(written).count) acked rows missing"
            )
            #expect(
                ackedBefore.filter { $0.value.list == list }.allSatisfy { written.contains($0.key) },
                "\(list): a write acknowledged before the backup is missing")
        }
        reader.close()
        #expect(await restored.stop())
    }

    /// A damaged list on disk fails the backup, naming it (the other lists are served
    /// throughout); no `STOPPED` is written, so the directory is never taken for a
    /// complete backup.
    @Test func aDamagedListOnDiskFailsTheBackupNamingIt() async throws {
        let source = TemporaryDirectory("od-backup-damaged")
        let backup = TemporaryDirectory("od-backup-damaged-target")
        defer {
            source.remove()
            backup.remove()
        }
        let target = backup.path + "/taken"
        let clients = try EventLoopThread()
        defer { _ = clients.shutdown() }
        _ = try await Self.store(["good", "bad"], in: source.path, clients: clients)
        // One byte flipped in the middle of the bad list's log.
        let badDirectory = source.path + "/lists/bad"
        let segment = try #require(
            try FileManager.default.contentsOfDirectory(atPath: badDirectory).first { $0.hasSuffix(".fsl") })
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: badDirectory + "/" + segment)))
        bytes[bytes.count / 2] ^= 0xFF
        try Data(bytes).write(to: URL(fileURLWithPath: badDirectory + "/" + segment))

        let second = try await EmbeddedServer(
            configuration: Self.configuration(), storage: .file(directory: source.path))
        let reply = Shared<BackupReply?>(nil)
        await second.withServer { server in
            server.startBackup(to: target) { reply.set($0) }
            return true
        }
        #expect(await eventually(timeout: 30) { reply.get() != nil })
        let failure = reply.get()
        #expect(
            failure?.failure == .backupRefused && failure?.message.contains("bad") == true,
            "\(String(describing: failure))")
        #expect(!FileManager.default.fileExists(atPath: target + "/STOPPED"))
        // The good list is served, before and after.
        let reader = try await TestClient.connect(port: second.port, on: clients, clientID: "reader")
        reader.send(.subscribe(Subscribe(listName: "good")))
        guard
            case .snapshot(let snapshot)? = await reader.waitFor({
                if case .snapshot = $0 { return true } else { return false }
            })
        else {
            Issue.record("no snapshot of the good list")
            return
        }
        #expect(snapshot.sections.first?.rows.map(\.id) == ["good-r"])
        reader.close()
        #expect(await second.stop())
    }
}
