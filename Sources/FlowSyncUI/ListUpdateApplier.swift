import FlowSyncClient
import FlowSyncCore

/// Applies ``ListChange``s to a table or collection view without an "Invalid update":
/// one `performBatchUpdates` per stage, the data source switched to the stage's data
/// inside each batch, ``RowPath``s passed as index paths, header/footer refreshes in a
/// batch of their own (each section touched once), and a plain `reloadData()` when the
/// view is not on screen or the change does not start where the view is.
///
/// The data source reads ``snapshot`` and nothing else (``TableDirector`` and
/// ``CollectionDirector`` do this for you):
///
/// ```swift
/// func tableView(_ tableView: UITableView, numberOfRowsInSection section: Int) -> Int {
///     applier.snapshot.section(at: section).count
/// }
/// ```
///
/// **Edits the view made itself.** When the user drags a row, UIKit moves it on
/// screen before telling the data source; the applier must then show the move at once,
/// without animating it again, and keep showing it while other changes arrive until the
/// list delivers the write back. ``beginViewEdit(_:)`` records such an edit; see
/// `ListUpdateApplier+ViewEdits.swift` for the rebase rules.
///
/// Not thread-safe: create it, call ``apply(_:)`` and read ``snapshot`` on one thread
/// (for UIKit, the main thread; observe with `observe(on: .main)`).
public final class ListUpdateApplier<Target: ListUpdateTarget> {
    /// What the applier did with a change.
    public enum Outcome: Hashable, Sendable {
        /// Nothing to show (an empty changeset); ``snapshot`` took the new version.
        case unchanged
        /// Applied in this many `performBatchUpdates` calls.
        case animated(batches: Int)
        /// Shown with `reloadData()`, for that reason.
        case reloaded(ReloadReason)
    }

    /// Why a change was shown with `reloadData()`.
    public enum ReloadReason: Hashable, Sendable {
        /// The view is not on screen (``ListUpdateTarget/isOnScreen`` is false).
        case offScreen
        /// The change does not start from ``ListUpdateApplier/snapshot`` (a change was
        /// skipped, or the applier started elsewhere than the observer).
        case notContinuous
        /// The change has more than ``ListUpdateApplier/maximumAnimatedChanges``.
        case tooManyChanges
        /// The stages do not replay on the change's previous snapshot (a hand-built
        /// change; never one the client delivers).
        case stagesDoNotApply
    }

    /// The view being updated.
    public let target: Target
    /// What the data source must show, now and inside every batch. Switched to each
    /// stage's data inside that stage's batch.
    public internal(set) var snapshot: ListSnapshot
    /// Changes larger than this are shown with `reloadData()` (animating thousands of
    /// rows is slower than reloading them). Default: 2,000.
    public var maximumAnimatedChanges: Int
    /// Edits the view shows that the list has not delivered back yet, oldest first
    /// (`ListUpdateApplier+ViewEdits.swift`). Empty almost always: only a drag in
    /// progress or just made fills it, so the usual path never looks at it.
    var viewEdits: [ViewEdit] = []
    /// Numbers the view edits, for ``ViewEditToken``.
    var nextViewEdit: UInt64 = 0
    /// While ``viewEdits`` is not empty: the list as last delivered, without them.
    var delivered: ListSnapshot?

    /// An applier for `target`, whose data source shows `snapshot` (default: an empty
    /// list). Create it before the view first asks its data source.
    public init(target: Target, snapshot: ListSnapshot = ListSnapshot(name: ""), maximumAnimatedChanges: Int = 2_000) {
        self.target = target
        self.snapshot = snapshot
        self.maximumAnimatedChanges = maximumAnimatedChanges
    }

    /// Shows `change` on the target.
    ///
    /// - Complexity: O(k) calls for k changes, plus, for a change of several stages,
    ///   replaying all but the last stage (``ListChange/snapshotsAfterEachStage()``).
    ///   While a view edit is outstanding, an O(n) diff of the list instead (see
    ///   ``beginViewEdit(_:)``).
    @discardableResult
    public func apply(_ change: ListChange) -> Outcome {
        if !viewEdits.isEmpty { return applyRebasingViewEdits(change) }
        // Continuity is checked by digest (O(1)): the view shows `snapshot`, so the
        // changeset's indices only mean something if it starts there.
        guard Self.sameState(change.previous.director, snapshot.director) else {
            return reload(to: change.snapshot, .notContinuous)
        }
        return animate(change)
    }

