import FlowSyncCore
import FlowSyncLoop
import FlowSyncProtocol
import FlowSyncServer
import FlowSyncTestSupport
import Foundation
import Testing

func ackOrReject(_ m: Message, seq: UInt64) -> Bool {
    switch m {
    case .ack(let a): return a.seq == seq
    case .reject(let r): return r.seq == seq
    default: return false
    }
}

/// Sends a mutation and waits for its ack (nil: a reject, or nothing within `timeout`).
func commit(
    _ client: TestClient, _ list: String, seq: UInt64, base: ListVersion = ListVersion(epoch: 0, version: 0),
    _ ops: [FlowSyncCore.Operation], timeout: Double = 30
) async -> ListVersion? {
    client.send(.mutate(Mutate(listName: list, clientID: client.clientID, seq: seq, base: base, operations: ops)))
    guard case .ack(let a)? = await client.waitFor(timeout: timeout, { ackOrReject($0, seq: seq) }) else { return nil }
    return a.committed
}

func insertRow(_ id: String) -> [FlowSyncCore.Operation] {
    [.insertRows([Row(id: id, kind: "t", payload: Array("payload of \(id)".utf8))], in: .index(0), at: 0)]
}

/// The server over a file store, end to end: restarts, resume, retries, group commit,
/// policies and I/O faults.
@Suite(.serialized, .timeLimit(.minutes(3))) struct ServerDurabilityTests {
    static func fileConfiguration(_ fsync: FsyncPolicy = .always) -> ServerConfiguration {
        var c = ServerConfiguration()
        c.fsyncPolicy = fsync
        c.fsyncIntervalMilliseconds = 50
        return c
    }

    /// A subscriber that saw version 10 resumes after a crash and gets a diff of exactly
    /// versions 11…15; a writer's retry of an acknowledged mutation gets its original ack.
    @Test(arguments: [true, false]) func restartResumesWithExactlyWhatWasMissed(crash: Bool) async throws {
        let directory = TemporaryDirectory("restart")
        defer { directory.remove() }
        let clients = try EventLoopThread()
        defer { _ = clients.shutdown() }
        let first = try await EmbeddedServer(
            configuration: Self.fileConfiguration(), storage: .file(directory: directory.path))
        let writer = try await TestClient.connect(port: first.port, on: clients, clientID: "writer")
        let subscriber = try await TestClient.connect(port: first.port, on: clients, clientID: "subscriber")
        subscriber.send(.subscribe(Subscribe(listName: "todo")))
        _ = await subscriber.waitFor { if case .snapshot = $0 { return true } else { return false } }
        #expect(await commit(writer, "todo", seq: 1, [.insertSections([Section(id: "s")], at: 0)]) != nil)
        var last: ListVersion?
        for seq in 2...10 { last = await commit(writer, "todo", seq: UInt64(seq), insertRow("r\(seq)")) }
        let seen = try #require(last)
        _ = await subscriber.waitFor { if case .diff(let d) = $0 { return d.to == seen } else { return false } }
        var replica = Replica()
        replica.apply(subscriber.drain(), list: "todo")
        #expect(replica.position == seen && replica.problems.isEmpty)
        subscriber.close()
        for seq in 11...15 { last = await commit(writer, "todo", seq: UInt64(seq), insertRow("r\(seq)")) }
        let final = try #require(last)
        let expected = await first.withServer { $0.state(of: "todo")!.director }
        writer.close()
        if crash { first.crash() } else { #expect(await first.stop()) }

        let second = try await EmbeddedServer(
            configuration: Self.fileConfiguration(), storage: .file(directory: directory.path))
        #expect(await second.withServer { $0.state(of: "todo")?.position } == final)
        #expect(await second.withServer { $0.state(of: "todo")?.director } == expected)
        let resumer = try await TestClient.connect(port: second.port, on: clients, clientID: "subscriber")
        resumer.send(.subscribe(Subscribe(listName: "todo", resumeFrom: seen, digest: replica.director.digest)))
        let reply = await resumer.waitFor { m in
            switch m {
            case .diff(let d): return d.listName == "todo"
            case .snapshot(let s): return s.listName == "todo"
            default: return false
            }
        }
        guard case .diff(let diff)? = reply else {
            Issue.record("resume after restart got \(String(describing: reply))")
            return
        }
        #expect(diff.from == seen && diff.to == final)
        replica.apply(.diff(diff), list: "todo")
        #expect(replica.problems.isEmpty, "\(replica.problems)")
        #expect(replica.director == expected)
        // The idempotency table survived: a retry of seq 12 is answered, not applied.
        let retrier = try await TestClient.connect(port: second.port, on: clients, clientID: "writer")
        let again = await commit(retrier, "todo", seq: 12, insertRow("r12"))
        #expect(again == ListVersion(epoch: final.epoch, version: 12))
        #expect(await second.withServer { $0.state(of: "todo")?.position } == final)
        resumer.close()
        retrier.close()
        #expect(await second.stop())
    }

    /// Three lists written in one loop turn (three frames in one TCP write): one fsync
    /// covers them, and every ack leaves after it.
    @Test func oneSyncPerTurnCoversEveryList() async throws {
        let directory = TemporaryDirectory("group")
        defer { directory.remove() }
        let clients = try EventLoopThread()
        defer { _ = clients.shutdown() }
        let server = try await EmbeddedServer(
            configuration: Self.fileConfiguration(), storage: .file(directory: directory.path))
        let writer = try await TestClient.connect(port: server.port, on: clients, clientID: "writer")
        for (k, list) in ["a", "b", "c"].enumerated() {
            #expect(await commit(writer, list, seq: UInt64(k + 1), [.insertSections([Section(id: "s")], at: 0)]) != nil)
        }
        let before = await server.withServer { ($0.store as! FileStore).syncCount }
        let encoder = FrameEncoder(configuration: .disabled)
        var bytes: [UInt8] = []
        for (k, list) in ["a", "b", "c"].enumerated() {
            bytes += encoder.encode(
                .mutate(
                    Mutate(
                        listName: list, clientID: "writer", seq: UInt64(10 + k),
                        base: ListVersion(epoch: 0, version: 0), operations: insertRow("x"))))
        }
        writer.sendRaw(bytes)
        for seq in 10...12 {
            #expect(await writer.waitFor { ackOrReject($0, seq: UInt64(seq)) } != nil)
        }
        let after = await server.withServer { ($0.store as! FileStore).syncCount }
        #expect(after - before == 1, "three lists in one turn: \(after - before) syncs")
        writer.close()
        #expect(await server.stop())
    }

    /// Under `interval`, acks do not wait for the disk; the timer syncs; a crash of the
    /// process (not of the OS) loses nothing, and the unclean stop starts new epochs.
    @Test func intervalPolicySyncsOnItsTimerAndAnUncleanStopChangesTheEpoch() async throws {
        let directory = TemporaryDirectory("interval")
        defer { directory.remove() }
        let clients = try EventLoopThread()
        defer { _ = clients.shutdown() }
        let server = try await EmbeddedServer(
            configuration: Self.fileConfiguration(.interval), storage: .file(directory: directory.path))
        let writer = try await TestClient.connect(port: server.port, on: clients, clientID: "writer")
        #expect(await commit(writer, "i", seq: 1, [.insertSections([Section(id: "s")], at: 0)]) != nil)
        var last: ListVersion?
        for seq in 2...20 { last = await commit(writer, "i", seq: UInt64(seq), insertRow("r\(seq)")) }
        #expect(await eventually(timeout: 30) { await server.withServer { ($0.store as! FileStore).syncCount } > 0 })
        writer.close()
        server.crash()
        let restarted = try await EmbeddedServer(
            configuration: Self.fileConfiguration(.interval), storage: .file(directory: directory.path))
        let position = try #require(await restarted.withServer { $0.state(of: "i")?.position })
        #expect(
            position.version == 0 && position.epoch != last?.epoch,
            "new epoch after an unclean stop under interval: \(position)")
        #expect(await restarted.withServer { $0.state(of: "i")?.director.rowCount } == 19)
        #expect(restarted.recoveryNotes.contains { $0.contains("new epoch") })
        // At version 0 of its new epoch, the list still holds its rows: a subscriber
        // leaving must not make it look disposable.
        let visitor = try await TestClient.connect(port: restarted.port, on: clients, clientID: "visitor")
        visitor.send(.subscribe(Subscribe(listName: "i")))
        _ = await visitor.waitFor { if case .snapshot = $0 { return true } else { return false } }
        visitor.close()
        #expect(await eventually(timeout: 30) { await restarted.withServer { $0.connectionCount } == 0 })
        #expect(await restarted.withServer { $0.state(of: "i")?.director.rowCount } == 19)
        #expect(await restarted.stop())
        // A clean stop keeps the epoch.
        let third = try await EmbeddedServer(
            configuration: Self.fileConfiguration(.interval), storage: .file(directory: directory.path))
        #expect(await third.withServer { $0.state(of: "i")?.position } == position)
        #expect(await third.stop())
    }

    enum FaultCase: String, CaseIterable, CustomTestStringConvertible {
        case writeEIO, writeENOSPC, shortWrite, syncEIO
        var fault: FaultInjectingFileIO.Fault {
            switch self {
            case .writeEIO: return .write(nth: 1, errno: EIO)
            case .writeENOSPC: return .write(nth: 1, errno: ENOSPC)
            case .shortWrite: return .shortWrite(nth: 1)
            case .syncEIO: return .sync(nth: 1, errno: EIO)
            }
        }
        var testDescription: String { rawValue }
    }

    /// A write or fsync that fails: no ack for that batch, the fatal hook fires (the
    /// daemon exits with EX_IOERR), and the next start recovers every acked batch.
    @Test(arguments: FaultCase.allCases) func failedWriteOrSyncIsNeverAcknowledged(_ fault: FaultCase) async throws {
        let directory = TemporaryDirectory("fault")
        defer { directory.remove() }
        let clients = try EventLoopThread()
        defer { _ = clients.shutdown() }
        let io = FaultInjectingFileIO()
        let server = try await EmbeddedServer(
            configuration: Self.fileConfiguration(), storage: .file(directory: directory.path, io: { io }))
        let writer = try await TestClient.connect(port: server.port, on: clients, clientID: "writer")
        let subscriber = try await TestClient.connect(port: server.port, on: clients, clientID: "subscriber")
        subscriber.send(.subscribe(Subscribe(listName: "f")))
        _ = await subscriber.waitFor { if case .snapshot = $0 { return true } else { return false } }
        #expect(await commit(writer, "f", seq: 1, [.insertSections([Section(id: "s")], at: 0)]) != nil)
        var acked: [String] = []
        for seq in 2...6 where await commit(writer, "f", seq: UInt64(seq), insertRow("r\(seq)")) != nil {
            acked.append("r\(seq)")
        }
        #expect(acked.count == 5)
        _ = await subscriber.waitFor { if case .diff(let d) = $0 { return d.toVersion == 6 } else { return false } }
        _ = await server.withServer { _ in io.arm(fault.fault) }
        let failed = await commit(writer, "f", seq: 7, insertRow("doomed"), timeout: 2)
        #expect(failed == nil, "a batch whose record is not durable was acknowledged")
        #expect(io.fired)
        #expect(server.storageFailure != nil)
        #expect(server.storageFailure?.errno == (fault == .writeENOSPC || fault == .shortWrite ? ENOSPC : EIO))
        #expect(
            !subscriber.messages.contains {
                if case .diff(let d) = $0 { return d.toVersion == 7 } else { return false }
            },
            "a diff of the failed batch reached a subscriber")
        #expect(
            await eventually(timeout: 30) { writer.isClosed && subscriber.isClosed },
            "connections are closed after a storage failure")
        server.crash()

        let restarted = try await EmbeddedServer(
            configuration: Self.fileConfiguration(), storage: .file(directory: directory.path))
        let director = try #require(await restarted.withServer { $0.state(of: "f")?.director })
        let rows = Set(director.sections.flatMap { $0.rows.map(\.id) })
        #expect(Set(acked).isSubset(of: rows), "acked rows lost: \(Set(acked).subtracting(rows))")
        let position = try #require(await restarted.withServer { $0.state(of: "f")?.position })
        #expect(position.version == 6 || (fault == .syncEIO && position.version == 7), "recovered \(position)")
        if fault == .shortWrite {
            #expect(restarted.recoveryNotes.contains { $0.contains("torn tail") }, "\(restarted.recoveryNotes)")
        }
        #expect(await restarted.stop())
    }

    /// Two servers cannot share a data directory.
    @Test func dataDirectoryIsLocked() async throws {
        let directory = TemporaryDirectory("lock")
        defer { directory.remove() }
        let server = try await EmbeddedServer(
            configuration: Self.fileConfiguration(), storage: .file(directory: directory.path))
        await #expect(throws: (any Error).self) {
            _ = try await EmbeddedServer(
                configuration: Self.fileConfiguration(), storage: .file(directory: directory.path))
        }
        #expect(await server.stop())
    }
}

/// `eventually` with an async condition.
func eventually(timeout: Double, _ condition: () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
    while ContinuousClock.now < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return await condition()
}
