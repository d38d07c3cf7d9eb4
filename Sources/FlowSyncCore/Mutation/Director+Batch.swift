/// The result of ``Director/applyBatch(_:)``: one outcome per mutation group, in
/// order, and one changeset for everything that was applied.
public struct BatchOutcome: Sendable {
    /// `.success` for each applied group, `.failure` with the reason for each refused one.
    public var results: [Result<Void, MutationError>]
    /// The staged changeset from the state before the batch to the state after it.
    public var changeset: Changeset
    /// True when the changeset was computed by the full diff (see ``Director/applyBatch(_:)``).
    public var usedDiff: Bool
    /// Undoes the whole batch (see ``Director/revert(_:)``).
    public var reversal: BatchReversal
}

/// One atomic group of a batch: operations as written, or anchored by identity (a
/// mutation rebased from an older version, see `AnchoredOperation`).
public enum BatchGroup: Hashable, Sendable {
    case operations([Operation])
    case anchored([AnchoredOperation])

    var isWholeReplacement: Bool {
        switch self {
        case .operations(let ops): return ops.contains { $0.isWholeReplacement }
        case .anchored(let ops): return ops.contains { $0.isWholeReplacement }
        }
    }

    var count: Int {
        switch self {
        case .operations(let ops): return ops.count
        case .anchored(let ops): return ops.count
        }
    }
}

extension AnchoredOperation {
    var isWholeReplacement: Bool {
        switch self {
        case .setSections, .removeAllSections, .setRows, .removeAllRows: return true
        default: return false
        }
    }
}

extension Director {
    /// Applies one mutation group atomically: all of its operations, or none.
    ///
    /// - Returns: The staged changeset from the old state to the new one.
    /// - Throws: ``MutationError`` naming the failing operation; the director is then
    ///   exactly as it was.
    /// - Complexity: See ``applyBatch(_:)``.
    @discardableResult
    public mutating func apply(_ operations: [Operation]) throws(MutationError) -> Changeset {
        let outcome = applyBatch([operations])
        if case .failure(let error) = outcome.results[0] { throw error }
        return outcome.changeset
    }

    /// Applies several mutation groups in order, each atomically, and returns one
    /// changeset for the whole batch — the shape of one versioned batch on the server,
    /// where every mutation that arrived during a loop turn is sealed together.
    ///
    /// A refused group is rolled back from an undo log (never by copying the director)
    /// and the later groups still run.
    ///
    /// - Complexity: Incremental path: O(k·(log k + log n)) for k touched rows, plus
    ///   O(touched sections) per edit and a move of ≤ 256 rows per row edit (see
    ///   ``RowList``) — independent of the list size n and of the positions touched. The
    ///   full O(n) diff is used instead only when a group replaces a whole list
    ///   (`setSections`, `setRows`, `removeAllSections`, `removeAllRows`, inherently
    ///   O(n)). (Before the row store, k > 8·√n also fell back to the diff, because the
    ///   tracker cost O(k²); it now costs O(k log k), so a large request on a large list
    ///   no longer pays for the list.)
    public mutating func applyBatch(_ groups: [[Operation]]) -> BatchOutcome {
        applyBatch(groups: groups.map { .operations($0) })
    }

    /// ``applyBatch(_:)`` for groups that may be anchored: an anchored group is resolved
    /// against the state left by the groups before it, at the moment it applies.
    public mutating func applyBatch(groups: [BatchGroup]) -> BatchOutcome {
        var results: [Result<Void, MutationError>] = []
        results.reserveCapacity(groups.count)
        var wholeReplacement = false
        for group in groups {
            wholeReplacement = wholeReplacement || group.isWholeReplacement
        }
        let incremental = !wholeReplacement

        // On the diff path the old state is kept by value: copy-on-write copies only the
        // sections that are edited, which the diff reads anyway.
        let old: Director? = incremental ? nil : self
        var ctx = EditContext(undo: [], tracker: incremental ? ChangeTracker() : nil)
        var reversal: [UndoEntry] = []
        for group in groups {
            let savedTracker = ctx.tracker
            ctx.undo = []
            do {
                try applyGroup(group, &ctx)
                reversal.append(contentsOf: ctx.undo ?? [])
                results.append(.success(()))
            } catch {
                undo(ctx.undo ?? [])
                ctx.tracker = savedTracker
                results.append(.failure(error))
            }
        }
        let changeset: Changeset
        if let old {
            changeset = Changeset.diff(from: old, to: self)
        } else {
            changeset = ctx.tracker!.changeset(final: self)
        }
        return BatchOutcome(
            results: results, changeset: changeset, usedDiff: !incremental, reversal: BatchReversal(entries: reversal))
    }

    private mutating func applyGroup(_ group: BatchGroup, _ ctx: inout EditContext) throws(MutationError) {
        if group.count > limits.maxOpsPerMutation {
            throw MutationError(
                opIndex: limits.maxOpsPerMutation, reason: .limitExceeded,
                message: "\(group.count) operations in one mutation, limit \(limits.maxOpsPerMutation)")
        }
        switch group {
        case .operations(let operations):
            for (index, operation) in operations.enumerated() {
                try perform(operation, op: index, &ctx)
            }
        case .anchored(let operations):
            // Each is resolved in the state the previous ones left, like the writer did.
            for (index, anchored) in operations.enumerated() {
                if let operation = try resolve(anchored, op: index) {
                    try perform(operation, op: index, &ctx)
                }
            }
        }
    }
}
