/// A position in a list's history: `(epoch, version)`.
///
/// `version` rises by exactly one per committed batch within an epoch. A new epoch
/// means history was lost or reset (a repair, a data reset): a replica at any
/// position of an older epoch must resync from a snapshot rather than trust a gap.
/// Positions of different epochs are not comparable in meaning; ``<`` orders by epoch
/// first only so they can be sorted.
public struct ListVersion: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var epoch: UInt64
    public var version: UInt64

    public init(epoch: UInt64, version: UInt64) {
        self.epoch = epoch
        self.version = version
    }

    /// The position after one more batch in the same epoch.
    public var next: ListVersion { ListVersion(epoch: epoch, version: version + 1) }

    public static func < (lhs: ListVersion, rhs: ListVersion) -> Bool {
        (lhs.epoch, lhs.version) < (rhs.epoch, rhs.version)
    }

    public var description: String { "\(epoch):\(version)" }
}
