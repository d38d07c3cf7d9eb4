import FlowSyncCore
import FlowSyncProtocol

/// One visible change of a list: the staged changeset that turns the previous
/// ``ListSnapshot`` into ``snapshot``, ready for `performBatchUpdates`.
///
/// Changes are delivered in order, and each one starts where the previous one ended:
/// applying every delivered changeset, in order, to an empty list gives the current
/// snapshot. Every stage passes the UIKit batch rules (``BatchValidator``), so a table
/// or collection view applies each stage in its own `performBatchUpdates` call.
public struct ListChange: Sendable {
    /// What caused a change.
    public enum Cause: Sendable, Hashable, CustomStringConvertible {
        /// The server's first snapshot of the list (the changeset inserts everything).
        case initial
        /// A batch committed by the server (other writers' edits, and the server's
        /// version of this client's own edits when it differs from the optimistic one).
        case remote
        /// This client's own edit, shown before the server committed it.
        case local(seq: UInt64)
        /// The server refused this client's edit: the changeset undoes it.
        case rollback(seq: UInt64, error: FlowSyncError)
        /// The replica was replaced by a fresh server snapshot.
        case resync(ResyncReason)

        public var description: String {
            switch self {
            case .initial: return "initial"
            case .remote: return "remote"
            case .local(let seq): return "local #\(seq)"
            case .rollback(let seq, let error): return "rollback #\(seq) (\(error))"
            case .resync(let reason): return "resync (\(reason))"
            }
        }
    }

    /// Why the replica was reloaded from a snapshot. Never silent: each one is a change.
    public enum ResyncReason: Sendable, Hashable, CustomStringConvertible {
        /// The server chose to send a snapshot when the client resumed (history too
        /// short, a new epoch, or the server's own digest check).
        case server(Snapshot.Reason)
        /// The replica's digest differed from the server's after a batch.
        case digestMismatch
        /// A batch did not start where the replica was (a gap), or did not apply.
        case gap

        public var description: String {
            switch self {
            case .server(let reason): return "server: \(reason)"
            case .digestMismatch: return "digest mismatch"
            case .gap: return "gap"
            }
        }
    }

    /// Why it happened.
    public let cause: Cause
    /// The staged changeset from the previous snapshot to ``snapshot``.
    public let changeset: Changeset
    /// The list right after the change.
    public let snapshot: ListSnapshot

    /// The list's name.
    public var listName: String { snapshot.name }
}
