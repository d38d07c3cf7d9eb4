import FlowSyncGatewayCore
import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore

/// `flowsync-gateway`: the HTTP API (and SSE) in front of one daemon or a cluster,
/// on Hummingbird. Stateless: every list state it serves comes from a daemon at request
/// time, so any number of gateways can run side by side and a restart loses nothing
/// (docs/GATEWAY.md).
///
/// Lifetime: ``run(onListening:)`` serves until its task is cancelled.
public final class Gateway: Sendable {
    public let configuration: GatewayConfiguration
    let logger: Logger
    let streams = StreamGauge()
    let webhooks: WebhookService

    /// - Parameter cursorStore: where webhook cursors live; nil: files under
    ///   `configuration.stateDirectory`, or memory without one.
    public init(
        configuration: GatewayConfiguration, cursorStore: (any WebhookCursorStore)? = nil,
        logger: Logger = Logger(label: "flowsync-gateway")
    ) {
        precondition(!configuration.endpoints.isEmpty, "Internal inconsistency in Gateway: no daemon endpoints")
        self.configuration = configuration
        self.logger = logger
        let store: any WebhookCursorStore =
            cursorStore
            ?? configuration.stateDirectory.map {
                FileWebhookCursorStore(directory: URL(fileURLWithPath: $0).appendingPathComponent("webhooks"))
            } ?? MemoryWebhookCursorStore()
        webhooks = WebhookService(
            hooks: configuration.webhooks, endpoints: configuration.endpoints, store: store, logger: logger)
    }

    /// Every route served, as `METHOD /path/{param}` (the OpenAPI spec's spelling): the
    /// spec drift test compares this with docs/openapi.json.
    public var routes: [String] { makeRouter().routes.map { "\($0.method) \($0.path)" }.sorted() }

    func makeRouter() -> Router<BasicRequestContext> {
        let router = Router()
        // Order: CORS sees every answer, problems included.
        if !configuration.corsOrigins.isEmpty {
            router.add(middleware: CORSPolicyMiddleware(origins: configuration.corsOrigins))
        }
        router.add(middleware: ProblemMiddleware())
        GatewayRoutes(configuration: configuration, streams: streams, webhooks: webhooks, logger: logger).register(
            on: router)
        return router
    }

    /// Open SSE streams now (a gauge).
    public var openStreams: Int { streams.current }

    /// Serves until the calling task is cancelled; `onListening` receives the bound port
    /// (useful with port 0).
    public func run(onListening: @escaping @Sendable (Int) -> Void = { _ in }) async throws {
        let router = makeRouter()
        let limits = configuration.limits
        let app = Application(
            router: router,
            server: .http1(configuration: .init(additionalChannelHandlers: [RequestDeadlineHandler(limits: limits)])),
            configuration: ApplicationConfiguration(
                address: .hostname(configuration.host, port: configuration.port), serverName: "flowsync-gateway",
                availableConnectionsDelegate: MaximumAvailableConnections(limits.maxConnections, logger: logger)),
            onServerRunning: { channel in onListening(channel.localAddress?.port ?? 0) },
            logger: logger)
        // The webhooks beside the HTTP server; they stop when it does (cancelling run()),
        // and run() returns once they have drained.
        let webhooks = self.webhooks
        let hooks = Task { await webhooks.run() }
        do {
            try await app.run()
        } catch {
            hooks.cancel()
            await hooks.value
            throw error
        }
        hooks.cancel()
        await hooks.value
    }
}
