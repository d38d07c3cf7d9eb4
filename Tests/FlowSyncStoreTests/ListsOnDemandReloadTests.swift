import FlowSyncCore
import FlowSyncLoop
import FlowSyncProtocol
import FlowSyncTestSupport
import Foundation
import Testing

@testable import FlowSyncServer

extension ListsOnDemandTests {
    /// After a clean stop: a list loaded, unloaded unwritten, loaded again (held to its
    /// start record, not marked twice), then written, unloaded and loaded again (held to
    /// what it left); the next clean stop vouches for every list (RUNNING removed) and
    /// the start after it loads each list exactly.
    @Test func listsReloadedAfterACleanStopKeepItsGuarantee() async throws {
        let directory = TemporaryDirectory("on-demand-reload")
        defer { directory.remove() }
        let clients = try EventLoopThread()
        defer { _ = clients.shutdown() }
        func unloaded(_ server: EmbeddedServer) async -> Bool {
            for _ in 0..<400 {
                if await server.withServer({ $0.listNames.isEmpty }) { return true }
                try? await Task.sleep(for: .milliseconds(25))
            }
            return false
        }
        func snapshot(_ client: TestClient, _ list: String) async -> Snapshot? {
            client.send(.subscribe(Subscribe(listName: list)))
            guard case .snapshot(let s)? = await client.waitFor(Self.isFirstFrame(of: list)) else { return nil }
            client.send(.unsubscribe(Unsubscribe(listName: list)))
            _ = client.drain()
            return s
        }
        let first = try await EmbeddedServer(
            configuration: Self.configuration(), storage: .file(directory: directory.path))
        let writer = try await TestClient.connect(port: first.port, on: clients, clientID: "writer")
        for (k, list) in ["a", "b"].enumerated() {
            #expect(
                await commit(writer, list, seq: UInt64(k * 10 + 1), [.insertSections([Section(id: "s")], at: 0)]) != nil
            )
            #expect(await commit(writer, list, seq: UInt64(k * 10 + 2), insertRow("\(list)-0")) != nil)
        }
        writer.close()
        #expect(await first.stop())

        let second = try await EmbeddedServer(
            configuration: Self.configuration(), storage: .file(directory: directory.path))
        let reader = try await TestClient.connect(port: second.port, on: clients, clientID: "reader")
        let before = await snapshot(reader, "a")
        #expect(await unloaded(second))
        #expect(await snapshot(reader, "a")?.position == before?.position, "reloaded unwritten")
        #expect(await unloaded(second))
        let written = await commit(reader, "a", seq: 1, insertRow("a-1"))
        #expect(written != nil)
        #expect(await unloaded(second))
        #expect(await snapshot(reader, "a")?.position == written, "reloaded after a write")
        #expect(await second.withServer { $0.refusedListNames }.isEmpty)
        reader.close()
        #expect(await second.stop())
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/RUNNING"), "a complete clean stop")
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/lists/a/OPENED"))

        let third = try await EmbeddedServer(
            configuration: Self.configuration(), storage: .file(directory: directory.path))
        let checker = try await TestClient.connect(port: third.port, on: clients, clientID: "checker")
        #expect(await snapshot(checker, "a")?.position == written)
        #expect(await snapshot(checker, "b")?.sections.first?.rows.count == 1)
        #expect(await third.withServer { $0.refusedListNames }.isEmpty)
        checker.close()
        #expect(await third.stop())
    }
}

/// The on-demand start's index of the clean-stop manifest answers exactly what the full
/// decode answers, and refuses what the decode refuses (checksum) plus entries out of
/// order (this store never writes them).
@Suite(.timeLimit(.minutes(2))) struct CleanStopManifestIndexTests {
    @Test func lookupsMatchTheDecodedManifest() throws {
        var random = SeededRandom(seed: 7)
        var lists: [CleanStopManifest.List] = []
        for k in 0..<300 {
            let files = (0..<random.int(1...3)).map {
                CleanStopManifest.File(name: StoreFormat.segmentName(UInt64($0 + 1)), length: random.int(30...9_000))
            }
            lists.append(
                CleanStopManifest.List(
                    directory: "list-\(k)", name: "list \(k)",
                    position: ListVersion(epoch: UInt64(k + 1), version: UInt64(random.int(0...99))), files: files))
        }
        let bytes = CleanStopManifest(lists: lists).encoded()
        let decoded = try CleanStopManifest.decode(bytes)
        let index = try CleanStopManifestIndex(validating: bytes)
        #expect(index.count == 300)
        for list in decoded.lists { #expect(try index.list(inDirectory: list.directory) == list) }
        #expect(try index.list(inDirectory: "list-1000") == nil)
        #expect(try index.list(inDirectory: "a") == nil && index.list(inDirectory: "z") == nil)
        #expect(index.allLists() == decoded.lists)
        var damaged = bytes
        damaged[damaged.count / 2] ^= 1
        #expect(throws: StoreFormat.HeaderProblem.self) { try CleanStopManifestIndex(validating: damaged) }
    }
}
