import FlowSyncClient
import FlowSyncCore

/// Applies ``ListChange``s to a table or collection view without an "Invalid update":
/// one `performBatchUpdates` per stage, the data source switched to the stage's data
/// inside each batch, ``RowPath``s passed as index paths, header/footer reloads in a
/// batch of their own, and a plain `reloadData()` when the view is not on screen or
/// the change does not start where the view is.
///
/// The data source reads ``snapshot`` and nothing else:
///
/// ```swift
/// override func tableView(_ tableView: UITableView, numberOfRowsInSection section: Int) -> Int {
///     applier.snapshot.section(at: section).count
/// }
/// ```
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
    public private(set) var snapshot: ListSnapshot
    /// Changes larger than this are shown with `reloadData()` (animating thousands of
    /// rows is slower than reloading them). Default: 2,000.
    public var maximumAnimatedChanges: Int

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
    @discardableResult
    public func apply(_ change: ListChange) -> Outcome {
        let changeset = change.changeset
        // Continuity is checked by digest (O(1)): the view shows `snapshot`, so the
        // changeset's indices only mean something if it starts there.
        guard change.previous.director.digest == snapshot.director.digest,
              change.previous.director.rowCount == snapshot.director.rowCount,
              change.previous.director.sections.count == snapshot.director.sections.count else {
            return reload(change, .notContinuous)
        }
        if changeset.isEmpty {
            snapshot = change.snapshot
            return .unchanged
        }
        guard target.isOnScreen else { return reload(change, .offScreen) }
        guard changeset.changeCount <= maximumAnimatedChanges else { return reload(change, .tooManyChanges) }
        guard let stageData = change.snapshotsAfterEachStage() else { return reload(change, .stagesDoNotApply) }

        var batches = 0
        for (stage, data) in zip(changeset.stages, stageData) {
            if hasStructuralChanges(stage) {
                batches += 1
                target.performBatchUpdates { [self] in
                    snapshot = data
                    target.issueChanges(of: stage)
                }
            }
            if !stage.supplementaryUpdates.isEmpty {
                batches += 1
                target.performBatchUpdates { [self] in
                    snapshot = data
                    for element in [SupplementaryUpdate.Element.header, .footer] {
                        let sections = stage.supplementaryUpdates.filter { $0.element == element }.map(\.section)
                        if !sections.isEmpty { target.reloadSupplementary(element, inSections: sections) }
                    }
                }
            }
        }
        // Already the last stage's data; this also takes the change's version when the
        // last stage was only header/footer updates.
        snapshot = change.snapshot
        return .animated(batches: batches)
    }

    /// Shows `snapshot` with `reloadData()`, whatever the view showed before (for a
    /// first load, or after the observer was interrupted).
    public func reload(to snapshot: ListSnapshot) {
        self.snapshot = snapshot
        target.reloadData()
    }

    private func reload(_ change: ListChange, _ reason: ReloadReason) -> Outcome {
        reload(to: change.snapshot)
        return .reloaded(reason)
    }

    private func hasStructuralChanges(_ stage: ChangesetStage) -> Bool {
        !(stage.sectionDeletes.isEmpty && stage.sectionInserts.isEmpty && stage.sectionMoves.isEmpty
            && stage.rowDeletes.isEmpty && stage.rowInserts.isEmpty && stage.rowMoves.isEmpty && stage.rowUpdates.isEmpty)
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
