import HTTPTypes
import HummingbirdWebSocket
import NIOCore
import NIOWebSocket

/// The gateway's answer to a browser's permessage-deflate offer (RFC 7692), as a pure
/// function of the upgrade request's headers, so the 101's header and the session's
/// choice of frames never disagree (docs/GATEWAY.md, "Compression").
///
/// Rules:
/// 1. The answer always carries `server_no_context_takeover`: the gateway deflates each
///    message alone, so one payload is valid on every socket (RFC 7692 §7.1.1.1 lets a
///    server add it to an offer that lacked it).
/// 2. An offer with `server_max_window_bits` is declined (the shared payload uses a
///    32 KiB window), as is one with a parameter this function does not know (§5.1); the
///    next offer is tried, and with none accepted the socket sends and takes plain text.
/// 3. `client_max_window_bits` is accepted and not answered (the client then uses its
///    own window of at most 32 KiB, which the inflater handles), and
///    `client_no_context_takeover` is echoed. Either way the inflater keeps its context.
enum PerMessageDeflateNegotiation {
    static let name = "permessage-deflate"

    /// The `Sec-WebSocket-Extensions` value to answer, or nil to decline every offer.
    static func response(to offers: [WebSocketExtensionHTTPParameters]) -> String? {
        for offer in offers where offer.name == name {
            if let answer = response(to: offer) { return answer }
        }
        return nil
    }

    /// The answer to one offer, or nil to decline it (rule 2).
    static func response(to offer: WebSocketExtensionHTTPParameters) -> String? {
        guard offer.name == name else { return nil }
        let known: Set<String> = [
            "client_max_window_bits", "client_no_context_takeover", "server_no_context_takeover",
        ]
        guard offer.parameters.keys.allSatisfy(known.contains) else { return nil }
        if case .value(let bits)? = offer.parameters["client_max_window_bits"] {
            guard let bits = Int(bits), (8...15).contains(bits) else { return nil }
        }
        var answer = "\(name); server_no_context_takeover"
        if offer.parameters["client_no_context_takeover"] != nil { answer += "; client_no_context_takeover" }
        return answer
    }

    /// Whether the upgrade request's headers get the extension.
    static func negotiates(_ headers: HTTPFields) -> Bool {
        response(to: WebSocketExtensionHTTPParameters.parseHeaders(headers)) != nil
    }
}

/// Builds ``SharedDeflateExtension`` for a socket whose offer
/// ``PerMessageDeflateNegotiation`` accepts. Server side only.
struct SharedDeflateExtensionBuilder: WebSocketExtensionBuilder {
    static let name = PerMessageDeflateNegotiation.name

    /// The most a browser's message may inflate to, bytes.
    let maxMessageBytes: Int

    func clientRequestHeader() -> String { "" }

    func serverReponseHeader(to request: WebSocketExtensionHTTPParameters) -> String? {
        PerMessageDeflateNegotiation.response(to: request)
    }

    func serverExtension(from request: WebSocketExtensionHTTPParameters) throws -> (any WebSocketExtension)? {
        PerMessageDeflateNegotiation.response(to: request) == nil
            ? nil : SharedDeflateExtension(maxMessageBytes: maxMessageBytes)
    }

    func clientExtension(from response: WebSocketExtensionHTTPParameters) throws -> (any WebSocketExtension)? { nil }
}

/// permessage-deflate with the compression done elsewhere: frames to send pass through
/// untouched (a shared feed's message arrives already deflated, with RSV1 set, and
/// everything else goes plain, which the extension allows per message), and frames
/// received are inflated with one stream per socket, kept across messages.
///
/// Bounded: a message that inflates past `maxMessageBytes` ends the socket with 1009,
/// after at most that many bytes of output (a zlib bomb costs no more).
struct SharedDeflateExtension: WebSocketExtension {
    private struct Inbound {
        let inflater = MessageInflater()
        /// Set inside a compressed message (its first frame had RSV1).
        var compressing = false
        /// Inflated bytes of the current message so far.
        var inflated = 0
    }

    let name = PerMessageDeflateNegotiation.name
    let maxMessageBytes: Int
    private let inbound = Locked(Inbound())

    init(maxMessageBytes: Int) {
        self.maxMessageBytes = maxMessageBytes
    }

    var reservedBits: WebSocketFrame.ReservedBits { .rsv1 }

    func processFrameToSend(_ frame: WebSocketFrame, context: WebSocketExtensionContext) async throws -> WebSocketFrame
    {
        frame
    }

    func processReceivedFrame(
        _ frame: WebSocketFrame, context: WebSocketExtensionContext
    ) async throws -> WebSocketFrame {
        // Frames of one socket arrive one at a time; the lock only makes that formal.
        try inbound.withLock { inbound in
            if frame.opcode != .continuation {
                inbound.compressing = frame.rsv1
                inbound.inflated = 0
            } else if frame.rsv1 {
                // RSV1 belongs on a message's first frame only (RFC 7692 §6).
                throw SharedDeflateError.rsv1OnContinuation
            }
            guard inbound.compressing else { return frame }
            var out = frame
            do {
                out.data = try inbound.inflater.inflate(
                    frame.unmaskedData, last: frame.fin, limit: maxMessageBytes - inbound.inflated)
            } catch let failure as MessageInflater.Failure where failure == .tooLarge {
                throw NIOWebSocketError.invalidFrameLength  // closes with 1009
            } catch {
                throw SharedDeflateError.corruptPayload
            }
            inbound.inflated += out.data.readableBytes
            out.maskKey = nil
            out.rsv1 = false
            if frame.fin { inbound.compressing = false }
            return out
        }
    }

    func shutdown() async {}
}

/// Why a received frame could not be inflated. WSCore closes the socket with 1011 for
/// an error it does not know (its own protocol-error type is not public).
enum SharedDeflateError: Error {
    case rsv1OnContinuation
    case corruptPayload
}
