import FlowSyncGatewayCore
import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
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
    /// Ready daemon links for GET and un-keyed POST requests (docs/GATEWAY.md).
    let linkPool: DaemonLinkPool
    /// The WebSocket's shared feeds, one per (list, token) (docs/GATEWAY.md, "Shared feeds").
    let feeds: WebSocketFeedHub

    /// - Parameter cursorStore: where webhook cursors live; nil: files under
    ///   `configuration.stateDirectory`, or memory without one.
    /// - Throws: ``GatewayConfigurationError`` when a setting is out of its range
    ///   (``GatewayConfiguration/validate()``); nothing has been opened then.
    public init(
        configuration: GatewayConfiguration, cursorStore: (any WebhookCursorStore)? = nil,
        logger: Logger = Logger(label: "flowsync-gateway")
    ) throws(GatewayConfigurationError) {
        try configuration.validate()
        self.configuration = configuration
        self.logger = logger
        let store: any WebhookCursorStore =
            cursorStore
            ?? configuration.stateDirectory.map {
                FileWebhookCursorStore(directory: URL(fileURLWithPath: $0).appendingPathComponent("webhooks"))
            } ?? MemoryWebhookCursorStore()
        linkPool = DaemonLinkPool(
            endpoints: configuration.endpoints, limits: configuration.limits.linkPool,
            timeoutMilliseconds: configuration.limits.daemonTimeoutMilliseconds)
        let endpoints = configuration.endpoints
        let timeout = configuration.limits.daemonTimeoutMilliseconds
        feeds = WebSocketFeedHub { token in
            DaemonLink.Options(
                endpoints: endpoints, token: token, clientID: GatewayRoutes.randomClientID(),
                timeoutMilliseconds: timeout)
        }
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
        routeHandlers.register(on: router)
        return router
    }

    var routeHandlers: GatewayRoutes {
        GatewayRoutes(
            configuration: configuration, streams: streams, webhooks: webhooks, linkPool: linkPool, feeds: feeds,
            logger: logger)
    }

    /// The HTTP/1 server with the WebSocket upgrade at `GET /v1/ws` (docs/GATEWAY.md,
    /// "WebSocket"): hummingbird-websocket's upgrade channel, as its documentation sets it
    /// up, with the request deadlines kept (``FirstHeadGuardedChannel``).
    func makeServer() -> HTTPServerBuilder {
        let limits = configuration.limits
        let webSocket = configuration.webSocket
        let routes = routeHandlers
        let streams = self.streams
        let wsConfiguration = WebSocketServerConfiguration(
            maxFrameSize: max(1 << 14, webSocket.maxMessageBytes),
            // JSON with permessage-deflate: what a browser's WebSocket offers. The extension
            // only inflates (bounded, so a small compressed bomb is refused); the shared
            // feeds deflate each message once for every socket (WebSocketFeed rule 2).
            extensions: [
                WebSocketExtensionFactory {
                    SharedDeflateExtensionBuilder(maxMessageBytes: max(1 << 14, webSocket.maxMessageBytes))
                }
            ],
            autoPing: .enabled(timePeriod: .milliseconds(Int64(webSocket.pingMilliseconds))))
        return HTTPServerBuilder { responder in
            FirstHeadGuardedChannel(
                base: HTTP1WebSocketUpgradeChannel(
                    responder: responder,
                    configuration: .init(
                        http1: .init(additionalChannelHandlers: [RequestDeadlineHandler(limits: limits)]),
                        ws: wsConfiguration)
                ) {
                    request, channel, _ -> ShouldUpgradeResult<
                        WebSocketDataHandler<HTTP1WebSocketUpgradeChannel.Context>
                    > in
                    guard request.path.map({ $0 == "/v1/ws" || $0.hasPrefix("/v1/ws?") }) == true else {
                        return .dontUpgrade
                    }
                    let token = Self.bearerToken(request.headerFields[.authorization])
                    // The same function answers the offer in the 101 (the extension builder).
                    let deflates = PerMessageDeflateNegotiation.negotiates(request.headerFields)
                    return .upgrade([:]) { inbound, outbound, context in
                        guard streams.acquire(limit: limits.maxStreams) else {
                            let reason = WebSocketCloseReason.tooManyStreams
                            let problem = Problem(
                                RequestError(.tooManyStreams, "at most \(limits.maxStreams) open streams"))
                            try? await outbound.write(
                                .text(
                                    String(
                                        decoding: WebSocketServerMessage.error(list: nil, id: nil, problem: problem),
                                        as: UTF8.self)))
                            try? await outbound.close(.init(codeNumber: Int(reason.code)), reason: reason.text)
                            return
                        }
                        defer { streams.release() }
                        let session = WebSocketSession(
                            routes: routes, webSocket: webSocket, headerToken: token, deflates: deflates,
                            channel: channel)
                        await session.run(inbound: inbound, outbound: outbound, logger: context.logger)
                    }
                },
                limits: limits)
        }
    }

    /// The token of `Authorization: Bearer <token>` (non-browser clients may send it on
    /// the upgrade request; browsers send an `auth` message).
    static func bearerToken(_ value: String?) -> String? {
        guard let value else { return nil }
        let parts = value.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        return String(parts[1]).trimmingCharacters(in: .whitespaces)
    }

    /// Open SSE streams now (a gauge).
    public var openStreams: Int { streams.current }

    /// Shared WebSocket feeds now (one per list and token with members).
    public var sharedFeeds: Int { feeds.count }

    /// Serves until the calling task is cancelled; `onListening` receives the bound port
    /// (useful with port 0).
    public func run(onListening: @escaping @Sendable (Int) -> Void = { _ in }) async throws {
        let router = makeRouter()
        let limits = configuration.limits
        let app = Application(
            router: router,
            server: makeServer(),
            configuration: ApplicationConfiguration(
                address: .hostname(configuration.host, port: configuration.port), serverName: "flowsync-gateway",
                availableConnectionsDelegate: MaximumAvailableConnections(limits.maxConnections, logger: logger)),
            onServerRunning: { channel in onListening(channel.localAddress?.port ?? 0) },
            logger: logger)
        // The webhooks beside the HTTP server; they stop when it does (cancelling run()),
        // and run() returns once they have drained.
        let webhooks = self.webhooks
        let hooks = Task { await webhooks.run() }
        let linkPool = self.linkPool
        do {
            try await app.run()
        } catch {
            linkPool.shutDown()
            hooks.cancel()
            await hooks.value
            throw error
        }
        linkPool.shutDown()
        hooks.cancel()
        await hooks.value
    }
}
