import FlowSyncCore
import FlowSyncProtocol

/// One webhook delivery: what the daemon committed on one list between two positions,
/// as the JSON body the receiver gets (docs/GATEWAY.md, "Webhooks").
///
/// - `batch`: one committed batch (`from.version + 1 == to.version`), with the
///   `(clientID, seq)` of its mutations.
/// - `catchUp`: several batches coalesced by the daemon's catch-up after the gateway
///   resumed from its cursor (a restart, a failover, an overflowed queue); no mutation IDs.
/// - `snapshot`: the whole list, when the daemon cannot catch up (history too old, new
///   epoch) or on a hook's first sight of a list; `reason` says which.
///
/// The receiver's idempotency key is the list with `to` (`Idempotency-Key: EPOCH:VERSION`
/// and `FlowSync-List`): a redelivery carries the same key and the same body.
public struct WebhookBatch: Hashable, Sendable {
    public enum Kind: String, Hashable, Sendable {
        case batch, catchUp, snapshot
    }

    public let list: String
    public let kind: Kind
    /// The position the change applies to (nil for a snapshot).
    public let from: ListVersion?
    /// The position after it: the cursor once delivered.
    public let to: ListVersion
    /// The JSON body (``WebhookBatch/body(for:)``).
    public let body: [UInt8]

    public init(list: String, kind: Kind, from: ListVersion?, to: ListVersion, body: [UInt8]) {
        self.list = list
        self.kind = kind
        self.from = from
        self.to = to
        self.body = body
    }

    /// A Diff from the daemon as a delivery.
    public init(diff: Diff) {
        let kind: Kind = diff.toVersion == diff.fromVersion + 1 && !diff.mutations.isEmpty ? .batch : .catchUp
        self.init(
            list: diff.listName, kind: kind, from: diff.from, to: diff.to,
            body: ChangeJSON.diff(diff, type: kind.rawValue))
    }

    /// A Snapshot from the daemon as a delivery.
    public init(snapshot: Snapshot) {
        self.init(
            list: snapshot.listName, kind: .snapshot, from: nil, to: snapshot.position,
            body: ChangeJSON.snapshot(snapshot, type: Kind.snapshot.rawValue))
    }

    /// `Idempotency-Key`: the list's position after this delivery.
    public var idempotencyKey: String { ListPosition.text(to) }
}
