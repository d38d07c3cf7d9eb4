import FlowSyncCore
import FlowSyncLoop
import FlowSyncProtocol
import FlowSyncServer
import FlowSyncTestSupport
import Foundation
import Testing

/// The online backup and its restore (docs/STORAGE.md, "Backup and restore"): a backup
/// taken while writers run, then a second server started on the backup directory.
@Suite(.serialized, .timeLimit(.minutes(3))) struct BackupRestoreTests {
    static let lists = ["feed", "inbox", "board"]

    /// What every writer saw acknowledged: row ID → (list, committed version).
    final class AckLog: Sendable {
        let acks = Shared<[String: (list: String, version: ListVersion)]>([:])
    }

    /// One writer: inserts uniquely named rows, round-robin over the lists, each write
    /// awaited before the next; stops at `stop`, after `maxWrites`, or at its deadline.
    static func write(_ client: TestClient, log: AckLog, stop: Shared<Bool>, maxWrites: Int) async {
        let deadline = ContinuousClock.now + .seconds(60)
        var seq: UInt64 = 1
        while !stop.get() && seq <= UInt64(maxWrites) && ContinuousClock.now < deadline {
            let list = lists[Int(seq) % lists.count]
            let id = "\(client.clientID)-\(seq)"
            guard let version = await commit(client, list, seq: seq, insertRow(id), timeout: 20) else {
                // A reject cannot happen (IDs are unique, the base is ignored by index
                // 0 inserts): the test fails on the missing ack below.
                break
            }
            log.acks.update { $0[id] = (list, version) }
            _ = client.drain()
            seq += 1
        }
    }

    @Test func backupUnderLoadRestoresACommittedVersionOfEveryListWithEveryEarlierAck() async throws {
        let source = TemporaryDirectory("backup-source")
        let backup = TemporaryDirectory("backup-target")
        defer {
            source.remove()
            backup.remove()
        }
        let target = backup.path + "/taken"
        let clients = try EventLoopThread()
        defer { _ = clients.shutdown() }
        let first = try await EmbeddedServer(
            configuration: ServerDurabilityTests.fileConfiguration(), storage: .file(directory: source.path))

        // Each list gets its section, and one list a few thousand rows, so the backup's
        // encode takes a while on the worker.
        let setup = try await TestClient.connect(port: first.port, on: clients, clientID: "setup")
        var seq: UInt64 = 0
        for list in Self.lists {
            seq += 1
            #expect(await commit(setup, list, seq: seq, [.insertSections([Section(id: "s")], at: 0)]) != nil)
        }
        for chunk in 0..<4 {
            seq += 1
            let rows = (0..<1_000).map {
                Row(id: "bulk-\(chunk)-\($0)", kind: "t", payload: Array(repeating: UInt8(chunk), count: 64))
            }
            #expect(await commit(setup, "feed", seq: seq, [.insertRows(rows, in: .index(0), at: 0)]) != nil)
        }
        setup.close()

        // A subscriber records the digest of every version it sees.
        let subscriber = try await TestClient.connect(port: first.port, on: clients, clientID: "watcher")
        for list in Self.lists { subscriber.send(.subscribe(Subscribe(listName: list))) }

        let log = AckLog()
        let stop = Shared(false)
        let writers = try await (0..<3).asyncMap {
            try await TestClient.connect(port: first.port, on: clients, clientID: "w\($0)")
        }
        let load = Task {
            await withTaskGroup(of: Void.self) { group in
                for writer in writers {
                    group.addTask { await Self.write(writer, log: log, stop: stop, maxWrites: 400) }
                }
            }
        }
        #expect(await eventually { log.acks.get().count >= 60 }, "the writers did not get going")

        // Everything acknowledged before the request is sent must be in the backup.
        let ackedBefore = log.acks.get()
        let admin = try await TestClient.connect(port: first.port, on: clients, clientID: "admin")
        admin.send(.backupRequest(BackupRequest(requestID: 7, directory: target)))
        let answer = await admin.waitFor(timeout: 60) {
            if case .backupReply(let r) = $0 { return r.requestID == 7 } else { return false }
        }
        let ackedAtReply = log.acks.get().count
        guard case .backupReply(let reply)? = answer else {
            Issue.record("no BackupReply")
            stop.set(true)
            await load.value
            return
        }
        #expect(reply.failure == nil && reply.lists == UInt64(Self.lists.count) && reply.bytes > 0, "\(reply)")
        // Writes go on after the backup: a few more acks, then stop.
        #expect(await eventually { log.acks.get().count >= ackedAtReply + 30 }, "writes did not go on after the backup")
        stop.set(true)
        await load.value
        for writer in writers { writer.close() }
        let acks = log.acks.get()
        var recorded: [String: [UInt64: StateDigest]] = [:]
        for message in subscriber.drain() {
            switch message {
            case .snapshot(let s): recorded[s.listName, default: [:]][s.position.version] = s.digest
            case .diff(let d): recorded[d.listName, default: [:]][d.toVersion] = d.digest
            default: break
            }
        }
        subscriber.close()
        admin.close()
        let original = await first.withServer { server in Self.lists.map { server.state(of: $0)!.position } }
        #expect(await first.stop())

        // The backup is a store after a clean stop that the check passes as it is.
        let check = try FileStore.check(directory: target)
        #expect(
            check.verdict == .ok && check.previousStop.hasPrefix("clean") && check.lists.count == Self.lists.count,
            "\(check)")

        // Restore: a second server on the backup directory.
        let second = try await EmbeddedServer(
            configuration: ServerDurabilityTests.fileConfiguration(), storage: .file(directory: target))
        let reader = try await TestClient.connect(port: second.port, on: clients, clientID: "reader")
        for (k, list) in Self.lists.enumerated() {
            reader.send(.subscribe(Subscribe(listName: list)))
            guard
                case .snapshot(let snapshot)? = await reader.waitFor({
                    if case .snapshot(let s) = $0 { return s.listName == list } else { return false }
                })
            else {
                Issue.record("no snapshot of \(list) from the restored server")
                continue
            }
            let state = try Director(sections: snapshot.sections, limits: DirectorLimits(maxRows: 1_000_000))
            let v = snapshot.position
            // A committed version of the same history, its digest checking.
            #expect(state.digest == snapshot.digest, "\(list): the restored digest does not match its state")
            #expect(
                v.epoch == original[k].epoch && v.version <= original[k].version,
                "\(list): restored at \(v), the original reached \(original[k])")
            if let seen = recorded[list]?[v.version] {
                #expect(seen == snapshot.digest, "\(list): digest at \(v) differs from what subscribers saw")
            }
            // Exactly the writers' rows acknowledged at or before that version…
            let rows = Set(state.sections.flatMap { $0.rows.map(\.id) }.filter { $0.hasPrefix("w") })
            let expected = Set(
                acks.filter { $0.value.list == list && $0.value.version.version <= v.version }.map(\.key))
            #expect(
                rows == expected,
                "\(list) at \(v): \(rows.subtracting(expected).count) rows not acked by then, \(expected.subtracting(rows).count) acked rows missing"
            )
            // …and so every write acknowledged before the backup began.
            let before = ackedBefore.filter { $0.value.list == list }
            #expect(
                before.allSatisfy { rows.contains($0.key) },
                "\(list): a write acknowledged before the backup is missing")
        }
        // The idempotency window came with it: a retry of a write the backup holds gets
        // its original ack.
        let retried = try #require(ackedBefore.first)
        let parts = retried.key.split(separator: "-")
        let retry = try await TestClient.connect(port: second.port, on: clients, clientID: String(parts[0]))
        let committed = await commit(retry, retried.value.list, seq: UInt64(parts[1])!, insertRow(retried.key))
        #expect(
            committed == retried.value.version,
            "retry of \(retried.key): \(String(describing: committed)), originally \(retried.value.version)")
        retry.close()
        reader.close()
        #expect(await second.stop())
    }

    @Test func refusalsAndAMemoryStoreBackupRestoredOnAFileStore() async throws {
        let scratch = TemporaryDirectory("backup-refusals")
        defer { scratch.remove() }
        let clients = try EventLoopThread()
        defer { _ = clients.shutdown() }
        let memory = try await EmbeddedServer(storage: .memory)
        let writer = try await TestClient.connect(port: memory.port, on: clients, clientID: "w")
        #expect(await commit(writer, "a", seq: 1, [.insertSections([Section(id: "s")], at: 0)]) != nil)
        for seq in 2...6 { #expect(await commit(writer, "a", seq: UInt64(seq), insertRow("r\(seq)")) != nil) }
        #expect(
            await commit(writer, "b", seq: 7, [.insertSections([Section(id: "t", header: Array("h".utf8))], at: 0)])
                != nil)

        // Refused at once, with the reason: a relative path, a non-empty directory, and
        // a second backup while one runs (both started in one loop turn).
        try Data([1]).write(to: URL(fileURLWithPath: scratch.path + "/occupied"))
        let replies = await memory.withServer { server in
            let replies = Shared<[String: BackupReply]>([:])
            server.startBackup(to: "relative/dir") { reply in replies.update { $0["relative"] = reply } }
            server.startBackup(to: scratch.path) { reply in replies.update { $0["occupied"] = reply } }
            server.startBackup(to: scratch.path + "/one") { reply in replies.update { $0["one"] = reply } }
            server.startBackup(to: scratch.path + "/two") { reply in replies.update { $0["two"] = reply } }
            return replies
        }
        #expect(await eventually { replies.get().count == 4 })
        let got = replies.get()
        #expect(
            got["relative"]?.failure == .backupRefused && got["relative"]?.message.contains("absolute") == true,
            "\(String(describing: got["relative"]))")
        #expect(
            got["occupied"]?.failure == .backupRefused && got["occupied"]?.message.contains("not empty") == true,
            "\(String(describing: got["occupied"]))")
        #expect(
            got["two"]?.failure == .overloaded && got["two"]?.message.contains("already running") == true,
            "\(String(describing: got["two"]))")
        #expect(got["one"]?.failure == nil && got["one"]?.lists == 2, "\(String(describing: got["one"]))")
        #expect(!FileManager.default.fileExists(atPath: scratch.path + "/two"), "a refused backup wrote something")

        // Restored on a file store: the same lists, positions and states.
        let original = await memory.withServer { server in ["a", "b"].map { server.state(of: $0)! } }
        writer.close()
        #expect(await memory.stop())
        let restored = try await EmbeddedServer(
            configuration: ServerDurabilityTests.fileConfiguration(), storage: .file(directory: scratch.path + "/one"))
        let states = await restored.withServer { server in ["a", "b"].map { server.state(of: $0) } }
        for k in 0..<2 {
            #expect(
                states[k]?.position == original[k].position
                    && states[k]?.director.sections == original[k].director.sections, "list \(k)")
        }
        #expect(await restored.stop())
    }
}

