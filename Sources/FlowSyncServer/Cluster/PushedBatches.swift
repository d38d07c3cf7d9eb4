/// A follower's rules for a batch an owner pushed over a peer link (issue #33;
/// docs/CLUSTER.md, "Peer links"). Pure. The replica's position and its one read at a
/// time stay in its ``ListOwnership`` machine (rule 3 there); these rules only decide
/// what one push means against that position, so pushes, PostgreSQL's announcements and
/// reads of `fs_batches` all move one head.
///
/// Rules, each with its reason:
/// 1. **Apply only the next version.** The owner pushes only after its fenced append
///    committed (``ClusterStore`` peer-link rule 1), so a push of `head + 1` is the log's
///    batch: applying it shows nothing the log lacks.
/// 2. **A gap is filled from the log.** A push past `head + 1` means one was lost (a
///    link dropped), reordered, or committed before the owner knew this node follows
///    the list: `fs_batches` is read after `head`. The push itself is not held: the read
///    returns it too (it committed before it was pushed), so nothing past a gap needs
///    memory here.
/// 3. **Old and duplicate batches are dropped**: a push and an announcement, or a read,
///    of the same version; a late push from an owner since fenced can only repeat a
///    version the log has (the fence lets one batch per version commit).
/// 4. **Another epoch is not applied.** Cluster mode never starts a new epoch (the
///    store refuses to), so such a push is stale or wrong; the log decides.
///
/// Not guaranteed: that a push arrives at all — the announcements through PostgreSQL
/// and the reads they trigger remain, so a lost push delays a replica, never stalls it.
enum PushedBatches {
    enum Step: Equatable {
        /// Apply the pushed frame as the replica's next batch.
        case apply
        /// Ignore it (rules 3, 4).
        case drop
        /// Read `fs_batches` after the replica's head (rule 2).
        case readLog
    }

    /// What a push of `version` at `epoch` means to a replica at `head` of `replicaEpoch`.
    static func step(epoch: Int64, version: Int64, replicaEpoch: Int64, head: Int64) -> Step {
        guard epoch == replicaEpoch, version > head else { return .drop }
        return version == head + 1 ? .apply : .readLog
    }
}
