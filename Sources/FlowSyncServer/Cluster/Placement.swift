/// Which node should own a list (cluster mode; docs/CLUSTER.md, "Placement"):
/// rendezvous (highest-random-weight) hashing over the live nodes. Pure.
///
/// Why rendezvous hashing: every node computes the same answer from the same set of
/// live nodes with no coordination and no table of assignments; when a node leaves,
/// only its lists move (each to the node that scored second), and when a node joins it
/// is preferred for about 1/n of the lists and nothing else changes. The weight is
/// FNV-1a over `node \0 list`, finished with SplitMix64's mixer — stable across
/// processes, versions and machines (Swift's `Hasher` is seeded per process).
///
/// Placement is a preference, not a lock: a list stays with the node that owns it
/// until that node stops or dies (ownership changes only by the fenced claim), so a
/// node that joins takes new and orphaned lists, not running ones.
public enum Placement {
    /// The preferred owner of `list` among `nodes` (`nil` when there is none).
    /// Complexity: O(nodes × (node + list bytes)).
    public static func owner(of list: String, among nodes: some Sequence<String>) -> String? {
        var best: (weight: UInt64, node: String)?
        for node in nodes {
            let w = weight(node: node, list: list)
            // Ties (practically impossible) go to the smaller name, so every node agrees.
            if best == nil || w > best!.weight || (w == best!.weight && node < best!.node) { best = (w, node) }
        }
        return best?.node
    }

    static func weight(node: String, list: String) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in node.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        hash = (hash ^ 0) &* 0x0000_0100_0000_01B3
        for byte in list.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        // SplitMix64's finalizer: FNV-1a alone mixes the last bytes poorly.
        hash = (hash ^ (hash >> 30)) &* 0xBF58_476D_1CE4_E5B9
        hash = (hash ^ (hash >> 27)) &* 0x94D0_49BB_1331_11EB
        return hash ^ (hash >> 31)
    }
}
