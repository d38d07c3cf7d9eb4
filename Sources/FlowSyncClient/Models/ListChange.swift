import FlowSyncCore
import FlowSyncProtocol

/// One visible change of a list: the staged changeset that turns ``previous`` into
/// ``snapshot``, with the data the UI must show after each stage.
///
/// Changes are delivered in order, and each one starts where the previous one ended
/// (``previous`` is the last change's ``snapshot``; an observer's first change starts
/// from an empty list, or from the list at registration with `includingCurrent:
/// false`). Every stage passes the UIKit batch rules (``BatchValidator``), so a table or
/// collection view applies each stage in its own `performBatchUpdates` call, **with its
/// data source showing that stage's entry of ``snapshotsAfterEachStage()``**, not the
/// final snapshot: UIKit checks each batch against the counts the data source reports
/// right after it, so in a change of several stages every stage but the last would see
/// the wrong counts and raise `NSInternalInconsistencyException`. `FlowSyncUI`'s
/// `ListUpdateApplier` does all of this.
public struct ListChange: Sendable {
    /// What caused a change.
    public enum Cause: Sendable, Hashable, CustomStringConvertible {
        /// The whole list from empty (the changeset inserts everything): the server's
        /// first snapshot of the list, or the list as it was when an observer started
        /// with `includingCurrent: true`.
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
    /// The list right before the change: where ``changeset`` starts.
    public let previous: ListSnapshot
    /// The staged changeset from ``previous`` to ``snapshot``.
    public let changeset: Changeset
    /// The list right after the change (after its last stage).
    public let snapshot: ListSnapshot

    /// A change from `previous` to `snapshot` through `changeset`, for tests and
    /// previews; the client builds its own. The changeset must turn `previous` into
    /// `snapshot` (see ``snapshotsAfterEachStage()``).
    public init(cause: Cause, previous: ListSnapshot, changeset: Changeset, snapshot: ListSnapshot) {
        self.cause = cause
        self.previous = previous
        self.changeset = changeset
        self.snapshot = snapshot
    }

    /// The list's name.
    public var listName: String { snapshot.name }

    /// The data the UI must show after each stage, in stage order: entry `i` is
    /// ``previous`` with stages `0...i` applied, and the last entry is ``snapshot``
    /// itself. A data source shows entry `i` while `performBatchUpdates` runs stage `i`.
    ///
    /// Computed on each call (nothing is cached in the change): the first `n - 1`
    /// stages are replayed on a copy of ``previous``, each result sharing storage with
    /// it (the row store copies only the chunks a stage edits).
    ///
    /// - Returns: `nil` only when the stages do not apply to ``previous`` (a change
    ///   built by hand from unrelated states; never one the client delivers). Show
    ///   ``snapshot`` with a full reload then.
    /// - Complexity: O(1) for a change of one stage (or none); otherwise the cost of
    ///   applying the first `n - 1` stages to a copy of ``previous``.
    public func snapshotsAfterEachStage() -> [ListSnapshot]? {
        let stages = changeset.stages
        guard stages.count > 1 else { return stages.isEmpty ? [] : [snapshot] }
        var result: [ListSnapshot] = []
        result.reserveCapacity(stages.count)
        var director = previous.director
        for stage in stages.dropLast() {
            do {
                try stage.apply(to: &director)
            } catch {
                return nil
            }
            result.append(
                ListSnapshot(
                    name: snapshot.name, director: director, version: previous.version,
                    pendingWrites: previous.pendingWrites, registry: snapshot.registry))
        }
        result.append(snapshot)
        return result
    }
}
