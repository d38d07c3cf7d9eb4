import FlowSyncCore
import FlowSyncProtocol

/// A subscriber's first frame — a snapshot, or a resume's catch-up — while it is built
/// on a worker thread (`EventLoop.offload`), and what must follow it. Loop-confined.
///
/// Why it holds batches: the frame brings a subscriber to ``position``, but the list
/// goes on committing while the worker encodes. Each batch committed meanwhile has its
/// `Diff` frame encoded once anyway (for the live subscribers and the store), so the
/// build keeps those same bytes, in order; when the frame is ready the server queues it
/// and then every held batch. The subscriber sees the state at ``position`` and then
/// every batch after it — no gap, no second encode, no diff computed on the loop.
///
/// Sharing: a snapshot build carries its reason (``sharedReason``); a later joiner
/// asking for a snapshot for the same reason joins it (even when the list has moved on:
/// the held batches bring it to the current version), so N joiners cost one encode.
/// A resume's catch-up diff depends on the subscriber's own position and is not shared.
///
/// Memory is bounded: once the held frames pass ``maxHeldBytes`` they are dropped
/// (``overflowed``) and the waiting subscribers start *lagging* at ``position`` after
/// the frame arrives — the ordinary slow-consumer catch-up takes over from there.
final class PendingFrame {
    /// One committed batch's frame, as queued to live subscribers.
    struct HeldBatch {
        let from: ListVersion
        let to: ListVersion
        let frame: [UInt8]
    }

    /// Unique per server; a ``SubscriptionFlow`` awaiting this build names it, so a
    /// connection that unsubscribed and subscribed again is served once, by its own build.
    let id: UInt64
    /// The version the frame brings a subscriber to (the list's version when the build
    /// started).
    let position: ListVersion
    /// The snapshot reason when this is a shareable snapshot; `nil` for a resume's
    /// catch-up (its own diff-or-snapshot).
    let sharedReason: Snapshot.Reason?
    let maxHeldBytes: Int
    /// Connection IDs waiting for the frame, in join order (a connection may appear
    /// twice after unsubscribe + subscribe; its flow decides).
    private(set) var waiting: [Int] = []
    /// Batches committed after ``position``, oldest first, contiguous.
    private(set) var held: [HeldBatch] = []
    private(set) var heldBytes = 0
    /// The held batches passed ``maxHeldBytes`` and were dropped.
    private(set) var overflowed = false

    init(id: UInt64, position: ListVersion, sharedReason: Snapshot.Reason?, maxHeldBytes: Int) {
        self.id = id
        self.position = position
        self.sharedReason = sharedReason
        self.maxHeldBytes = maxHeldBytes
    }

    /// The version a joiner reaches with the frame and the held batches.
    var reach: ListVersion { held.last?.to ?? position }

    /// Whether a new joiner can share this build: a snapshot for `reason` whose held
    /// batches are complete.
    func isShareable(for reason: Snapshot.Reason) -> Bool {
        sharedReason == reason && !overflowed
    }

    func join(_ connection: Int) {
        waiting.append(connection)
    }

    /// A batch was committed after ``reach``; keep its frame for the waiting subscribers.
    func hold(from: ListVersion, to: ListVersion, frame: [UInt8]) {
        guard !overflowed else { return }
        precondition(
            from == reach, "Internal inconsistency in PendingFrame: batch from \(from), build reaches \(reach)")
        held.append(HeldBatch(from: from, to: to, frame: frame))
        heldBytes += frame.count
        if heldBytes > maxHeldBytes {
            // Bounded like a slow consumer's queue: the waiting subscribers will lag and
            // catch up from `position` instead.
            held = []
            heldBytes = 0
            overflowed = true
        }
    }
}

/// What the worker hands back for a ``PendingFrame`` (`Sendable`: it crosses threads).
struct BuiltFrame: Sendable {
    let frame: [UInt8]
    /// A snapshot (else a catch-up diff).
    let isSnapshot: Bool
    /// Whether a snapshot was encoded for it (counted in ``ServerStatistics/snapshotsEncoded``).
    let encodedSnapshots: Int
    /// Time the worker spent, nanoseconds.
    let nanoseconds: UInt64
}
