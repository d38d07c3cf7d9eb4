import FlowSyncCore
import FlowSyncLoop
import FlowSyncProcess
import FlowSyncProtocol
import FlowSyncTestSupport
import Foundation
import Testing

/// Issue #33: a node of this build and one of the build before it (run only with
/// `FLOWSYNC_OLD_FLOWSYNCD=/path/to/old/flowsyncd`, e.g. c68892b's) serve each other's
/// lists: writes forwarded both ways are acknowledged (an old origin is answered
/// through `fs_outbox`, a new one by notification), and each node's subscriber sees
/// the other's writes (announced batches and in-statement notifications carry the same
/// payload).
extension ClusterLogTests {
    static var oldBuild: String? { ProcessInfo.processInfo.environment["FLOWSYNC_OLD_FLOWSYNCD"] }

    @Test(.enabled(if: ClusterLogTests.oldBuild != nil))
    func aNodeOfTheBuildBeforeAndANewOneForwardEachOthersWrites() async throws {
        try await PostgresServer.with { pg in
            let clients = try EventLoopThread()
            defer { _ = clients.shutdown() }
            var oldOptions = DaemonProcess.Options(binary: Self.oldBuild!)
            oldOptions.configText = Self.clusterConfigText(conninfo: pg.conninfo, node: "old", leaseMilliseconds: 5_000)
            let new = try await Self.daemon(
                conninfo: pg.conninfo, node: "new", leaseMilliseconds: 5_000, connected: true)
            let old = try await DaemonProcess.start(oldOptions)
            try await Task.sleep(for: .seconds(2))  // the old build learns of nodes at a lease renewal
            let onNew = try await Self.connectClient(new, clients, "on-new")
            let onOld = try await Self.connectClient(old, clients, "on-old")
            let sql = try await SQLSession.open(pg.conninfo)
            // Lists until each node owns one.
            var ownedBy: [String: String] = [:]
            var k = 0
            while ownedBy.count < 2 && k < 40 {
                let list = "mixed-\(k)"
                #expect(
                    await Self.write(onNew, list, seq: UInt64(k + 1), [.insertSections([Section(id: "s")], at: 0)])?
                        .version == 1)
                if let owner = try await sql.query("SELECT owner FROM fs_lists WHERE list = $1", [.text(list)]).rows
                    .first?[0] ?? nil, ownedBy[owner] == nil
                {
                    ownedBy[owner] = list
                }
                k += 1
            }
            guard let newList = ownedBy["new"], let oldList = ownedBy["old"] else {
                Issue.record("no list on each node: \(ownedBy)")
                return
            }
            for (list, writer, watcher) in [(newList, onOld, onNew), (oldList, onNew, onOld)] {
                watcher.send(.subscribe(Subscribe(listName: list)))
                #expect(await watcher.waitFor(Self.isSnapshot) != nil)
                for n in 0..<3 {
                    let version = await Self.write(
                        writer, list, seq: UInt64(100 + n), Self.row("\(writer.clientID)-\(n)"))
                    #expect(
                        version?.version == UInt64(2 + n),
                        "\(writer.clientID) → \(list) (owned by the other build), write \(n)")
                }
                #expect(
                    await eventually(timeout: 15) { watcher.messages.contains(where: Self.isDiff(to: 4)) },
                    "the owner's subscriber of \(list) saw the writes")
                _ = watcher.drain()
            }
            let outbox = try await sql.query("SELECT count(*) FROM fs_outbox").int(0, 0)
            #expect(outbox == 0, "answers posted through fs_outbox were taken")
            onNew.close()
            onOld.close()
            _ = await new.terminate()
            _ = await old.terminate()
            await sql.close()
        }
    }
}
