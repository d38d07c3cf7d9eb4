import FlowSyncClient
import FlowSyncCore
import FlowSyncGatewayCore
import FlowSyncProtocol
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOPosix

/// The HTTP API (docs/openapi.json; docs/GATEWAY.md): each request reaches the daemon
/// through a ``DaemonLink`` opened with the caller's bearer token, so the daemon decides
/// what the caller may read and write, and the gateway holds no list state between
/// requests.
///
/// Which link: the protocol binds a token and a client ID to a connection (Hello).
/// - GET a list and an un-keyed POST borrow a ready link of their token from
///   ``DaemonLinkPool``; an un-keyed write uses the link's own client ID and its next seq.
/// - A POST with an `Idempotency-Key` (and the WebSocket's `mutate`) opens a link of its
///   own, because its client ID is the key's (``IdempotencyKey``): that is what makes a
///   retry through any gateway commit once.
/// - SSE streams hold a link of their own for as long as they run.
struct GatewayRoutes: Sendable {
    let configuration: GatewayConfiguration
    let streams: StreamGauge
    let webhooks: WebhookService
    let linkPool: DaemonLinkPool
    /// The WebSocket's shared feeds (``WebSocketFeedHub``).
    let feeds: WebSocketFeedHub
    let logger: Logger

    static let idempotencyKey = HTTPField.Name("Idempotency-Key")!
    static let lastEventID = HTTPField.Name("Last-Event-ID")!

    /// The methods served on `path` (the `Allow` header of a 405), nil when no route has
    /// that path (a 404).
    static func allowedMethods(for path: String) -> String? {
        if ["/healthz", "/v1/webhooks", "/demo", "/flowsync.js"].contains(path) { return "GET" }
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count >= 4, parts[0].isEmpty, parts[1] == "v1", parts[2] == "lists", !parts[3].isEmpty else {
            return nil
        }
        switch parts.count {
        case 4: return "GET"
        case 5 where parts[4] == "mutations": return "POST"
        case 5 where parts[4] == "changes": return "GET"
        default: return nil
        }
    }