extension Range where Bound == Int {
    /// Maps in order, awaiting each element (sequential: connections one by one).
    func asyncMap<T>(_ transform: (Int) async throws -> T) async rethrows -> [T] {
        var out: [T] = []
        for k in self { out.append(try await transform(k)) }
        return out
    }
}

/// Holds the backup's worker at its first write until the test opens the gate, so a
/// test can watch the loop commit and acknowledge writes while the backup is written.
final class GatedFileIO: FileIO {
    let base = PosixFileIO()
    let open = Shared(false)
    let waiting = Shared(false)

    func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String) throws(StoreError) {
        waiting.set(true)
        // A libuv pool thread, not the test's cooperative pool: bounded (30 s).
        for _ in 0..<30_000 where !open.get() { usleep(1_000) }
        try base.write(fd, bytes, path: path)
    }

    func makeDirectory(_ path: String) throws(StoreError) { try base.makeDirectory(path) }
    func listDirectory(_ path: String) throws(StoreError) -> [String] { try base.listDirectory(path) }
    func exists(_ path: String) -> Bool { base.exists(path) }
    func readFile(_ path: String) throws(StoreError) -> [UInt8] { try base.readFile(path) }
    func openForAppend(_ path: String, create: Bool, truncate: Bool) throws(StoreError) -> Int32 {
        try base.openForAppend(path, create: create, truncate: truncate)
    }
    func sync(_ fd: Int32, path: String) throws(StoreError) { try base.sync(fd, path: path) }
    func close(_ fd: Int32) { base.close(fd) }
    func truncate(_ path: String, to length: Int) throws(StoreError) { try base.truncate(path, to: length) }
    func rename(_ from: String, to: String) throws(StoreError) { try base.rename(from, to: to) }
    func remove(_ path: String) throws(StoreError) { try base.remove(path) }
    func syncDirectory(_ path: String) throws(StoreError) { try base.syncDirectory(path) }
    func syncFileSystem(_ path: String) throws(StoreError) { try base.syncFileSystem(path) }
    func lock(_ path: String) throws(StoreError) -> Int32 { try base.lock(path) }
}

