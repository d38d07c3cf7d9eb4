import Dispatch
import FlowSyncClient
import FlowSyncCore
import FlowSyncProcess
import Foundation
@preconcurrency import Network
import Testing

struct Note: FlowModel, Equatable {
    static let flowKind = "note"
    var id: String
    var text: String
}

/// FlowSyncClient with its DEFAULT transport in this graph — NetworkTransport, because
/// `canImport(Network)` is true here as on an Apple platform — against a real flowsyncd:
/// connect, write and read a list, observe a change from another client, and a daemon
/// restart on the same port and data (the client reconnects and its offline write lands).
/// A slice of Tests/FlowSyncClientTests/ClientEndToEndTests.swift, bounded in time.
@Suite(.serialized, .timeLimit(.minutes(1))) struct ClientOverNetworkTransportTests {
    /// The daemon binary: FLOWSYNCD (scripts/apple-check.sh sets it), else the main
    /// package's debug build next to this package.
    static var daemonBinary: String {
        if let path = ProcessInfo.processInfo.environment["FLOWSYNCD"], !path.isEmpty { return path }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(".build/debug/flowsyncd")
            .path
    }

    static func client(port: Int, id: String) throws -> FlowSyncClient {
        try FlowSyncClient(
            configuration: .init(
                port: port, clientID: id,
                reconnect: ReconnectPolicy(initialDelayMilliseconds: 20, maxDelayMilliseconds: 200),
                callbackQueue: DispatchQueue(label: "callbacks-\(id)"), randomSeed: 1))
    }

    /// Counts the NWConnections made to `port` (the default transport is NetworkTransport
    /// only if there are some).
    final class ConnectionCounter: Sendable {
        let log = EventLog()
        let observation: NetworkStandIn.Observation
        init(port: Int) {
            let log = self.log
            observation = NetworkStandIn.observeConnections { connection in
                if NetworkStandIn.hostAndPort(of: connection).port == UInt16(port) { log.append("connection") }
            }
        }
    }

    /// Waits (event-driven on the client's changes, bounded) until `condition` holds.
    static func until(
        _ director: ListDirector, timeout: Duration = .seconds(20),
        _ condition: @escaping @Sendable (ListSnapshot) -> Bool
    ) async -> Bool {
        if condition(director.snapshot) { return true }
        let log = EventLog()
        let token = director.observe(on: DispatchQueue(label: "until"), includingCurrent: true) { _ in
            log.append("change")
        }
        defer { token.cancel() }
        let deadline = ContinuousClock.now.advanced(by: timeout)
        var seen = 0
        while ContinuousClock.now < deadline {
            if condition(director.snapshot) { return true }
            seen += 1
            await log.wait(count: seen, timeout: .milliseconds(500))
        }
        return condition(director.snapshot)
    }

    @Test func writeReadObserveAndSurviveADaemonRestart() async throws {
        let dataDirectory = NSTemporaryDirectory() + "flowsync-applecheck-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dataDirectory) }
        var options = DaemonProcess.Options(binary: Self.daemonBinary, dataDirectory: dataDirectory)
        options.startTimeout = .seconds(30)
        let first = try await DaemonProcess.start(options)
        let port = first.port
        let counter = ConnectionCounter(port: port)
        defer { counter.observation.cancel() }

        let writer = try Self.client(port: port, id: "writer")
        let reader = try Self.client(port: port, id: "reader")
        defer {
            writer.close()
            reader.close()
        }
        let written = writer.director("notes")
        let mirror = reader.director("notes")
        try await written.waitUntilLoaded()
        try await mirror.waitUntilLoaded()
        #expect(counter.log.all.count >= 2, "both clients connected through NWConnection (NetworkTransport)")

        // Write, and see it on the other client.
        let changes = EventLog()
        let token = mirror.observe(on: DispatchQueue(label: "mirror"), includingCurrent: false) { change in
            changes.append("\(change.cause)")
        }
        defer { token.cancel() }
        let version = try await written.add(section: NewSection(id: "inbox", models: [Note(id: "a", text: "one")]))
            .committed()
        #expect(version.version >= 1)
        #expect(await Self.until(mirror) { $0.director.sections.map(\.id) == ["inbox"] })
        #expect(try mirror.section(at: 0)?.models(as: Note.self) == [Note(id: "a", text: "one")])
        #expect(await changes.wait(count: 1).count >= 1, "the reader observed the remote change")

        // The daemon stops; a write made meanwhile is shown at once and kept pending.
        #expect(await first.terminate(gracePeriod: .seconds(10)).status == 0)
        let connectionsBefore = counter.log.all.count
        let offline = try written.section(at: 0)!.add(model: Note(id: "b", text: "two"), at: 1)
        #expect(written.snapshot.numberOfModels == 2)

        // A new daemon on the same port and data: both clients reconnect, the write lands.
        options.arguments = ["--port", String(port)]
        let second = try await DaemonProcess.start(options)
        #expect(second.port == port)
        _ = try await offline.committed()
        #expect(
            await Self.until(mirror) { snapshot in
                snapshot.pendingWrites == 0 && snapshot.numberOfModels == 2
            })
        #expect(try mirror.section(at: 0)?.models(as: Note.self).map(\.id) == ["a", "b"])
        #expect(counter.log.all.count > connectionsBefore, "reconnected through new NWConnections")
        writer.close()
        reader.close()
        #expect(await second.terminate(gracePeriod: .seconds(10)).status == 0)
    }
}
