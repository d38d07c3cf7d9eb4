import ArgumentParser
import FlowSyncClient
import FlowSyncGateway
import FlowSyncGatewayCore
import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// `flowsync-gateway`: HTTP API and Server-Sent Events in front of flowsyncd
/// (docs/GATEWAY.md). Thin: flags, logging, signals; everything else is FlowSyncGateway.
@main
struct GatewayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "flowsync-gateway",
        abstract: "HTTP API and Server-Sent Events in front of flowsyncd (docs/GATEWAY.md).")

    @Option(name: .long, help: "Listen address, HOST:PORT (port 0 picks a free one).")
    var listen = "127.0.0.1:8080"

    @Option(name: .long, help: "A daemon endpoint, HOST:PORT; repeat for a cluster's nodes.")
    var daemon: [String] = ["127.0.0.1:7400"]

    @Option(name: .long, help: "An origin allowed by CORS (\"*\" for any); repeatable. None: no CORS headers.")
    var corsOrigin: [String] = []

    @Option(name: .long, help: "Largest request body, bytes.")
    var maxBodyBytes = GatewayLimits().maxBodyBytes

    @Option(name: .long, help: "Operations per mutation request.")
    var maxOperations = GatewayLimits().maxOperations

    @Option(name: .long, help: "Open HTTP connections; more wait in the listen backlog.")
    var maxConnections = GatewayLimits().maxConnections

    @Option(name: .long, help: "Open SSE streams; more get 503.")
    var maxStreams = GatewayLimits().maxStreams

    @Option(name: .long, help: "A request head must arrive within this, milliseconds (slowloris defence).")
    var headerTimeoutMs = GatewayLimits().headerTimeoutMilliseconds

    @Option(name: .long, help: "A request body must arrive within this after its head, milliseconds.")
    var bodyTimeoutMs = GatewayLimits().bodyTimeoutMilliseconds

    @Option(name: .long, help: "Longest wait for a daemon's answer, milliseconds.")
    var daemonTimeoutMs = GatewayLimits().daemonTimeoutMilliseconds
    @Option(name: .long, help: "Pooled daemon links per bearer token (GET and un-keyed POST); more requests wait.")
    var poolMaxPerToken = LinkPoolLimits().maxPerCredential
    @Option(name: .long, help: "Pooled daemon links in total; past it an idle link of another token is closed.")
    var poolMaxLinks = LinkPoolLimits().maxTotal
    @Option(name: .long, help: "A pooled daemon link idle this long is closed, milliseconds.")
    var poolIdleMs = LinkPoolLimits().idleMilliseconds

    @Option(name: .long, help: "WebSocket: largest message a browser may send, bytes (after permessage-deflate).")
    var wsMaxMessageBytes = WebSocketLimits().maxMessageBytes

    @Option(name: .long, help: "WebSocket: lists one socket may follow at once.")
    var wsMaxSubscriptions = WebSocketLimits().maxSubscriptions

    @Option(name: .long, help: "WebSocket: writes one socket may have waiting for the daemon.")
    var wsMaxWritesInFlight = WebSocketLimits().maxWritesInFlight

    @Option(name: .long, help: "WebSocket: messages queued toward one browser before it is closed as too slow (4008).")
    var wsMaxQueuedMessages = WebSocketLimits().maxQueuedMessages

    @Option(name: .long, help: "WebSocket: bytes queued toward one browser before it is closed as too slow (4008).")
    var wsMaxQueuedBytes = WebSocketLimits().maxQueuedBytes

    @Option(
        name: .long, help: "WebSocket: ping period, milliseconds; no pong by the next ping closes the socket (1001).")
    var wsPingMs = WebSocketLimits().pingMilliseconds

    @Option(
        name: .long,
        help: """
            A webhook: name=NAME,url=http://HOST:PORT/PATH,lists=LIST[;LIST…],secret-file=PATH\
            [,token-file=PATH][,max-queued=N][,timeout-ms=N]; repeatable (docs/GATEWAY.md).
            """)
    var webhook: [String] = []

    @Option(
        name: .long,
        help: "Where webhook cursors live (default: $STATE_DIRECTORY, as systemd sets it; none: in memory).")
    var stateDir: String?

    @Option(name: .long, help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel = "info"

    /// The HTTP and WebSocket limits from their flags.
    var limits: GatewayLimits {
        GatewayLimits(
            maxBodyBytes: maxBodyBytes, maxOperations: maxOperations, maxConnections: maxConnections,
            headerTimeoutMilliseconds: headerTimeoutMs, bodyTimeoutMilliseconds: bodyTimeoutMs, maxStreams: maxStreams,
            daemonTimeoutMilliseconds: daemonTimeoutMs,
            linkPool: LinkPoolLimits(
                maxPerCredential: poolMaxPerToken, maxTotal: poolMaxLinks, idleMilliseconds: poolIdleMs))
    }

    var webSocketLimits: WebSocketLimits {
        WebSocketLimits(
            maxMessageBytes: wsMaxMessageBytes, maxSubscriptions: wsMaxSubscriptions,
            maxWritesInFlight: wsMaxWritesInFlight, maxQueuedMessages: wsMaxQueuedMessages,
            maxQueuedBytes: wsMaxQueuedBytes, pingMilliseconds: wsPingMs)
    }

    /// A limit out of range stops the gateway before it binds, with the flag, the value
    /// and the range (ArgumentParser prints it with the usage and exits 64).
    func validate() throws {
        do {
            try limits.validate()
            try webSocketLimits.validate()
        } catch {
            throw ValidationError("\(error)")
        }
    }

    func run() async throws {
        // A process started from a test runner's thread may inherit blocked signals
        // (PLATFORM-NOTES.md): start from an empty mask.
        var empty = sigset_t()
        sigemptyset(&empty)
        pthread_sigmask(SIG_SETMASK, &empty, nil)
        signal(SIGPIPE, SIG_IGN)

        LoggingSystem.bootstrap(StreamLogHandler.standardError)
        var configuredLogger = Logger(label: "flowsync-gateway")
        configuredLogger.logLevel = Logger.Level(rawValue: logLevel) ?? .info
        let logger = configuredLogger

        // Not Endpoint(parsing:): a listen port may be 0 (any free port).
        guard let colon = listen.lastIndex(of: ":"), let listenPort = Int(listen[listen.index(after: colon)...]),
            (0...65_535).contains(listenPort), colon != listen.startIndex
        else {
            throw ValidationError("--listen: expected HOST:PORT, got \(listen)")
        }
        let listenEndpoint = (host: String(listen[..<colon]), port: listenPort)
        var endpoints: [Endpoint] = []
        for text in daemon {
            guard let endpoint = Endpoint(parsing: text, defaultPort: 7400) else {
                throw ValidationError("--daemon: expected HOST:PORT, got \(text)")
            }
            endpoints.append(endpoint)
        }
        let hooks = try webhook.map(Self.parseWebhook)
        let state = stateDir ?? ProcessInfo.processInfo.environment["STATE_DIRECTORY"]
        if !hooks.isEmpty && state == nil {
            logger.warning(
                "webhooks without --state-dir: cursors are kept in memory, a restart starts each hook from a snapshot")
        }
        // The flags' limits were checked in validate(); the rest of the configuration is
        // checked here, by the same GatewayConfiguration.validate() code that embeds it gets.
        let gateway: Gateway
        do {
            gateway = try Gateway(
                configuration: GatewayConfiguration(
                    host: listenEndpoint.host, port: listenEndpoint.port, endpoints: endpoints, limits: limits,
                    corsOrigins: corsOrigin,
                    webhooks: hooks, stateDirectory: state, webSocket: webSocketLimits),
                logger: logger)
        } catch {
            throw ValidationError("\(error)")
        }

        let task = Task {
            try await gateway.run { port in
                // One line on stdout, for scripts and tests that started it on port 0.
                FileHandle.standardOutput.write(Data("listening on \(listenEndpoint.host):\(port)\n".utf8))
                logger.notice("listening", metadata: ["flowsync.port": "\(port)"])
            }
        }
        var sources: [DispatchSourceSignal] = []
        for signum in [SIGTERM, SIGINT] {
            signal(signum, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signum)
            source.setEventHandler {
                logger.notice("signal received, shutting down", metadata: ["signal": "\(signum)"])
                task.cancel()
            }
            source.resume()
            sources.append(source)
        }
        try await task.value
        for source in sources { source.cancel() }
    }

    /// `name=…,url=…,lists=a;b,secret-file=…[,token-file=…][,max-queued=N][,timeout-ms=N]`.
    static func parseWebhook(_ text: String) throws -> WebhookConfiguration {
        var fields: [String: String] = [:]
        for part in text.split(separator: ",") {
            let kv = part.split(separator: "=", maxSplits: 1)
            guard kv.count == 2 else { throw ValidationError("--webhook: \(part) is not KEY=VALUE") }
            fields[String(kv[0])] = String(kv[1])
        }
        func read(_ path: String) throws -> String {
            try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        guard let name = fields["name"], !name.isEmpty else { throw ValidationError("--webhook: name= is required") }
        guard let urlText = fields["url"], let url = URL(string: urlText), url.scheme == "http", url.host != nil else {
            throw ValidationError("--webhook \(name): url= must be http://HOST[:PORT]/PATH")
        }
        let lists = (fields["lists"] ?? "").split(separator: ";").map(String.init)
        guard !lists.isEmpty else { throw ValidationError("--webhook \(name): lists= names at least one list") }
        guard let secretFile = fields["secret-file"] else {
            throw ValidationError("--webhook \(name): secret-file= is required")
        }
        var hook = WebhookConfiguration(
            name: name, url: url, lists: lists, secret: try read(secretFile), token: try fields["token-file"].map(read))
        if let n = fields["max-queued"] {
            guard let v = Int(n), v >= 1 else { throw ValidationError("--webhook \(name): max-queued") }
            hook.maxQueued = v
        }
        if let n = fields["timeout-ms"] {
            guard let v = Int(n), v >= 1 else { throw ValidationError("--webhook \(name): timeout-ms") }
            hook.timeoutMilliseconds = v
        }
        return hook
    }
}
