import Foundation

/// Why the gateway refuses a request before the daemon sees it (docs/GATEWAY.md,
/// "Errors"). A struct over a private kind, so kinds can be added (STYLE.md rule 10);
/// each becomes an RFC 9457 problem document through ``Problem``.
public struct RequestError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The gateway's own refusals; the daemon's codes travel as ``Problem/daemon(code:message:)``.
    public enum Kind: String, Hashable, Sendable, CaseIterable {
        /// The body is not JSON (400).
        case malformedJSON = "malformed-json"
        /// JSON, but not the shape the route takes (400).
        case invalidRequest = "invalid-request"
        /// The `after` parameter or `Last-Event-ID` is not `EPOCH:VERSION` (400).
        case invalidPosition = "invalid-position"
        /// The `Idempotency-Key` header is empty, too long or not visible ASCII (400).
        case invalidIdempotencyKey = "invalid-idempotency-key"
        /// The body is larger than `limits.max_body_bytes` (413).
        case bodyTooLarge = "body-too-large"
        /// More operations than `limits.max_operations` (413).
        case tooManyOperations = "too-many-operations"
        /// The body did not arrive within `limits.body_timeout_ms` (408).
        case bodyTimeout = "body-timeout"
        /// No daemon endpoint answered (503).
        case daemonUnavailable = "daemon-unavailable"
        /// The daemon did not answer in time (504).
        case daemonTimeout = "daemon-timeout"
        /// More streams (SSE, WebSocket) than `limits.max_streams` (503).
        case tooManyStreams = "too-many-streams"
        /// No such route (404).
        case notFound = "not-found"
        /// The route exists, the method does not (405).
        case methodNotAllowed = "method-not-allowed"
        /// The body's media type is not JSON (415).
        case unsupportedMediaType = "unsupported-media-type"
    }

    public let kind: Kind
    public let detail: String

    public init(_ kind: Kind, _ detail: String) {
        self.kind = kind
        self.detail = detail
    }

    /// The HTTP status this refusal is answered with.
    public var status: Int {
        switch kind {
        case .malformedJSON, .invalidRequest, .invalidPosition, .invalidIdempotencyKey: return 400
        case .bodyTooLarge, .tooManyOperations: return 413
        case .bodyTimeout: return 408
        case .daemonUnavailable, .tooManyStreams: return 503
        case .daemonTimeout: return 504
        case .notFound: return 404
        case .methodNotAllowed: return 405
        case .unsupportedMediaType: return 415
        }
    }

    public var description: String { "\(kind.rawValue): \(detail)" }
}

/// Typed readers over `JSONSerialization`'s output, each failing with the JSON pointer
/// of the offending value, so a 400 says exactly what was wrong.
public enum JSONInput {
    public static func object(_ value: Any?, at pointer: String) throws(RequestError) -> [String: Any] {
        guard let object = value as? [String: Any] else {
            throw RequestError(.invalidRequest, "\(where_(pointer)): expected an object")
        }
        return object
    }

    public static func array(_ value: Any?, at pointer: String) throws(RequestError) -> [Any] {
        guard let array = value as? [Any] else {
            throw RequestError(.invalidRequest, "\(where_(pointer)): expected an array")
        }
        return array
    }

    public static func string(
        _ value: Any?, at pointer: String, allowEmpty: Bool = false
    ) throws(RequestError) -> String {
        guard let text = value as? String else {
            throw RequestError(.invalidRequest, "\(where_(pointer)): expected a string")
        }
        if !allowEmpty && text.isEmpty { throw RequestError(.invalidRequest, "\(where_(pointer)): must not be empty") }
        return text
    }

    public static func optionalString(_ value: Any?, at pointer: String) throws(RequestError) -> String? {
        guard let value, !(value is NSNull) else { return nil }
        return try string(value, at: pointer, allowEmpty: true)
    }

    /// A JSON number that is not a boolean. `JSONSerialization` gives both as `NSNumber`,
    /// and on Linux `value is Bool` holds for the numbers 0 and 1 too, so a boolean is
    /// told apart by its type encoding (`c`, a CFBoolean).
    static func number(_ value: Any?) -> NSNumber? {
        guard let number = value as? NSNumber, String(cString: number.objCType) != "c" else { return nil }
        return number
    }

    /// A non-negative integer that fits an index (up to 2^31 − 1); booleans, fractions
    /// and larger numbers are refused.
    public static func index(_ value: Any?, at pointer: String) throws(RequestError) -> Int {
        guard let number = number(value), let integer = number as? Int, integer >= 0, integer <= Int(Int32.max) else {
            throw RequestError(.invalidRequest, "\(where_(pointer)): expected a non-negative integer")
        }
        return integer
    }

    /// A non-negative integer up to 2^64 − 1 (an epoch or a version).
    public static func unsigned(_ value: Any?, at pointer: String) throws(RequestError) -> UInt64 {
        guard let number = number(value), let integer = number as? UInt64 else {
            throw RequestError(.invalidRequest, "\(where_(pointer)): expected a non-negative integer")
        }
        return integer
    }

    /// An epoch: a decimal string (as the gateway writes it) or a number.
    public static func epoch(_ value: Any?, at pointer: String) throws(RequestError) -> UInt64 {
        if let text = value as? String {
            guard let epoch = UInt64(text) else {
                throw RequestError(
                    .invalidRequest, "\(where_(pointer)): expected a decimal string of a 64-bit unsigned integer")
            }
            return epoch
        }
        return try unsigned(value, at: pointer)
    }

    private static func where_(_ pointer: String) -> String { pointer.isEmpty ? "the body" : pointer }
}
