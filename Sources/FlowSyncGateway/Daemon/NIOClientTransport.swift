import FlowSyncClient
import NIOCore
import NIOPosix

/// FlowSyncClient's ``ClientTransport`` on the gateway's NIO event loops.
///
/// Why not the SDK's default (``LibUVTransport``): that gives each client a libuv loop
/// thread of its own, which suits an app with one client and not a gateway with a daemon
/// link per browser. This transport puts every link on the event loops Hummingbird
/// already runs (2 on this machine), so 1,000 WebSockets cost 1,000 sockets, not 1,000
/// threads. The contract is the protocol's: events of one connection arrive in order on
/// one event loop; `send` may be called from any thread.
final class NIOClientTransport: ClientTransport, @unchecked Sendable {
    private let eventLoop: any EventLoop
    /// Touched only on `eventLoop`.
    private var channel: (any Channel)?

    init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    func connect(host: String, port: Int, handler: @escaping @Sendable (TransportEvent) -> Void) {
        ClientBootstrap(group: eventLoop)
            .channelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .connectTimeout(.seconds(5))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ByteForwarder(handler: handler))
                }
            }
            .connect(host: host, port: port)
            .whenComplete { result in
                switch result {
                case .success(let channel):
                    self.channel = channel
                    handler(.connected)
                case .failure(let error):
                    handler(.closed(reason: "connect to \(host):\(port): \(error)"))
                }
            }
    }

    func send(_ chunks: [[UInt8]]) {
        eventLoop.execute {
            guard let channel = self.channel else { return }
            for chunk in chunks {
                channel.write(channel.allocator.buffer(bytes: chunk), promise: nil)
            }
            channel.flush()
        }
    }

    func disconnect() {
        eventLoop.execute {
            self.channel?.close(promise: nil)
            self.channel = nil
        }
    }

    func schedule(after milliseconds: UInt64, _ work: @escaping @Sendable () -> Void) {
        eventLoop.scheduleTask(in: .milliseconds(Int64(milliseconds))) { work() }
    }

    func shutdown() { disconnect() }
}

/// Hands a connection's bytes and its end to the transport's handler.
private final class ByteForwarder: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    private let handler: @Sendable (TransportEvent) -> Void
    private var closed = false

    init(handler: @escaping @Sendable (TransportEvent) -> Void) { self.handler = handler }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        if let bytes = buffer.readBytes(length: buffer.readableBytes) { handler(.received(bytes)) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish("closed by the daemon")
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        finish("\(error)")
        context.close(promise: nil)
    }

    private func finish(_ reason: String) {
        guard !closed else { return }
        closed = true
        handler(.closed(reason: reason))
    }
}
