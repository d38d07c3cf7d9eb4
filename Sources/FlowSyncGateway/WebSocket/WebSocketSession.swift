import FlowSyncClient
import FlowSyncCore
import FlowSyncGatewayCore
import FlowSyncProtocol
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOPosix
import NIOWebSocket

/// The I/O shell of one browser's WebSocket (`GET /v1/ws`): it feeds a
/// ``WebSocketSessionMachine`` and carries out its actions. It holds only the socket's
/// writer, its outbound queue and the subscription link (STYLE.md rule 2).
///
/// Lifetime and ordering:
/// 1. A `subscribe` without `after` joins the shared feed of (list, token)
///    (``WebSocketFeed``), left at `unsubscribe` and when the socket ends. A resume (with
///    `after`) uses the socket's own subscription link, opened at the first resume with the
///    socket's token and closed when the socket ends. Inbound messages are handled one at a
///    time, so a second resume waits for the link the first one opens.
/// 2. Each `mutate` runs in a task of its own on a link of its own (its client ID comes
///    from its `id`, as a POST's from its Idempotency-Key); its answer is queued when it
///    comes. The machine bounds how many run at once.
/// 3. Everything toward the browser goes through one queue and one writer task, so the
///    daemon's messages keep their order. The machine bounds the queue; past it the socket
///    gets a 4008 close frame, and the channel is closed `hardCloseGrace` later whether or
///    not the browser read it (a browser that reads nothing cannot hold memory).
final class WebSocketSession: Sendable {
    private enum Outgoing: Sendable {
        case text([UInt8])
        /// A shared feed's message: the same buffer for every member (its rule 2),
        /// deflated (sent with RSV1) when this socket negotiated permessage-deflate.
        case frame(ByteBuffer, deflated: Bool)
        case close(WebSocketCloseReason)
    }

    private enum LinkSlot: Sendable {
        case none
        case open(DaemonLink)
        case ended
    }

    /// What the shell holds besides the machine: the socket's own link and the shared
    /// feeds it joined, by list (each ends with the socket).
    private struct Links: Sendable {
        var own = LinkSlot.none
        var feeds: [String: WebSocketFeed] = [:]
        var ended = false
    }

    private let routes: GatewayRoutes
    private let webSocket: WebSocketLimits
    /// Whether the socket negotiated permessage-deflate (``PerMessageDeflateNegotiation``):
    /// a shared feed then hands it its deflated payload. Other messages (acks, errors, a
    /// resume's own link) go plain, which the extension allows per message.
    let deflates: Bool
    private let channel: any Channel
    private let machine: Locked<WebSocketSessionMachine>
    private let links = Locked(Links())
    private let outgoing: AsyncStream<Outgoing>
    private let continuation: AsyncStream<Outgoing>.Continuation
    private static let hardCloseGrace = TimeAmount.seconds(2)

    init(
        routes: GatewayRoutes, webSocket: WebSocketLimits, headerToken: String?, deflates: Bool = false,
        channel: any Channel
    ) {
        self.routes = routes
        self.webSocket = webSocket
        self.deflates = deflates
        self.channel = channel
        machine = Locked(
            WebSocketSessionMachine(
                headerToken: headerToken, limits: routes.configuration.limits, webSocket: webSocket))
        (outgoing, continuation) = AsyncStream<Outgoing>.makeStream()
    }