extension BackupRestoreTests {
    /// The backup is written off the loop: with its worker held mid-write, writes are
    /// committed and acknowledged; released, it completes at the version of the request,
    /// without them.
    @Test func writesAreAcknowledgedWhileTheBackupIsWrittenAndAreNotInIt() async throws {
        let scratch = TemporaryDirectory("backup-gated")
        defer { scratch.remove() }
        let clients = try EventLoopThread()
        defer { _ = clients.shutdown() }
        let server = try await EmbeddedServer(
            configuration: ServerDurabilityTests.fileConfiguration(), storage: .file(directory: scratch.path + "/data"))
        let writer = try await TestClient.connect(port: server.port, on: clients, clientID: "w")
        #expect(await commit(writer, "a", seq: 1, [.insertSections([Section(id: "s")], at: 0)]) != nil)
        for seq in 2...5 { #expect(await commit(writer, "a", seq: UInt64(seq), insertRow("r\(seq)")) != nil) }
        let gate = GatedFileIO()
        let reply = Shared<BackupReply?>(nil)
        let target = scratch.path + "/backup"
        let atRequest = await server.withServer { server in
            server.startBackup(to: target, io: gate) { reply.set($0) }
            return server.state(of: "a")!.position
        }
        #expect(await eventually { gate.waiting.get() }, "the backup's worker never wrote")
        // The worker is held: the loop still commits and acknowledges.
        var during: ListVersion?
        for seq in 6...10 { during = await commit(writer, "a", seq: UInt64(seq), insertRow("r\(seq)"), timeout: 10) }
        #expect(
            during?.version == atRequest.version + 5,
            "writes were not acknowledged while the backup was held: \(String(describing: during))")
        #expect(await server.withServer { $0.isBackupRunning } && reply.get() == nil)
        gate.open.set(true)
        #expect(await eventually { reply.get() != nil })
        #expect(reply.get()?.failure == nil, "\(String(describing: reply.get()))")
        writer.close()
        #expect(await server.stop())
        let restored = try await EmbeddedServer(
            configuration: ServerDurabilityTests.fileConfiguration(), storage: .file(directory: target))
        let state = await restored.withServer { $0.state(of: "a") }
        #expect(
            state?.position == atRequest,
            "restored at \(String(describing: state?.position)), requested at \(atRequest)")
        #expect(state?.director.rowCount == 4)
        #expect(await restored.stop())
    }
}