    /// Shows `snapshot` with `reloadData()`, whatever the view showed before (for a
    /// first load, or after the observer was interrupted). Forgets outstanding view
    /// edits: the view now shows `snapshot` and nothing else.
    public func reload(to snapshot: ListSnapshot) {
        viewEdits.removeAll()
        delivered = nil
        self.snapshot = snapshot
        target.reloadData()
    }

    // MARK: Animating

    /// Animates `change`, which starts at ``snapshot``, stage by stage, or reloads when
    /// animating is not worth it or not possible.
    func animate(_ change: ListChange) -> Outcome {
        let changeset = change.changeset
        if changeset.isEmpty {
            snapshot = change.snapshot
            return .unchanged
        }
        guard target.isOnScreen else { return reload(to: change.snapshot, .offScreen) }
        guard changeset.changeCount <= maximumAnimatedChanges else {
            return reload(to: change.snapshot, .tooManyChanges)
        }
        guard let stageData = change.snapshotsAfterEachStage() else {
            return reload(to: change.snapshot, .stagesDoNotApply)
        }

        var batches = 0
        var before = change.previous.director
        for (stage, data) in zip(changeset.stages, stageData) {
            defer { before = data.director }
            if Self.hasStructuralChanges(stage) {
                batches += 1
                target.performBatchUpdates { [self] in
                    snapshot = data
                    target.issueChanges(of: stage)
                }
            }
            if !stage.supplementaryUpdates.isEmpty {
                // A batch of its own: a section reload (how a plain UIKit target
                // refreshes a header) next to row changes of that section in one batch
                // is an "Invalid update". Each section once (SupplementaryRefresh).
                batches += 1
                let refreshes = SupplementaryRefresh.grouping(
                    stage.supplementaryUpdates, before: before, after: data.director)
                target.performBatchUpdates { [self] in
                    snapshot = data
                    target.refreshSupplementaries(refreshes)
                }
            }
        }
        // Already the last stage's data; this also takes the change's version when the
        // last stage was only header/footer updates.
        snapshot = change.snapshot
        return .animated(batches: batches)
    }

    private func reload(to snapshot: ListSnapshot, _ reason: ReloadReason) -> Outcome {
        reload(to: snapshot)
        return .reloaded(reason)
    }

    /// Whether two states are the same list, in O(1): equal digests, row and section
    /// counts.
    static func sameState(_ a: Director, _ b: Director) -> Bool {
        a.digest == b.digest && a.rowCount == b.rowCount && a.sections.count == b.sections.count
    }

    private static func hasStructuralChanges(_ stage: ChangesetStage) -> Bool {
        !(stage.sectionDeletes.isEmpty && stage.sectionInserts.isEmpty && stage.sectionMoves.isEmpty
            && stage.rowDeletes.isEmpty && stage.rowInserts.isEmpty && stage.rowMoves.isEmpty
            && stage.rowUpdates.isEmpty)
    }
}

extension ListUpdateTarget {
    /// One stage's row and section changes, as UIKit takes them inside one batch (the
    /// order of calls inside a batch does not matter to UIKit; this is its documented
    /// order: deletes, inserts, moves, reloads). Header and footer updates are not
    /// among them: the applier sends those in a batch of their own.
    public func issueChanges(of stage: ChangesetStage) {
        if !stage.sectionDeletes.isEmpty { deleteSections(stage.sectionDeletes) }
        if !stage.sectionInserts.isEmpty { insertSections(stage.sectionInserts.map(\.index)) }
        for move in stage.sectionMoves { moveSection(move.from, toSection: move.to) }
        if !stage.rowDeletes.isEmpty { deleteRows(at: stage.rowDeletes) }
        if !stage.rowInserts.isEmpty { insertRows(at: stage.rowInserts.map(\.path)) }
        for move in stage.rowMoves { moveRow(at: move.from, to: move.to) }
        if !stage.rowUpdates.isEmpty { reloadRows(at: stage.rowUpdates.map(\.path)) }
    }
}