    func register(on router: Router<BasicRequestContext>) {
        router.get("/v1/lists/:list") { request, context in
            await self.getList(request, list: try Self.listName(context))
        }
        router.post("/v1/lists/:list/mutations") { request, context in
            await self.postMutations(request, list: try Self.listName(context))
        }
        router.get("/v1/lists/:list/changes") { request, context in
            await self.getChanges(request, list: try Self.listName(context))
        }
        router.get("/healthz") { _, _ in jsonResponse(Array(#"{"status":"ok"}"#.utf8)) }
        router.get("/v1/webhooks") { _, _ in jsonResponse(webhooks.statusJSON) }
        // The browser side (docs/JS-CLIENT.md), embedded so the binary is self-contained.
        router.get("/demo") { _, _ in
            staticResponse(EmbeddedClientFiles.demoHTML, type: "text/html; charset=utf-8")
        }
        router.get("/flowsync.js") { _, _ in
            staticResponse(EmbeddedClientFiles.flowsyncJS, type: "text/javascript; charset=utf-8")
        }
    }

    /// The `{list}` path segment, percent-decoded: a list named `team/1` is
    /// `/v1/lists/team%2F1`.
    static func listName(_ context: BasicRequestContext) throws -> String {
        let raw = try context.parameters.require("list")
        return raw.removingPercentEncoding ?? raw
    }

    // MARK: Daemon links

    /// The token of `Authorization: Bearer <token>`, passed to the daemon as is.
    static func bearerToken(_ request: Request) -> String? {
        guard let value = request.headers[.authorization] else { return nil }
        let parts = value.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        return String(parts[1]).trimmingCharacters(in: .whitespaces)
    }

    private func openLink(_ request: Request, clientID: String) async throws(LinkError) -> DaemonLink {
        let options = DaemonLink.Options(
            endpoints: configuration.endpoints, token: Self.bearerToken(request), clientID: clientID,
            timeoutMilliseconds: configuration.limits.daemonTimeoutMilliseconds)
        return try await DaemonLink.open(options, eventLoop: MultiThreadedEventLoopGroup.singleton.next())
    }

    static func randomClientID() -> String {
        "gw-" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
            + String(UInt64.random(in: 0...UInt64.max), radix: 16)
    }

    /// Subscribes on `link` and waits for the daemon's first answer about `list`: a
    /// Snapshot, a Diff, or an Error. Every later message goes to `then`.
    private func subscribe(
        _ link: DaemonLink, to list: String, resumeFrom: ListVersion?, then: (@Sendable (Message) -> Void)? = nil
    ) async throws -> Message {
        let first = OneShot<Message>()
        let answered = Locked(false)
        link.setMessageHandler { message in
            switch message {
            case .snapshot(let s) where s.listName == list: break
            case .diff(let d) where d.listName == list: break
            case .error(let e) where e.listName == list || e.listName == nil: break
            default: return
            }
            let isFirst = answered.withLock { wasAnswered in
                defer { wasAnswered = true }
                return !wasAnswered
            }
            if isFirst { first.succeed(message) }
            then?(message)
        }
        link.setCloseHandler { error in first.fail(error) }
        let timeout = configuration.limits.daemonTimeoutMilliseconds
        let timer = MultiThreadedEventLoopGroup.singleton.next().scheduleTask(in: .milliseconds(Int64(timeout))) {
            first.fail(LinkError.timeout("no answer to the subscription of \(list) within \(timeout) ms"))
        }
        defer { timer.cancel() }
        link.send(.subscribe(Subscribe(listName: list, resumeFrom: resumeFrom)))
        return try await first.value
    }

    private static func problem(for error: any Error) -> Problem {
        if let error = error as? LinkError { return error.problem }
        return Problem(status: 502, name: "bad-gateway", title: "Bad gateway", detail: "\(error)", code: nil)
    }

    // MARK: GET /v1/lists/{list}

    func getList(_ request: Request, list: String) async -> Response {
        let id: Int
        let link: DaemonLink
        do {
            (id, link) = try await linkPool.checkout(token: Self.bearerToken(request))
        } catch {
            return error.problem.response()
        }
        do {
            switch try await subscribe(link, to: list, resumeFrom: nil) {
            case .snapshot(let snapshot):
                release(id, link, unsubscribing: list)
                return jsonResponse(
                    ChangeJSON.snapshot(snapshot), headers: [.eTag: "\"\(ListPosition.text(snapshot.position))\""])
            case .error(let error):
                release(id, link, unsubscribing: nil)  // refused: no subscription was made
                return Problem.daemon(code: error.code, message: error.message).response()
            default:
                linkPool.checkin(id, link: link, outcome: .failed)
                return Problem(status: 502, name: "bad-gateway", title: "Bad gateway", detail: "no snapshot", code: nil)
                    .response()
            }
        } catch {
            // A timeout may leave a Snapshot on its way: the link is not reused.
            linkPool.checkin(id, link: link, outcome: .failed)
            return Self.problem(for: error).response()
        }
    }

    /// Returns a GET's link to the pool once nothing of its subscription can still
    /// arrive: the Unsubscribe, then a Ping whose Pong comes after every Diff the daemon
    /// sent before it (``DaemonLink/roundTrip()``). Otherwise the next GET of the same list
    /// on this link could take a late Diff for its answer. Done in a task of its own, so
    /// the response does not wait for it.
    private func release(_ id: Int, _ link: DaemonLink, unsubscribing list: String?) {
        let pool = linkPool
        Task {
            if let list { link.send(.unsubscribe(Unsubscribe(listName: list))) }
            do {
                try await link.roundTrip()
                pool.checkin(id, link: link, outcome: .clean)
            } catch {
                pool.checkin(id, link: link, outcome: .failed)
            }
        }
    }

    // MARK: POST /v1/lists/{list}/mutations

    func postMutations(_ request: Request, list: String) async -> Response {
        let limits = configuration.limits
        if let length = request.headers[.contentLength].flatMap({ Int($0) }), length > limits.maxBodyBytes {
            return RequestError(.bodyTooLarge, "\(length) bytes, at most \(limits.maxBodyBytes)").response(
                closing: true)
        }
        if let type = request.headers[.contentType]?.lowercased(),
            !(type.hasPrefix("application/json") || (type.hasPrefix("application/") && type.contains("+json")))
        {
            return RequestError(.unsupportedMediaType, "Content-Type must be application/json, got \(type.prefix(64))")
                .response()
        }
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: limits.maxBodyBytes)
        } catch {
            return RequestError(.bodyTooLarge, "the body is over \(limits.maxBodyBytes) bytes").response(closing: true)
        }
        let body: MutationBody
        do {
            body = try MutationBody.parse(Array(buffer.readableBytesView), limits: limits)
        } catch {
            return error.response()
        }
        let token = Self.bearerToken(request)
        let result: Result<ListVersion, Problem>
        if let key = request.headers[Self.idempotencyKey] {
            let id: MutationID
            do {
                id = try IdempotencyKey.mutationID(key: key, scope: IdempotencyKey.subject(ofBearerToken: token))
            } catch {
                return error.response()
            }
            result = await commit(list: list, body: body, token: token, id: id)
        } else {
            result = await commitPooled(list: list, body: body, token: token)
        }
        switch result {
        case .success(let version):
            var w = JSONWriter()
            w.beginObject()
            w.member("list", list)
            w.key("committed")
            ModelJSON.write(version, into: &w)
            w.endObject()
            return jsonResponse(w.bytes)
        case .failure(let problem):
            return problem.response()
        }
    }

    /// Commits `body` on `list` through a daemon link of its own whose client ID is
    /// `id`'s: the POST route's and the WebSocket's `mutate` (one idempotency scheme).
    func commit(list: String, body: MutationBody, token: String?, id: MutationID) async -> Result<ListVersion, Problem>
    {
        let link: DaemonLink
        do {
            link = try await DaemonLink.open(
                DaemonLink.Options(
                    endpoints: configuration.endpoints, token: token, clientID: id.clientID,
                    timeoutMilliseconds: configuration.limits.daemonTimeoutMilliseconds),
                eventLoop: MultiThreadedEventLoopGroup.singleton.next())
        } catch {
            return .failure(error.problem)
        }
        defer { link.close() }
        let mutate = Mutate(
            listName: list, clientID: id.clientID, seq: id.seq, base: body.wireBase, operations: body.operations)
        do {
            switch try await link.mutate(mutate) {
            case .committed(let version): return .success(version)
            case .rejected(let code, let message): return .failure(Problem.daemon(code: code, message: message))
            }
        } catch {
            return .failure(error.problem)
        }
    }

    /// Commits an un-keyed `body` on `list` through a pooled link of `token`'s, under the
    /// link's own client ID and its next seq. Nothing to retry by key, so any link of the
    /// same token will do; a link whose write timed out or failed is not reused.
    func commitPooled(list: String, body: MutationBody, token: String?) async -> Result<ListVersion, Problem> {
        do {
            return try await linkPool.withLink(token: token) { link in
                let mutate = Mutate(
                    listName: list, clientID: link.options.clientID, seq: link.nextSequenceNumber(),
                    base: body.wireBase, operations: body.operations)
                do {
                    switch try await link.mutate(mutate) {
                    case .committed(let version): return (.success(version), .clean)
                    case .rejected(let code, let message):
                        return (.failure(Problem.daemon(code: code, message: message)), .clean)
                    }
                } catch {
                    return (.failure(Self.problem(for: error)), .failed)
                }
            }
        } catch {
            return .failure(Self.problem(for: error))
        }
    }

    // MARK: GET /v1/lists/{list}/changes (Server-Sent Events)

    func getChanges(_ request: Request, list: String) async -> Response {
        var after: ListVersion?
        do {
            if let last = request.headers[Self.lastEventID], !last.isEmpty {
                after = try ListPosition.parse(last)  // a reconnecting EventSource's position wins
            } else if let text = request.uri.queryParameters.get("after") {
                after = try ListPosition.parse(text)
            }
        } catch {
            return error.response()
        }
        guard streams.acquire(limit: configuration.limits.maxStreams) else {
            return RequestError(.tooManyStreams, "at most \(configuration.limits.maxStreams) open streams").response()
        }
        let link: DaemonLink
        do {
            link = try await openLink(request, clientID: Self.randomClientID())
        } catch {
            streams.release()
            return error.problem.response()
        }
        let (events, continuation) = AsyncStream<ByteBuffer>.makeStream(
            bufferingPolicy: .bufferingOldest(max(1, configuration.sseBufferedEvents)))
        let first: Message
        do {
            first = try await subscribe(link, to: list, resumeFrom: after) { message in
                guard let event = SSEEvent.encode(message) else { return }
                if case .dropped = continuation.yield(ByteBuffer(bytes: event)) {
                    // Too far behind: end this stream; the client resumes with Last-Event-ID.
                    continuation.finish()
                    link.close()
                }
                if case .error = message { continuation.finish() }
            }
        } catch {
            link.close()
            streams.release()
            return Self.problem(for: error).response()
        }
        if case .error(let error) = first {
            link.close()
            streams.release()
            return Problem.daemon(code: error.code, message: error.message).response()
        }
        link.setCloseHandler { _ in continuation.finish() }
        let keepAlive = MultiThreadedEventLoopGroup.singleton.next().scheduleRepeatedTask(
            initialDelay: .milliseconds(Int64(configuration.sseKeepAliveMilliseconds)),
            delay: .milliseconds(Int64(configuration.sseKeepAliveMilliseconds))
        ) { _ in
            continuation.yield(ByteBuffer(string: ": keep-alive\n\n"))
        }
        let streams = self.streams
        let headers: HTTPFields = [.contentType: "text/event-stream", .cacheControl: "no-cache"]
        return Response(
            status: .ok, headers: headers,
            body: ResponseBody { writer in
                defer {
                    keepAlive.cancel()
                    link.close()
                    streams.release()
                }
                for await event in events {
                    try await writer.write(event)
                }
                try await writer.finish(nil)
            })
    }
}

/// Open SSE (and WebSocket) streams, against `limits.max_streams`.
final class StreamGauge: Sendable {
    private let count = Locked(0)

    init() {}

    var current: Int { count.withLock { $0 } }

    func acquire(limit: Int) -> Bool {
        count.withLock { count in
            guard count < limit else { return false }
            count += 1
            return true
        }
    }

    func release() { count.withLock { $0 -= 1 } }
}
