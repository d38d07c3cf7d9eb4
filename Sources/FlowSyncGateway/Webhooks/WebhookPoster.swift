import Crypto
import FlowSyncGatewayCore
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// POSTs one webhook delivery over plain HTTP/1.1 (a connection per delivery, so a
/// receiver that breaks a connection costs only that attempt) and reports whether the
/// receiver answered 2xx in time.
///
/// Headers: `Content-Type: application/json`, `Idempotency-Key: EPOCH:VERSION` (the list's
/// position after the delivery; a redelivery carries the same), `FlowSync-List`,
/// `FlowSync-Hook`, `FlowSync-Attempt`, and `FlowSync-Signature: t=UNIX,v1=HEX`, where HEX
/// is HMAC-SHA256(secret, "UNIX." + body): a receiver recomputes it and may refuse old `t`.
struct WebhookPoster: Sendable {
    let hook: WebhookConfiguration

    /// The signature header's value for `body` at `timestamp`.
    static func signature(secret: String, timestamp: Int, body: [UInt8]) -> String {
        var message = Array("\(timestamp).".utf8)
        message += body
        let mac = HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: Array(secret.utf8)))
        return "t=\(timestamp),v1=" + mac.map { String(format: "%02x", $0) }.joined()
    }

    func post(_ batch: WebhookBatch, attempt: Int) async -> Bool {
        guard let host = hook.url.host else { return false }
        let port = hook.url.port ?? 80
        let path = hook.url.path.isEmpty ? "/" : hook.url.path + (hook.url.query.map { "?" + $0 } ?? "")
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: "\(host):\(port)")
        headers.add(name: "Content-Type", value: "application/json")
        headers.add(name: "Content-Length", value: "\(batch.body.count)")
        headers.add(name: "Connection", value: "close")
        headers.add(name: "Idempotency-Key", value: batch.idempotencyKey)
        headers.add(name: "FlowSync-List", value: batch.list)
        headers.add(name: "FlowSync-Hook", value: hook.name)
        headers.add(name: "FlowSync-Attempt", value: "\(attempt)")
        headers.add(
            name: "FlowSync-Signature",
            value: Self.signature(secret: hook.secret, timestamp: Int(Date().timeIntervalSince1970), body: batch.body))
        let head = HTTPRequestHead(version: .http1_1, method: .POST, uri: path, headers: headers)
        let group = MultiThreadedEventLoopGroup.singleton
        // First answer wins (the response, a broken connection, the deadline).
        let status = OneShot<Bool>()
        let timeout = group.next().scheduleTask(in: .milliseconds(Int64(hook.timeoutMilliseconds))) {
            status.fail(WebhookTimeout())
        }
        let body = batch.body
        ClientBootstrap(group: group)
            .connectTimeout(.milliseconds(Int64(min(hook.timeoutMilliseconds, 5_000))))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(StatusCollector(status: status))
                }
            }
            .connect(host: host, port: port)
            .whenComplete { result in
                switch result {
                case .failure(let error):
                    status.fail(error)
                case .success(let channel):
                    channel.write(HTTPClientRequestPart.head(head), promise: nil)
                    channel.write(
                        HTTPClientRequestPart.body(.byteBuffer(channel.allocator.buffer(bytes: body))), promise: nil)
                    channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
                    status.whenDone { channel.close(promise: nil) }
                }
            }
        defer { timeout.cancel() }
        return (try? await status.value) ?? false
    }
}

private struct WebhookTimeout: Error {}

/// Completes with whether the response's status was 2xx, once the response has ended.
private final class StatusCollector: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPClientResponsePart
    private let status: OneShot<Bool>
    private var ok = false

    init(status: OneShot<Bool>) { self.status = status }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): ok = (200..<300).contains(Int(head.status.code))
        case .body: break
        case .end: status.succeed(ok)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        status.fail(ChannelError.eof)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        status.fail(error)
        context.close(promise: nil)
    }
}
