import FlowSyncGatewayCore
import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// Closes an HTTP/1 connection whose request does not arrive in time: the slowloris
/// defence (docs/GATEWAY.md, "Limits").
///
/// Rules:
/// 1. From the connection's start, and again after each complete response, the next
///    request's head must arrive within `headerTimeout`. A client that drips header bytes,
///    or holds an idle keep-alive connection, is closed when it runs out.
/// 2. After the head, the body (up to its end) must arrive within `bodyTimeout`.
/// 3. While the gateway is answering (from the request's end to the response's end, which
///    for an SSE stream is its whole life) there is no deadline: the client owes nothing.
///
/// 4. An answer with `Connection: close` (a refused oversized body, whose rest is not
///    read) closes the connection once written.
///
/// Not guaranteed: a 408 answer. The deadline closes the connection, because a response
/// cannot be written under Hummingbird's responder, which may be mid-request.
final class RequestDeadlineHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let headerTimeout: TimeAmount
    private let bodyTimeout: TimeAmount
    private var deadline: Scheduled<Void>?
    private var closeAfterResponse = false

    init(limits: GatewayLimits) {
        headerTimeout = .milliseconds(Int64(limits.headerTimeoutMilliseconds))
        bodyTimeout = .milliseconds(Int64(limits.bodyTimeoutMilliseconds))
    }

    /// Sent toward the front of the pipeline when this handler is added, so the
    /// upgrade-time ``FirstHeadDeadlineHandler`` hands the deadline over to it.
    struct TakeOver {}

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { arm(headerTimeout, context: context) }
        context.triggerUserOutboundEvent(TakeOver(), promise: nil)
    }

    func channelActive(context: ChannelHandlerContext) {
        arm(headerTimeout, context: context)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head: arm(bodyTimeout, context: context)  // rule 2
        case .body: break
        case .end: disarm()  // rule 3
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let response):
            if response.headerFields[.connection]?.lowercased() == "close" { closeAfterResponse = true }
            context.write(data, promise: promise)
        case .body:
            context.write(data, promise: promise)
        case .end:
            guard closeAfterResponse else {
                arm(headerTimeout, context: context)  // rule 1
                context.write(data, promise: promise)
                return
            }
            // Rule 4.
            disarm()
            let written = promise ?? context.eventLoop.makePromise()
            let channel = context.channel
            written.futureResult.whenComplete { _ in channel.close(promise: nil) }
            context.writeAndFlush(data, promise: written)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        disarm()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        disarm()
    }

    private func arm(_ timeout: TimeAmount, context: ChannelHandlerContext) {
        disarm()
        let channel = context.channel
        deadline = context.eventLoop.scheduleTask(in: timeout) { channel.close(promise: nil) }
    }

    private func disarm() {
        deadline?.cancel()
        deadline = nil
    }
}
