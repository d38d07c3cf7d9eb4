import FlowSyncGatewayCore
import HummingbirdCore
import Logging
import NIOCore

/// The slowloris deadline of a connection's first request head, on raw bytes, while the
/// WebSocket upgrade code decides what the connection is.
///
/// Why: with WebSocket upgrades (hummingbird-websocket's `HTTP1WebSocketUpgradeChannel`),
/// Hummingbird adds its HTTP handlers, ``RequestDeadlineHandler`` among them, only after
/// the first head has been parsed. Until then this handler closes the connection if
/// `limits.header_timeout_ms` passes.
///
/// Rules (the reverted first attempt stopped at the first `CRLF CRLF`, so a head that
/// NIO's parser refused left a connection that nothing would ever close, and the server's
/// graceful stop waited for it forever: `HostileHTTPTests/garbageGetsAClose` hung):
/// 1. The deadline runs from the connection's start until the decision is made, not until
///    the bytes of a head have arrived.
/// 2. The decision is made when ``RequestDeadlineHandler`` is added (plain HTTP: it takes
///    over, rule 1 of its own, and says so with ``RequestDeadlineHandler/TakeOver``) or when
///    the first answer byte is written (a 101 upgrade, or a refused upgrade's 400).
/// 3. A parse error before the decision closes the connection (``UpgradeErrorCloser``),
///    because the upgrade pipeline runs without NIO's HTTP error handler.
final class FirstHeadDeadlineHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer

    private let timeout: TimeAmount
    private var deadline: Scheduled<Void>?

    init(limits: GatewayLimits) {
        timeout = .milliseconds(Int64(limits.headerTimeoutMilliseconds))
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { arm(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        if deadline == nil { arm(context) }
        context.fireChannelActive()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        // Written before leaving the pipeline: a removed context drops what it is given.
        context.write(data, promise: promise)
        decided(context)  // rule 2: an answer is being written
    }

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        guard event is RequestDeadlineHandler.TakeOver else {
            return context.triggerUserOutboundEvent(event, promise: promise)
        }
        promise?.succeed()
        decided(context)  // rule 2: plain HTTP; its own deadlines run from here
    }

    func channelInactive(context: ChannelHandlerContext) {
        disarm()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        disarm()
    }

    private func decided(_ context: ChannelHandlerContext) {
        guard deadline != nil else { return }
        disarm()
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    private func arm(_ context: ChannelHandlerContext) {
        let channel = context.channel
        deadline = context.eventLoop.scheduleTask(in: timeout) { channel.close(promise: nil) }
    }

    private func disarm() {
        deadline?.cancel()
        deadline = nil
    }
}

/// Rule 3 of ``FirstHeadDeadlineHandler``: closes a connection whose first head NIO's
/// parser refused. After the first inbound message it only passes errors on, so plain
/// HTTP and WebSocket connections keep their own error handling.
final class UpgradeErrorCloser: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    private var sawMessage = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        sawMessage = true
        context.fireChannelRead(data)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if !sawMessage { context.close(promise: nil) }
        context.fireErrorCaught(error)
    }
}

/// hummingbird-websocket's HTTP/1 + WebSocket upgrade channel with the first-head deadline
/// at the front of its pipeline and the parse-error closer behind the upgrade handler.
struct FirstHeadGuardedChannel<Base: ServerChildChannel>: ServerChildChannel {
    typealias Value = Base.Value
    let base: Base
    let limits: GatewayLimits

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        do {
            try channel.pipeline.syncOperations.addHandler(FirstHeadDeadlineHandler(limits: limits))
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        // Added after the upgrade pipeline, so it sees what the HTTP decoder refuses; the
        // handlers Hummingbird adds later come after it.
        return base.setup(channel: channel, logger: logger).flatMapThrowing { value in
            try channel.pipeline.syncOperations.addHandler(UpgradeErrorCloser())
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}
