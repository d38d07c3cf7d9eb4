/// The server's side of the writes that cross nodes (cluster mode, docs/CLUSTER.md,
/// "Replicas"): the writes this node forwarded to the owners of its replica lists,
/// until answered (``ForwardedWrites``, pure), and the tags of the writes other nodes
/// forwarded to lists owned here (each waits in its list's ``ListHost/remoteWrites``).
struct ClusterRelay {
    /// Writes forwarded to the owners of replica lists, until answered.
    var forwarded = ForwardedWrites()
    /// The tag of the next write another node forwards here: negative, so it never
    /// names a connection (a connection's tag is its positive ID).
    private var nextRemoteTag = -1

    /// A fresh negative tag for a write another node forwarded here.
    mutating func remoteTag() -> Int {
        let tag = nextRemoteTag
        nextRemoteTag = nextRemoteTag == Int.min ? -1 : nextRemoteTag - 1
        return tag
    }
}
