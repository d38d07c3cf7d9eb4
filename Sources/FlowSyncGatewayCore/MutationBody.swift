import FlowSyncCore
import Foundation

/// The body of `POST /v1/lists/{list}/mutations` (and the WebSocket's `mutate`):
/// `{"operations": [...], "base": {"epoch": "E", "version": V}}`, `base` optional (the
/// epoch a decimal string, as the gateway writes it; a number is accepted too).
///
/// Without a base the operations apply "at head" (PROTOCOL.md, Mutate: epoch 0), which is
/// what a backend that does not mirror the list wants, referring to rows by ID. With a
/// base, the daemon rebases them over what was committed since, or refuses a stale base
/// (409).
public struct MutationBody: Sendable {
    public var operations: [FlowSyncCore.Operation]
    public var base: ListVersion?

    public init(operations: [FlowSyncCore.Operation], base: ListVersion?) {
        self.operations = operations
        self.base = base
    }

    /// The base sent on the wire: the given one, or "at head".
    public var wireBase: ListVersion { base ?? ListVersion(epoch: 0, version: 0) }

    /// Parses and checks a body already bounded by `limits.maxBodyBytes`.
    public static func parse(_ bytes: [UInt8], limits: GatewayLimits) throws(RequestError) -> MutationBody {
        let value: Any
        do {
            value = try JSONSerialization.jsonObject(with: Data(bytes), options: [])
        } catch {
            throw RequestError(.malformedJSON, "the body is not JSON")
        }
        return try parse(value, limits: limits, at: "")
    }

    /// Parses an already decoded JSON object (the WebSocket's message).
    public static func parse(
        _ value: Any, limits: GatewayLimits, at pointer: String
    ) throws(RequestError) -> MutationBody {
        let object = try JSONInput.object(value, at: pointer)
        let raw = try JSONInput.array(object["operations"], at: pointer + "/operations")
        guard !raw.isEmpty else { throw RequestError(.invalidRequest, "\(pointer)/operations: at least one operation") }
        guard raw.count <= limits.maxOperations else {
            throw RequestError(
                .tooManyOperations, "\(raw.count) operations, at most \(limits.maxOperations) per request")
        }
        let operations = try OperationJSON.operations(from: raw, at: pointer + "/operations")
        var base: ListVersion?
        if let baseValue = object["base"], !(baseValue is NSNull) {
            let b = try JSONInput.object(baseValue, at: pointer + "/base")
            base = ListVersion(
                epoch: try JSONInput.epoch(b["epoch"], at: pointer + "/base/epoch"),
                version: try JSONInput.unsigned(b["version"], at: pointer + "/base/version"))
        }
        return MutationBody(operations: operations, base: base)
    }
}

/// `EPOCH:VERSION`, the `after` query parameter of the changes stream and the SSE event
/// ID a browser's `EventSource` sends back as `Last-Event-ID`.
public enum ListPosition {
    public static func parse(_ text: String) throws(RequestError) -> ListVersion {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let epoch = UInt64(parts[0]), let version = UInt64(parts[1]) else {
            throw RequestError(
                .invalidPosition, "expected EPOCH:VERSION (two decimal integers), got \"\(text.prefix(64))\"")
        }
        return ListVersion(epoch: epoch, version: version)
    }

    public static func text(_ version: ListVersion) -> String { "\(version.epoch):\(version.version)" }
}
