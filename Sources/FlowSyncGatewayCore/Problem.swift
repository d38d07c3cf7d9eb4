import FlowSyncProtocol

/// An RFC 9457 problem document (`application/problem+json`): every error answer of the
/// HTTP API. `type` is `urn:flowsync:problem:<name>`, where the name is the daemon's
/// error-code name (PROTOCOL.md, "Error codes") or the gateway's own (``GatewayRefusal``:
/// ``RequestError``, ``WebSocketError``);
/// `code` carries the daemon's numeric code when the daemon decided.
public struct Problem: Error, Hashable, Sendable {
    public let status: Int
    public let name: String
    public let title: String
    public let detail: String
    /// The daemon's error code, when it refused.
    public let code: UInt16?

    public init(status: Int, name: String, title: String, detail: String, code: UInt16?) {
        self.status = status
        self.name = name
        self.title = title
        self.detail = detail
        self.code = code
    }

    /// The gateway's own refusal (``GatewayRefusal/problem``).
    public init(_ refusal: some GatewayRefusal) {
        self = refusal.problem
    }

    /// The daemon's Reject or Error, with the HTTP status of its class.
    public static func daemon(code: ErrorCode, message: String) -> Problem {
        Problem(
            status: status(for: code), name: code.name, title: title(code.name), detail: message, code: code.rawValue)
    }

    /// The HTTP status for a daemon error code (docs/GATEWAY.md has the table).
    ///
    /// - 2000–2002 (no, bad or expired token): 401, so the caller refreshes its token;
    ///   2003: 403.
    /// - 4000–4004 (the operations do not fit the list): 422; 4010 and 4011 (conflict,
    ///   stale base): 409; 4012 (no such list): 404.
    /// - Request limits (3000, 3001, 3003, 3004, 3006, 3007): 413; 3005: 422; 3008: 429.
    /// - Daemon shutting down, draining or overloaded (5000, 5001, 5003): 503; anything
    ///   else (a protocol fault between gateway and daemon): 502.
    public static func status(for code: ErrorCode) -> Int {
        switch code.rawValue {
        case 2000, 2001, 2002: return 401
        case 2003: return 403
        case 4000...4004: return 422
        case 4010, 4011: return 409
        case 4012: return 404
        case 3000, 3001, 3003, 3004, 3006, 3007: return 413
        case 3005: return 422
        case 3008: return 429
        case 5000, 5001, 5003: return 503
        default: return 502
        }
    }

    static func title(_ name: String) -> String {
        let words = name.split(separator: "-").map(String.init)
        guard let first = words.first else { return name }
        return ([first.prefix(1).uppercased() + first.dropFirst()] + words.dropFirst()).joined(separator: " ")
    }

    /// The document's JSON text.
    public var json: [UInt8] {
        var writer = JSONWriter()
        writer.beginObject()
        writer.member("type", "urn:flowsync:problem:\(name)")
        writer.member("title", title)
        writer.member("status", status)
        writer.member("detail", detail)
        if let code { writer.member("code", code) }
        writer.endObject()
        return writer.bytes
    }
}
