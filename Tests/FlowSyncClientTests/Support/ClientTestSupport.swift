import Dispatch
import FlowSyncCore
import FlowSyncTestSupport
import Foundation

@testable import FlowSyncClient

struct Contact: FlowModel, Equatable {
    static let flowKind = "contact"
    var id: String
    var name: String
    var favourite = false
}

struct Group: FlowModel, Equatable {
    static let flowKind = "group"
    var id: Int
    var title: String
    var members: [String]
}

struct Header: Codable, Sendable, Equatable {
    var title: String
}

/// Everything an SDK client delivered for one list, checked as it arrives with
/// ``ChangeRecorder`` (each change a valid UIKit batch from the previous state).
final class LiveRecorder: Sendable {
    private let state = Shared(ChangeRecorder())
    private let problems = Shared<[String]>([])
    let queue = DispatchQueue(label: "recorder")
    let observation: ObservationToken

    init(_ director: ListDirector) {
        let state = self.state
        let problems = self.problems
        observation = director.observe(on: queue) { change in
            if let problem = state.update({ $0.record(change) }) { problems.update { $0.append(problem) } }
        }
    }

    var failures: [String] {
        queue.sync {}
        return problems.get()
    }
    var table: Director {
        queue.sync {}
        return state.get().table
    }
    var causes: [ListChange.Cause] {
        queue.sync {}
        return state.get().causes
    }
}

enum ClientTests {
    /// A client for tests: fast reconnects, its own callback queue, a fixed seed.
    static func client(
        port: Int, id: String = "client-\(UInt32.random(in: 0...UInt32.max))", seed: UInt64 = 1
    ) throws -> FlowSyncClient {
        try FlowSyncClient(
            configuration: .init(
                port: port, clientID: id,
                reconnect: ReconnectPolicy(initialDelayMilliseconds: 20, maxDelayMilliseconds: 200),
                callbackQueue: DispatchQueue(label: "callbacks-\(id)"), randomSeed: seed))
    }

    /// The server's list, read on its loop.
    static func serverState(
        _ server: EmbeddedServer, _ list: String
    ) async -> (director: Director, position: ListVersion)? {
        await server.withServer { $0.state(of: list) }
    }

    static func committedMutations(_ server: EmbeddedServer) async -> Int {
        await server.withServer { $0.statistics.mutationsCommitted }
    }

    /// Polls an async condition every 5 ms, for at most `timeout` seconds.
    static func until(timeout: Double = 30, _ condition: () async -> Bool) async -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if await condition() { return true }
            try? await Task.sleep(nanoseconds: 5_000_000)
        }
        return false
    }

    /// Waits until the replica has nothing pending and is at the server's version.
    static func settled(_ director: ListDirector, server: EmbeddedServer, timeout: Double = 60) async -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let state = await serverState(server, director.name) {
                let snapshot = director.snapshot
                if snapshot.pendingWrites == 0 && snapshot.version == state.position
                    && snapshot.director == state.director
                {
                    return true
                }
            }
            try? await Task.sleep(nanoseconds: 10_000_000)
        }
        return false
    }
}
