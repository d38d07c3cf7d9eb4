import FlowSyncClient
import FlowSyncGatewayCore

/// What a gateway listens on, which daemons it reaches, and its limits
/// (config/flowsync-gateway.toml documents each key; docs/GATEWAY.md the behaviour).
public struct GatewayConfiguration: Sendable {
    /// Listen address (default 127.0.0.1; tests use port 0).
    public var host: String
    /// Listen port (default 8080; 0 picks a free one).
    public var port: Int
    /// The daemons, tried in turn from a rotating start (one, or a cluster's nodes).
    public var endpoints: [Endpoint]
    /// Every limit, with its default.
    public var limits: GatewayLimits
    /// Origins allowed to call from a browser (`Access-Control-Allow-Origin`); `["*"]`
    /// allows any; empty (the default) sends no CORS headers, so browsers refuse.
    public var corsOrigins: [String]
    /// Interval of the `: keep-alive` comment on a quiet SSE stream (default 15 s): it
    /// keeps proxies from closing the stream and finds a vanished client.
    public var sseKeepAliveMilliseconds: Int
    /// Events buffered for one SSE client (default 256); a client that falls further
    /// behind is disconnected and resumes with `Last-Event-ID`.
    public var sseBufferedEvents: Int
    /// The WebSocket's limits (docs/GATEWAY.md, "WebSocket").
    public var webSocket: WebSocketLimits
    /// Webhooks (docs/GATEWAY.md, "Webhooks").
    public var webhooks: [WebhookConfiguration]
    /// Where webhook cursors are kept (`DIRECTORY/webhooks/HOOK/LIST.cursor`); nil keeps
    /// them in memory, so a restart starts each hook from a fresh snapshot.
    public var stateDirectory: String?

    public init(
        host: String = "127.0.0.1", port: Int = 8080, endpoints: [Endpoint], limits: GatewayLimits = GatewayLimits(),
        corsOrigins: [String] = [], sseKeepAliveMilliseconds: Int = 15_000, sseBufferedEvents: Int = 256,
        webhooks: [WebhookConfiguration] = [], stateDirectory: String? = nil,
        webSocket: WebSocketLimits = WebSocketLimits()
    ) {
        self.webSocket = webSocket
        self.webhooks = webhooks
        self.stateDirectory = stateDirectory
        self.host = host
        self.port = port
        self.endpoints = endpoints
        self.limits = limits
        self.corsOrigins = corsOrigins
        self.sseKeepAliveMilliseconds = sseKeepAliveMilliseconds
        self.sseBufferedEvents = sseBufferedEvents
    }
}
