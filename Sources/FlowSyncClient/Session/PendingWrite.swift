import FlowSyncCore
import FlowSyncProtocol

/// One of this client's writes that the replica's confirmed state does not contain yet.
///
/// Lifecycle: created (shown optimistically) → sent (the one Mutate in flight for its
/// list) → acked or seen in a Diff (committed) → dropped from the pending queue once the
/// confirmed state contains it; or rejected → dropped and rolled back.
struct PendingWrite: Sendable {
    /// The writer's sequence number: with the client ID, the write's identity.
    let seq: UInt64
    /// The operations by identity, so they re-apply wherever the list moved to
    /// (the same transform the server uses to rebase).
    var anchored: [AnchoredOperation]
    /// The Mutate as sent (resent unchanged after a reconnect, so the server's
    /// idempotency table recognises it); `nil` until sent.
    var sent: Mutate?
    /// The version the server committed it at, when its Ack came before the confirmed
    /// state reached that version (a paused subscription catches up later).
    var ackedAt: ListVersion?
}
