import Dispatch
import FlowSyncCore
import FlowSyncProcess
import FlowSyncTestSupport
import Foundation
import Testing

@testable import FlowSyncClient

/// Several endpoints end to end, against two real `flowsyncd` processes on 127.0.0.1
/// port 0 (not a cluster: each has its own store, so a list on one is not the list on
/// the other). What is asserted is what holds without a cluster: which daemon the client
/// is on, that it becomes ready there, that its writes land on the live daemon exactly
/// once, and that a list with the same content on both is resumed without losing the
/// replica or a pending write. The SDK's and the CLI's sides.
@Suite(.serialized, .timeLimit(.minutes(3))) struct EndpointFailoverTests {
    static func daemon() async throws -> DaemonProcess {
        var options = DaemonProcess.Options(binary: try BuiltProduct.path("flowsyncd"))
        options.configText = "[storage]\nengine = \"memory\"\n"
        return try await DaemonProcess.start(options)
    }

    static func client(
        _ endpoints: [Endpoint], id: String = "ep-\(UInt32.random(in: 0...UInt32.max))"
    ) throws -> FlowSyncClient {
        try FlowSyncClient(
            configuration: .init(
                endpoints: endpoints, endpointOrder: .listed, clientID: id,
                reconnect: ReconnectPolicy(initialDelayMilliseconds: 20, maxDelayMilliseconds: 200),
                callbackQueue: DispatchQueue(label: "callbacks-\(id)"), randomSeed: 1))
    }

    static func local(_ port: Int) -> Endpoint { Endpoint(host: "127.0.0.1", port: port) }

    static func isConnected(_ client: FlowSyncClient) -> Bool {
        if case .connected = client.status { true } else { false }
    }

    /// The rows of `list` as one daemon holds them, read by a fresh single-endpoint client.
    static func rows(of list: String, on port: Int) async throws -> [String] {
        let reader = try Self.client([Self.local(port)])
        defer { reader.close() }
        let director = reader.director(list)
        try await director.waitUntilLoaded()
        return director.snapshot.director.sections.flatMap { $0.rows.map(\.id) }
    }

    @Test func aClosedFirstEndpointIsSkippedForTheSecond() async throws {
        let dead = try freeLoopbackPort()
        let live = try await Self.daemon()
        let client = try Self.client([Self.local(dead), Self.local(live.port)])
        let todo = client.director("todo")
        try await todo.waitUntilLoaded()
        #expect(client.currentEndpoint == Self.local(live.port))
        #expect(Self.isConnected(client))
        let ticket = try todo.submit([.insertSections([Section(id: "s", rows: [Row(id: "r1")])], at: 0)])
        _ = try await ticket.committed()
        client.close()
        #expect(try await Self.rows(of: "todo", on: live.port) == ["r1"])
        #expect(await live.terminate() == .exited(0), "\(live.output)")
    }

    /// The client is on A; A is killed. It moves to B, resumes the list (the same content
    /// on both, written there beforehand), keeps its replica visible throughout, and the
    /// write made while A was gone lands on B once.
    @Test func aKilledDaemonsClientMovesToTheOtherAndResumes() async throws {
        let a = try await Self.daemon()
        let b = try await Self.daemon()
        // The same list on both: one section, two rows.
        for port in [a.port, b.port] {
            let seeder = try Self.client([Self.local(port)])
            let list = seeder.director("shared")
            try await list.waitUntilLoaded()
            _ = try await list.submit([
                .insertSections([Section(id: "s", rows: [Row(id: "r1"), Row(id: "r2")])], at: 0)
            ]).committed()
            seeder.close()
        }
        let client = try Self.client([Self.local(a.port), Self.local(b.port)])
        let shared = client.director("shared")
        try await shared.waitUntilLoaded()
        #expect(client.currentEndpoint == Self.local(a.port))
        let rowsBefore = shared.snapshot.director.sections.flatMap { $0.rows.map(\.id) }
        #expect(rowsBefore == ["r1", "r2"])

        #expect(await a.kill9() == .signaled(9))
        #expect(
            await ClientTests.until { client.currentEndpoint == Self.local(b.port) && Self.isConnected(client) },
            "status \(client.status), endpoint \(client.currentEndpoint)")
        // The replica was kept while offline and after the move (no empty list in between).
        #expect(shared.snapshot.isLoaded)
        let ticket = try shared.submit([.insertRows([Row(id: "r3")], in: .id("s"), at: 2)])
        _ = try await ticket.committed()
        #expect(await ClientTests.until { shared.snapshot.pendingWrites == 0 })
        #expect(shared.snapshot.director.sections.flatMap { $0.rows.map(\.id) } == ["r1", "r2", "r3"])
        #expect(try await Self.rows(of: "shared", on: b.port) == ["r1", "r2", "r3"], "the write is on B, once")
        client.close()
        #expect(await b.terminate() == .exited(0), "\(b.output)")
    }

    /// After A was killed, the client moves to B, whose list has another epoch (two
    /// unrelated daemons), resyncs from B's snapshot, and a write then lands on B
    /// exactly once. A write made *before* that resync carries a base of A's epoch and
    /// B rejects it (4011 stale-base-version, "resync"), as the protocol says: that is
    /// why this test waits for the resync (a soak run hit it). A cluster's nodes share
    /// one epoch per list; the write racing the move is tested there
    /// (`ClusterLogTests+SeveralEndpoints.swift`).
    @Test func aWriteAfterTheMoveToADaemonWithAnotherEpochLandsOnItOnce() async throws {
        let a = try await Self.daemon()
        let b = try await Self.daemon()
        let client = try Self.client([Self.local(a.port), Self.local(b.port)])
        let list = client.director("offline")
        try await list.waitUntilLoaded()
        _ = try await list.submit([.insertSections([Section(id: "s")], at: 0)]).committed()
        // B has the same (empty-sectioned) list, so the offline row applies there too.
        let seeder = try Self.client([Self.local(b.port)])
        let seeded = seeder.director("offline")
        try await seeded.waitUntilLoaded()
        _ = try await seeded.submit([.insertSections([Section(id: "s")], at: 0)]).committed()
        let epochOfB = try #require(seeded.snapshot.version).epoch
        seeder.close()

        #expect(await a.kill9() == .signaled(9))
        #expect(
            await ClientTests.until {
                client.currentEndpoint == Self.local(b.port) && list.snapshot.version?.epoch == epochOfB
            },
            "moved to B and resynced: \(client.currentEndpoint), \(String(describing: list.snapshot.version))")
        let ticket = try list.submit([.insertRows([Row(id: "late")], in: .id("s"), at: 0)])
        _ = try await ticket.committed()
        #expect(client.currentEndpoint == Self.local(b.port))
        #expect(try await Self.rows(of: "offline", on: b.port) == ["late"])
        client.close()
        #expect(await b.terminate() == .exited(0), "\(b.output)")
    }

    // MARK: The CLI

    static func cli(
        _ arguments: [String], environment: [String: String?] = [:], timeout: String = "10"
    ) async throws -> ChildProcess.Completed {
        var environment = environment
        for name in ["FLOWSYNC_HOST", "FLOWSYNC_PORT", "FLOWSYNC_TOKEN"] where environment[name] == nil {
            environment[name] = .some(nil)
        }
        return try await ChildProcess.run(
            try BuiltProduct.path("flowsync"), arguments: arguments + ["--timeout", timeout],
            environment: environment, separateStandardError: true, timeout: .seconds(30))
    }

    @Test func theCLITriesItsHostsInOrderPastADeadOne() async throws {
        let dead = try freeLoopbackPort()
        let live = try await Self.daemon()
        // Repeated --host, before and after the command.
        let insert = try await Self.cli([
            "--host", "127.0.0.1:\(dead)", "--host", "127.0.0.1:\(live.port)",
            "insert", "cli", "--section", "s", "--id", "a", "--json", "1",
        ])
        #expect(insert.status == 0, "\(insert)")
        let get = try await Self.cli([
            "get", "cli", "--json", "--host", "127.0.0.1:\(dead)", "--host", "127.0.0.1", "--port", "\(live.port)",
        ])
        #expect(get.status == 0 && get.output.contains("\"a\""), "\(get)")
        // FLOWSYNC_HOST as a comma-separated list.
        let env = try await Self.cli(
            ["get", "cli", "--json"], environment: ["FLOWSYNC_HOST": "127.0.0.1:\(dead),127.0.0.1:\(live.port)"])
        #expect(env.status == 0 && env.output.contains("\"a\""), "\(env)")
        // Malformed: a usage error, before any connection.
        let bad = try await Self.cli(["get", "cli", "--host", "127.0.0.1:0"])
        #expect(bad.status == 64, "\(bad)")
        // Only dead hosts: no connection within the timeout (exit 2), both named.
        let none = try await Self.cli(
            ["get", "cli", "--host", "127.0.0.1:\(dead)", "--host", "127.0.0.1:\(dead)"], timeout: "1")
        #expect(none.status == 2 && none.errorOutput.contains("127.0.0.1:\(dead), 127.0.0.1:\(dead)"), "\(none)")
        #expect(await live.terminate() == .exited(0), "\(live.output)")
    }
}
