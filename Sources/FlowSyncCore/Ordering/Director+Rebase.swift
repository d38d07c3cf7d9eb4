extension Director {
    // MARK: Rebasing for replicas (the client SDK's optimistic writes)
    //
    // The server rebases a Mutate written against an old version by anchoring its
    // operations in the state at that version and resolving them in the current state
    // (Sequencer.seal). A client that shows its own writes before the server commits them
    // needs the very same transform, or its optimistic view would disagree with what the
    // server later commits. These two entry points expose that transform without the
    // sequencer: anchor where the writer wrote, resolve wherever the list is now.

    /// Re-expresses `operations`, written against this state, by identity: elements by
    /// their IDs, positions by their neighbours' IDs (``Anchor``).
    ///
    /// The operations are replayed to anchor each one in the state the previous ones
    /// left, then undone: on return the director is exactly as it was.
    ///
    /// - Throws: ``MutationError`` when an operation does not apply to this state (an
    ///   index out of range, an unknown reference). The last operation is anchored but
    ///   not replayed, so a fault only it can show (a duplicate ID it inserts) is found
    ///   when the group is applied, not here.
    /// - Complexity: O(k) in the operations plus their replay (see ``apply(_:)``).
    public mutating func anchor(_ operations: [Operation]) throws(MutationError) -> [AnchoredOperation] {
        var replay: [UndoEntry] = []
        defer { undo(replay) }
        var anchored: [AnchoredOperation] = []
        anchored.reserveCapacity(operations.count)
        for (k, operation) in operations.enumerated() {
            anchored.append(try anchor(operation, op: k, isLast: k == operations.count - 1, undo: &replay))
        }
        return anchored
    }

    /// Resolves `anchored` in this state and applies it atomically — all or nothing —
    /// returning the index-based operations that were applied: what a writer sends with
    /// this state's version as its base.
    ///
    /// A delete of an element that is already gone is dropped (so the result may hold
    /// fewer operations); an edit of an element or section that is gone is a
    /// ``MutationError/Reason/conflict``.
    ///
    /// - Throws: ``MutationError``; the director is then unchanged.
    /// - Complexity: O(k) for k operations, plus a memmove per row edit.
    @discardableResult
    public mutating func applyResolving(_ anchored: [AnchoredOperation]) throws(MutationError) -> [Operation] {
        var ctx = EditContext(undo: [], tracker: nil)
        var resolved: [Operation] = []
        resolved.reserveCapacity(anchored.count)
        do {
            for (k, operation) in anchored.enumerated() {
                guard let concrete = try resolve(operation, op: k) else { continue }
                try perform(concrete, op: k, &ctx)
                resolved.append(concrete)
            }
        } catch {
            undo(ctx.undo ?? [])
            throw error
        }
        return resolved
    }
}