    /// Serves the socket until either side ends it.
    func run(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, logger: Logger) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.write(to: outbound) }
            group.addTask { await self.read(inbound, logger: logger) }
            // Whichever ends first ends the other: a closed writer means the socket is
            // closing; a finished reader means the browser left.
            await group.next()
            group.cancelAll()
            self.continuation.finish()
        }
        machine.withLock { $0.closed() }
        let (slot, feeds) = links.withLock { links in
            defer {
                links.own = .ended
                links.feeds = [:]
                links.ended = true
            }
            return (links.own, links.feeds)
        }
        if case .open(let daemon) = slot { daemon.close() }
        for feed in feeds.values { feed.leave(FeedMember(session: self)) }
    }

    private func read(_ inbound: WebSocketInboundStream, logger: Logger) async {
        do {
            for try await message in inbound.messages(maxSize: webSocket.maxMessageBytes) {
                let action: WebSocketSessionMachine.Action
                switch message {
                case .text(let text): action = machine.withLock { $0.receivedText(Array(text.utf8)) }
                case .binary: action = machine.withLock { $0.receivedBinary() }
                }
                await perform(action)
            }
        } catch {
            // WSCore ends the stream with an error for a message over maxSize (and for a
            // broken socket, where the answer below goes nowhere).
            logger.debug("websocket read ended", metadata: ["error": "\(error)"])
            await perform(machine.withLock { $0.receivedOversizedMessage() })
            await Task.yield()
        }
    }

    private func write(to outbound: WebSocketOutboundWriter) async {
        for await item in outgoing {
            switch item {
            case .text(let bytes):
                do {
                    try await outbound.write(.text(String(decoding: bytes, as: UTF8.self)))
                } catch {
                    return
                }
                machine.withLock { $0.dequeued(byteCount: bytes.count) }
            case .frame(let buffer, let deflated):
                do {
                    try await outbound.write(
                        .custom(WebSocketFrame(fin: true, rsv1: deflated, opcode: .text, data: buffer)))
                } catch {
                    return
                }
                machine.withLock { $0.dequeued(byteCount: buffer.readableBytes) }
            case .close(let reason):
                try? await outbound.close(.init(codeNumber: Int(reason.code)), reason: reason.text)
                return
            }
        }
    }

    /// Queues `bytes` toward the browser, or closes a browser too slow to take them.
    private func send(_ bytes: [UInt8]) {
        switch machine.withLock({ $0.enqueue(byteCount: bytes.count) }) {
        case .write: continuation.yield(.text(bytes))
        case .drop: break
        case .close(let reason): close(reason)
        }
    }

    // MARK: A shared feed's calls (under the feed's lock: never waits, never calls back)

    /// A shared feed's message, encoded once for all its members: `plain`, or `deflated`
    /// (permessage-deflate's payload of the same message, nil when the feed did not
    /// compress it) for a socket that negotiated the extension.
    func feedSent(_ plain: ByteBuffer, deflated: ByteBuffer? = nil) {
        let compressed = deflates ? deflated : nil
        let buffer = compressed ?? plain
        switch machine.withLock({ $0.enqueue(byteCount: buffer.readableBytes) }) {
        case .write: continuation.yield(.frame(buffer, deflated: compressed != nil))
        case .drop: break
        case .close(let reason): close(reason)
        }
    }

    /// The daemon refused a shared feed this socket joined (its rule 5).
    func feedRefused(list: String, problem: Problem) {
        _ = links.withLock { $0.feeds.removeValue(forKey: list) }
        switch machine.withLock({ $0.subscriptionRefused(list: list, problem: problem) }) {
        case .send(let bytes): send(bytes)
        case .sendThenClose(let bytes, let reason):
            continuation.yield(.text(bytes))
            close(reason)
        default: break
        }
    }

    /// A shared feed's link ended: the socket closes with 4502, as for its own link.
    func feedLinkLost() {
        if case .close(let reason) = machine.withLock({ $0.subscriptionLinkLost() }) { close(reason) }
    }

    private func close(_ reason: WebSocketCloseReason) {
        continuation.yield(.close(reason))
        continuation.finish()
        // Rule 3: the close frame may sit behind writes the browser never reads.
        let channel = self.channel
        channel.eventLoop.scheduleTask(in: Self.hardCloseGrace) { channel.close(promise: nil) }
    }

    private func perform(_ action: WebSocketSessionMachine.Action) async {
        switch action {
        case .none:
            break
        case .send(let bytes):
            send(bytes)
        case .sendThenClose(let bytes, let reason):
            // Queued without the budget: the last word before a close is always sent.
            continuation.yield(.text(bytes))
            close(reason)
        case .close(let reason):
            close(reason)
        case .subscribe(let list, let after, let token):
            await subscribe(list: list, after: after, token: token)
        case .joinFeed(let list, let token):
            let feed = routes.feeds.join(list: list, token: token, member: FeedMember(session: self))
            // The socket may have ended meanwhile (its feeds were already left then).
            let kept = links.withLock { links -> Bool in
                guard !links.ended else { return false }
                links.feeds[list] = feed
                return true
            }
            if !kept { feed.leave(FeedMember(session: self)) }
        case .unsubscribe(let list):
            let (feed, own) = links.withLock { ($0.feeds.removeValue(forKey: list), $0.own) }
            if let feed {
                feed.leave(FeedMember(session: self))
            } else if case .open(let daemon) = own {
                daemon.send(.unsubscribe(Unsubscribe(listName: list)))
            }
        case .mutate(let list, let id, let mutationID, let body, let token):
            let routes = self.routes
            Task {
                let result = await routes.commit(list: list, body: body, token: token, id: mutationID)
                await self.perform(self.machine.withLock { $0.writeAnswered(list: list, id: id, result: result) })
            }
        }
    }

    private func subscribe(list: String, after: ListVersion?, token: String?) async {
        let daemon: DaemonLink
        switch links.withLock({ $0.own }) {
        case .ended:
            return
        case .open(let open):
            daemon = open
        case .none:
            do {
                daemon = try await DaemonLink.open(
                    DaemonLink.Options(
                        endpoints: routes.configuration.endpoints, token: token,
                        clientID: GatewayRoutes.randomClientID(),
                        timeoutMilliseconds: routes.configuration.limits.daemonTimeoutMilliseconds),
                    eventLoop: MultiThreadedEventLoopGroup.singleton.next())
            } catch {
                await perform(machine.withLock { $0.subscriptionRefused(list: list, problem: error.problem) })
                return
            }
            daemon.setMessageHandler { [weak self] message in self?.daemonSent(message) }
            daemon.setCloseHandler { [weak self] _ in
                guard let self else { return }
                let action = self.machine.withLock { $0.subscriptionLinkLost() }
                if case .close(let reason) = action { self.close(reason) }
            }
            // The socket may have ended while the link was opening (rule 1).
            let kept = links.withLock { links in
                guard case .none = links.own else { return false }
                links.own = .open(daemon)
                return true
            }
            guard kept else {
                daemon.close()
                return
            }
        }
        daemon.send(.subscribe(Subscribe(listName: list, resumeFrom: after)))
    }

    /// Called on the link's event loop, in the daemon's order.
    private func daemonSent(_ message: Message) {
        switch message {
        case .snapshot(let snapshot): send(WebSocketServerMessage.snapshot(snapshot))
        case .diff(let diff): send(WebSocketServerMessage.diff(diff))
        case .error(let error):
            let problem = Problem.daemon(code: error.code, message: error.message)
            let action = machine.withLock {
                $0.subscriptionRefused(list: error.listName ?? "", problem: problem)
            }
            switch action {
            case .send(let bytes): send(bytes)
            case .sendThenClose(let bytes, let reason):
                continuation.yield(.text(bytes))
                close(reason)
            default: break
            }
        default:
            break
        }
    }
}
