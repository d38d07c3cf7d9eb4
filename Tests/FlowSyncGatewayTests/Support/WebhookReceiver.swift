import FlowSyncCore
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOPosix

@testable import FlowSyncGateway

/// A real HTTP receiver for webhooks on 127.0.0.1 port 0 that fails at random (seeded)
/// or on demand, and records every attempt and every accepted delivery.
final class WebhookReceiver: Sendable {
    struct Delivery: Sendable {
        var key: String
        var list: String
        var hook: String
        var attempt: Int
        var signature: String
        var body: [UInt8]
        var object: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]) ?? [:] }
        var type: String { object["type"] as? String ?? "?" }
        /// The position after the delivery (`Idempotency-Key`).
        var version: UInt64 { UInt64(key.split(separator: ":").last ?? "") ?? 0 }
        var fromVersion: Int? { object["fromVersion"] as? Int }
    }

    private struct State {
        var random: SplitMix64
        var failureRate: Double
        var down = false
        var attempts = 0
        var accepted: [Delivery] = []
    }

    let port: Int
    private let state: Locked<State>
    private let task: Task<Void, any Error>

    init(failureRate: Double = 0, seed: UInt64 = 1) async throws {
        let state = Locked(State(random: SplitMix64(seed: seed), failureRate: failureRate))
        let router = Router()
        router.post("/hook") { request, _ -> Response in
            let body = try await request.body.collect(upTo: 16 << 20)
            let delivery = Delivery(
                key: request.headers[HTTPField.Name("Idempotency-Key")!] ?? "",
                list: request.headers[HTTPField.Name("FlowSync-List")!] ?? "",
                hook: request.headers[HTTPField.Name("FlowSync-Hook")!] ?? "",
                attempt: Int(request.headers[HTTPField.Name("FlowSync-Attempt")!] ?? "") ?? 0,
                signature: request.headers[HTTPField.Name("FlowSync-Signature")!] ?? "",
                body: Array(body.readableBytesView))
            let ok = state.withLock { state -> Bool in
                state.attempts += 1
                if state.down || state.random.nextUnit() < state.failureRate { return false }
                state.accepted.append(delivery)
                return true
            }
            return Response(status: ok ? .ok : .serviceUnavailable)
        }
        let listening = OneShot<Int>()
        var logger = Logger(label: "webhook-receiver")
        logger.logLevel = .critical
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { listening.succeed($0.localAddress?.port ?? 0) }, logger: logger)
        task = Task { try await app.run() }
        self.state = state
        port = try await listening.value
    }

    var url: URL { URL(string: "http://127.0.0.1:\(port)/hook")! }
    var accepted: [Delivery] { state.withLock { $0.accepted } }
    var attempts: Int { state.withLock { $0.attempts } }

    func setDown(_ down: Bool) { state.withLock { $0.down = down } }
    func setFailureRate(_ rate: Double) { state.withLock { $0.failureRate = rate } }

    /// Waits (bounded, polling every 10 ms) until an accepted delivery of `hook` (on `list`,
    /// when given) reached `version`.
    func waitFor(hook: String, list: String? = nil, version: UInt64, timeout: Duration = .seconds(30)) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if accepted.contains(where: { $0.hook == hook && (list == nil || $0.list == list) && $0.version >= version }
            ) {
                return true
            }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return false
    }

    func stop() async {
        task.cancel()
        _ = try? await task.value
    }
}
