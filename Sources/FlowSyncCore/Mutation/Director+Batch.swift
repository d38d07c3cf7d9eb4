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
    /// - Complexity: Incremental path: O(k² + k·log k) for k touched elements, plus a
    ///   memmove per row edit — independent of the list size n. The full O(n) diff is
    ///   used instead when a group replaces a whole list (`setSections`, `setRows`,
    ///   `removeAllSections`, `removeAllRows`, inherently O(n)), or when k is so large
    ///   that k² would cost more than the diff (k > 8·√n, and at least 512).
    public mutating func applyBatch(_ groups: [[Operation]]) -> BatchOutcome {
        var results: [Result<Void, MutationError>] = []
        results.reserveCapacity(groups.count)
        var estimate = 0
        var wholeReplacement = false
        for group in groups {
            for op in group {
                estimate += op.touchEstimate
                wholeReplacement = wholeReplacement || op.isWholeReplacement
            }
        }
        let incremental = !wholeReplacement && ChangeTracker.isCheaperThanDiff(touched: estimate, rows: rowCount)

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
        return BatchOutcome(results: results, changeset: changeset, usedDiff: !incremental, reversal: BatchReversal(entries: reversal))
    }

    private mutating func applyGroup(_ group: [Operation], _ ctx: inout EditContext) throws(MutationError) {
        if group.count > limits.maxOpsPerMutation {
            throw MutationError(opIndex: limits.maxOpsPerMutation, reason: .limitExceeded,
                                message: "\(group.count) operations in one mutation, limit \(limits.maxOpsPerMutation)")
        }
        for (index, operation) in group.enumerated() {
            try perform(operation, op: index, &ctx)
        }
    }
}
