import FlowSyncClient
import FlowSyncCore
import FlowSyncGatewayCore
import FlowSyncProtocol
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOPosix

/// The I/O shell of one browser's WebSocket (`GET /v1/ws`): it feeds a
/// ``WebSocketSessionMachine`` and carries out its actions. It holds only the socket's
/// writer, its outbound queue and the subscription link (STYLE.md rule 2).
///
/// Lifetime and ordering:
/// 1. One subscription link per socket, opened at the first `subscribe` with the socket's
///    token and closed when the socket ends. Inbound messages are handled one at a time, so
///    a second `subscribe` waits for the link the first one opens.
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
        case close(WebSocketCloseReason)
    }

    private enum LinkSlot: Sendable {
        case none
        case open(DaemonLink)
        case ended
    }

    private let routes: GatewayRoutes
    private let webSocket: WebSocketLimits
    private let channel: any Channel
    private let machine: Locked<WebSocketSessionMachine>
    private let link = Locked(LinkSlot.none)
    private let outgoing: AsyncStream<Outgoing>
    private let continuation: AsyncStream<Outgoing>.Continuation
    private static let hardCloseGrace = TimeAmount.seconds(2)

    init(routes: GatewayRoutes, webSocket: WebSocketLimits, headerToken: String?, channel: any Channel) {
        self.routes = routes
        self.webSocket = webSocket
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
        let slot = link.withLock { slot in
            defer { slot = .ended }
            return slot
        }
        if case .open(let daemon) = slot { daemon.close() }
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
        case .unsubscribe(let list):
            if case .open(let daemon) = link.withLock({ $0 }) {
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
        switch link.withLock({ $0 }) {
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
            let kept = link.withLock { slot in
                guard case .none = slot else { return false }
                slot = .open(daemon)
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
