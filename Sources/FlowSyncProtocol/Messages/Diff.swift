import FlowSyncCore

/// One committed batch of a list, from `fromVersion` to `toVersion` in `epoch`: the
/// staged changeset a UI applies as it is, the digest of the resulting state and the
/// mutations the batch contains.
///
/// `toVersion == fromVersion + 1` for a single batch; a coalesced catch-up diff (for a
/// slow consumer) may span more versions, and an empty diff with
/// `toVersion == fromVersion` tells a resuming subscriber it is current.
public struct Diff: Hashable, Sendable {
    /// The list's name.
    public var listName: String
    /// The epoch both versions belong to.
    public var epoch: UInt64
    /// The version the changeset applies to.
    public var fromVersion: UInt64
    /// The version after applying it.
    public var toVersion: UInt64
    /// The digest of the state at `toVersion`.
    public var digest: StateDigest
    /// The changes, staged in UIKit batch semantics, with the rows' data.
    public var changeset: Changeset
    /// The client mutations committed in this batch, in commit order.
    public var mutations: [MutationID]

    /// Creates a Diff.
    public init(
        listName: String, epoch: UInt64, fromVersion: UInt64, toVersion: UInt64,
        digest: StateDigest, changeset: Changeset, mutations: [MutationID] = []
    ) {
        self.listName = listName
        self.epoch = epoch
        self.fromVersion = fromVersion
        self.toVersion = toVersion
        self.digest = digest
        self.changeset = changeset
        self.mutations = mutations
    }

    /// The position before the batch.
    public var from: ListVersion { ListVersion(epoch: epoch, version: fromVersion) }
    /// The position after the batch.
    public var to: ListVersion { ListVersion(epoch: epoch, version: toVersion) }
}
