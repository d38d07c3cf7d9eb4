import Dispatch
import FlowSyncClient
import FlowSyncProcess
import FlowSyncTestSupport
import Foundation
import Testing

/// The SDK with several endpoints against two real `flowsyncd` nodes on one PostgreSQL
/// (issue #18: "Subscribers reconnect to any node and resume with a Diff when the history
/// allows"; a small form of test 5). A client started on the node that does not own the
/// list is served there from a replica; when the owner is killed, the writer moves to
/// the other node, whose replica takes the list over once the lease has lapsed, and the
/// subscriber there never resyncs: the next write arrives as a remote change. Part of
/// the serialized `ClusterLogTests` suite: one PostgreSQL at a time.
extension ClusterLogTests {
    static func endpointClient(_ ports: [Int], id: String, tls: TLSPolicy = .automatic) throws -> FlowSyncClient {
        try FlowSyncClient(
            configuration: .init(
                endpoints: ports.map { Endpoint(host: "127.0.0.1", port: $0) }, endpointOrder: .listed, clientID: id,
                reconnect: ReconnectPolicy(initialDelayMilliseconds: 50, maxDelayMilliseconds: 300),
                callbackQueue: DispatchQueue(label: "callbacks-\(id)"), randomSeed: 1, tls: tls))
    }

    /// Also over TLS (issue #32): both nodes serve the test certificate and the SDK
    /// verifies it (the test CA trusted, TLS required on loopback).
    @Test(arguments: Wire.allCases)
    func aWriterMovesToTheNextNodeWhenTheOwnerDiesAndASubscriberOnAReplicaNeverResyncs(wire: Wire) async throws {
        var tls = TLSPolicy.automatic
        var listener = ""
        if wire == .tls {
            let certificates = try await TestCertificates.shared()
            tls = TLSPolicy(mode: .required, additionalTrustedRoots: [try certificates.der("ca.pem")])
            listener =
                "[tls]\nmode = \"required\"\ncertificate_file = \"\(certificates.serverCertificate)\"\nkey_file = \"\(certificates.serverKey)\"\n"
        }
        try await PostgresServer.with { pg in
            let a = try await Self.daemon(pg, node: "a", extra: listener)
            let b = try await Self.daemon(pg, node: "b", extra: listener)
            // The writer starts on A, which takes the list at its first use.
            let writer = try Self.endpointClient([a.port, b.port], id: "writer", tls: tls)
            let written = writer.director("tasks")
            try await written.waitUntilLoaded()
            _ = try await written.submit([.insertSections([Section(id: "s", rows: [Row(id: "r1")])], at: 0)])
                .committed()

            // The subscriber starts on B, which serves the list from a replica of A's.
            let subscriber = try Self.endpointClient([b.port, a.port], id: "subscriber", tls: tls)
            let causes = Shared<[ListChange.Cause]>([])
            let list = subscriber.director("tasks")
            let queue = DispatchQueue(label: "observer")
            let observation = list.observe(on: queue) { change in causes.update { $0.append(change.cause) } }
            try await list.waitUntilLoaded()
            #expect(subscriber.currentEndpoint.port == b.port, "served by B's replica")
            #expect(list.snapshot.director.sections.flatMap { $0.rows.map(\.id) } == ["r1"])

            // A dies. The writer goes to B, whose replica takes the list over once A's
            // lease lapsed; the subscriber stays on B.
            #expect(await a.kill9() == .signaled(9))
            let ticket = try written.submit([.insertRows([Row(id: "r2")], in: .id("s"), at: 1)])
            let version = try await ticket.committed()
            #expect(writer.currentEndpoint.port == b.port)
            #expect(
                await eventually(timeout: 60) { list.snapshot.version == version },
                "the subscriber reached \(version): \(list.snapshot)")
            #expect(subscriber.currentEndpoint.port == b.port)
            #expect(list.snapshot.director.sections.flatMap { $0.rows.map(\.id) } == ["r1", "r2"])
            queue.sync {}
            let seen = causes.get()
            #expect(
                !seen.contains { if case .resync = $0 { true } else { false } },
                "resumed with a Diff, never a Snapshot: \(seen)")
            #expect(seen.last == .remote, "\(seen)")

            observation.cancel()
            writer.close()
            subscriber.close()
            #expect(await b.terminate() == .exited(0), "\(b.output)")
        }
    }
}
