/// What it takes to undo one applied batch: the primitives' reversal log, opaque.
///
/// The server keeps one per batch in its bounded history so it can rebuild the state
/// at an older version (copy the director, revert newest-first) and diff it against the
/// current state — a catch-up changeset composed of exactly the missed batches. Keeping
/// reversals rather than whole states costs memory in proportion to the changes.
public struct BatchReversal: Sendable {
    var entries: [UndoEntry]

    /// True when the batch changed nothing.
    public var isEmpty: Bool { entries.isEmpty }

    /// Approximate bytes held (row payloads and IDs the reversal keeps), for memory
    /// accounting of a history.
    public var approximateBytes: Int {
        var total = 0
        for entry in entries {
            switch entry {
            case .removeRow, .removeSection: total += 24
            case .insertRow(let row, _, _), .replaceRow(let row, _, _):
                total += 64 + row.id.utf8.count + row.kind.utf8.count + row.payload.count
            case .insertSection(let section, _):
                total += 64 + section.id.utf8.count + (section.header?.count ?? 0) + (section.footer?.count ?? 0)
                for row in section.rows { total += 64 + row.id.utf8.count + row.kind.utf8.count + row.payload.count }
            case .setSupplementary(_, let header, let footer):
                total += 32 + (header?.count ?? 0) + (footer?.count ?? 0)
            }
        }
        return total
    }
}

extension Director {
    /// Reverts a batch applied to this director; the reversals of later batches must
    /// have been reverted first (newest-first).
    /// - Complexity: O(size of the batch) plus memmoves, like applying it.
    public mutating func revert(_ reversal: BatchReversal) {
        undo(reversal.entries)
    }
}
