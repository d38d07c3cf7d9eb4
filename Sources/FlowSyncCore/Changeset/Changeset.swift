/// A move of a section between two indices of one stage.
public struct SectionMove: Hashable, Sendable, CustomStringConvertible {
    /// Index in the stage's source state.
    public var from: Int
    /// Index in the stage's target state.
    public var to: Int
    public init(from: Int, to: Int) {
        self.from = from
        self.to = to
    }
    public var description: String { "\(from)→\(to)" }
}

/// A move of a row between two index paths of one stage (possibly across sections).
public struct RowMove: Hashable, Sendable, CustomStringConvertible {
    /// Path in the stage's source state.
    public var from: RowPath
    /// Path in the stage's target state.
    public var to: RowPath
    public init(from: RowPath, to: RowPath) {
        self.from = from
        self.to = to
    }
    public var description: String { "\(from)→\(to)" }
}

/// A section and the index it is inserted at (in the stage's target state).
public struct SectionInsert: Hashable, Sendable {
    public var index: Int
    public var section: Section
    public init(index: Int, section: Section) {
        self.index = index
        self.section = section
    }
}

/// A row and a path: where it is inserted (target state) or which row it reloads
/// (source state; the row keeps its ID and gets this content).
public struct RowAtPath: Hashable, Sendable {
    public var path: RowPath
    public var row: Row
    public init(path: RowPath, row: Row) {
        self.path = path
        self.row = row
    }
}

/// A new header or footer for a section (a supplementary view in UIKit terms).
public struct SupplementaryUpdate: Hashable, Sendable {
    /// Which supplementary element changed.
    public enum Element: UInt8, Hashable, Sendable { case header = 0, footer = 1 }
    /// The section's index in the stage's target state.
    public var section: Int
    public var element: Element
    /// The new payload, or `nil` when it was removed.
    public var value: [UInt8]?
    public init(section: Int, element: Element, value: [UInt8]?) {
        self.section = section
        self.element = element
        self.value = value
    }
}

/// One batch that a UI can hand to `performBatchUpdates` as it is: deletes and reloads
/// at source positions, inserts at target positions, moves source→target.
///
/// Within a ``Changeset`` each stage holds only one group of DifferenceKit's order, but
/// the type (and ``Changeset/apply(to:)``, ``BatchValidator``) accept any combination
/// UIKit accepts.
public struct ChangesetStage: Hashable, Sendable {
    /// Sections deleted, at source indices.
    public var sectionDeletes: [Int] = []
    /// Sections inserted (with all their rows), at target indices.
    public var sectionInserts: [SectionInsert] = []
    /// Sections moved (with their rows).
    public var sectionMoves: [SectionMove] = []
    /// Header/footer changes, at target section indices.
    public var supplementaryUpdates: [SupplementaryUpdate] = []
    /// Rows deleted, at source paths.
    public var rowDeletes: [RowPath] = []
    /// Rows inserted, at target paths.
    public var rowInserts: [RowAtPath] = []
    /// Rows moved.
    public var rowMoves: [RowMove] = []
    /// Rows reloaded with new content (same ID), at source paths.
    public var rowUpdates: [RowAtPath] = []

    public init() {}

    /// True when the stage changes nothing.
    public var isEmpty: Bool {
        sectionDeletes.isEmpty && sectionInserts.isEmpty && sectionMoves.isEmpty
            && supplementaryUpdates.isEmpty && rowDeletes.isEmpty && rowInserts.isEmpty
            && rowMoves.isEmpty && rowUpdates.isEmpty
    }

    /// The number of individual changes in the stage.
    public var changeCount: Int {
        sectionDeletes.count + sectionInserts.count + sectionMoves.count + supplementaryUpdates.count
            + rowDeletes.count + rowInserts.count + rowMoves.count + rowUpdates.count
    }
}

/// The difference between two director states, split into stages a UI applies one
/// after another, each inside its own `performBatchUpdates`.
///
/// Stages follow DifferenceKit's order, and empty ones are omitted:
/// 1. row updates (reloads) at old positions;
/// 2. section deletes and row deletes (old positions);
/// 3. section inserts and section moves;
/// 4. row inserts and row moves (across sections too);
/// 5. header/footer updates.
///
/// Why stages: UIKit rejects, in one batch, a reload together with a move of the same
/// row, or row edits inside a section that is inserted or moved in that batch. Every
/// stage passes ``BatchValidator``.
///
/// Not guaranteed: minimality. The diff keeps moves minimal within a section (longest
/// increasing subsequence), but a row that leaves a deleted section or enters an
/// inserted one is a delete plus an insert, and the incremental path reports every
/// row an operation moved, even if it ends where it started.
public struct Changeset: Hashable, Sendable {
    /// The stages, in the order they must be applied.
    public var stages: [ChangesetStage]

    public init(stages: [ChangesetStage] = []) {
        self.stages = stages.filter { !$0.isEmpty }
    }

    /// True when there is nothing to apply.
    public var isEmpty: Bool { stages.isEmpty }

    /// The number of individual changes over all stages.
    public var changeCount: Int { stages.reduce(0) { $0 + $1.changeCount } }
}