extension BackupRestoreTests {
    /// A shutdown waits for a running backup (its completion touches the server), and
    /// the backup it waited for is complete.
    @Test func aShutdownWaitsForTheBackup() async throws {
        let scratch = TemporaryDirectory("backup-shutdown")
        defer { scratch.remove() }
        let clients = try EventLoopThread()
        defer { _ = clients.shutdown() }
        let server = try await EmbeddedServer(
            configuration: ServerDurabilityTests.fileConfiguration(), storage: .file(directory: scratch.path + "/data"))
        let writer = try await TestClient.connect(port: server.port, on: clients, clientID: "w")
        #expect(await commit(writer, "a", seq: 1, [.insertSections([Section(id: "s")], at: 0)]) != nil)
        writer.close()
        let gate = GatedFileIO()
        let reply = Shared<BackupReply?>(nil)
        let stopped = Shared(false)
        let target = scratch.path + "/backup"
        await server.withServer { server in server.startBackup(to: target, io: gate) { reply.set($0) } }
        #expect(await eventually { gate.waiting.get() })
        await server.withServer { server in server.shutdown { stopped.set(true) } }
        // Held: the shutdown cannot complete (a bound of 300 ms on "not yet", not a race).
        #expect(!(await eventually(timeout: 0.3) { stopped.get() }), "the shutdown completed under a running backup")
        gate.open.set(true)
        #expect(await eventually { stopped.get() })
        #expect(reply.get()?.failure == nil, "\(String(describing: reply.get()))")
        #expect(server.thread.shutdown(timeout: 10))
        let check = try FileStore.check(directory: target)
        #expect(check.verdict == .ok && check.lists.count == 1, "\(check)")
    }
}
