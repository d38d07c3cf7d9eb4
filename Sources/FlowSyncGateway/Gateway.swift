import FlowSyncGatewayCore
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

    public init(configuration: GatewayConfiguration, logger: Logger = Logger(label: "flowsync-gateway")) {
        precondition(!configuration.endpoints.isEmpty, "Internal inconsistency in Gateway: no daemon endpoints")
        self.configuration = configuration
        self.logger = logger
    }

    /// Every route served, as `METHOD /path/{param}` (the OpenAPI spec's spelling): the
    /// spec drift test compares this with docs/openapi.json.
    public var routes: [String] { makeRouter().routes.map { "\($0.method) \($0.path)" }.sorted() }

    func makeRouter() -> Router<BasicRequestContext> {
        let router = Router()
        // Order: CORS sees every answer, problems included.
        if !configuration.corsOrigins.isEmpty { router.add(middleware: CORSPolicyMiddleware(origins: configuration.corsOrigins)) }
        router.add(middleware: ProblemMiddleware())
        GatewayRoutes(configuration: configuration, streams: streams, logger: logger).register(on: router)
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
        try await app.run()
    }
}
