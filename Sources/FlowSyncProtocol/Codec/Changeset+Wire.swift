import FlowSyncCore

// Wire form of `Changeset` and `ChangesetStage` (`docs/PROTOCOL.md`, "Changesets").
//
// A stage starts with a one-byte presence mask, bit k set when list k is non-empty,
// in this order: 0 section deletes, 1 section inserts, 2 section moves,
// 3 supplementary updates, 4 row deletes, 5 row inserts, 6 row moves, 7 row updates.
// Only present lists follow (count ≥ 1, then elements), in bit order. Why a mask: a
// typical stage has one or two lists, and eight zero counts per stage would be most
// of a one-row diff.

extension WireWriter {
    mutating func changeset(_ changeset: Changeset) {
        index(changeset.stages.count)
        for stage in changeset.stages { self.stage(stage) }
    }

    mutating func stage(_ s: ChangesetStage) {
        var mask: UInt8 = 0
        if !s.sectionDeletes.isEmpty { mask |= 1 << 0 }
        if !s.sectionInserts.isEmpty { mask |= 1 << 1 }
        if !s.sectionMoves.isEmpty { mask |= 1 << 2 }
        if !s.supplementaryUpdates.isEmpty { mask |= 1 << 3 }
        if !s.rowDeletes.isEmpty { mask |= 1 << 4 }
        if !s.rowInserts.isEmpty { mask |= 1 << 5 }
        if !s.rowMoves.isEmpty { mask |= 1 << 6 }
        if !s.rowUpdates.isEmpty { mask |= 1 << 7 }
        u8(mask)
        if !s.sectionDeletes.isEmpty {
            index(s.sectionDeletes.count)
            for i in s.sectionDeletes { index(i) }
        }
        if !s.sectionInserts.isEmpty {
            index(s.sectionInserts.count)
            for insert in s.sectionInserts {
                index(insert.index)
                section(insert.section)
            }
        }
        if !s.sectionMoves.isEmpty {
            index(s.sectionMoves.count)
            for move in s.sectionMoves {
                index(move.from)
                index(move.to)
            }
        }
        if !s.supplementaryUpdates.isEmpty {
            index(s.supplementaryUpdates.count)
            for update in s.supplementaryUpdates {
                index(update.section)
                u8(update.element.rawValue)
                optionalBlob(update.value)
            }
        }
        if !s.rowDeletes.isEmpty {
            index(s.rowDeletes.count)
            for path in s.rowDeletes { rowPath(path) }
        }
        if !s.rowInserts.isEmpty {
            index(s.rowInserts.count)
            for insert in s.rowInserts {
                rowPath(insert.path)
                row(insert.row)
            }
        }
        if !s.rowMoves.isEmpty {
            index(s.rowMoves.count)
            for move in s.rowMoves {
                rowPath(move.from)
                rowPath(move.to)
            }
        }
        if !s.rowUpdates.isEmpty {
            index(s.rowUpdates.count)
            for update in s.rowUpdates {
                rowPath(update.path)
                row(update.row)
            }
        }
    }
}

extension WireReader {
    mutating func changeset() throws(ProtocolError) -> Changeset {
        let n = try count("stages", minBytes: 1, limit: limits.maxStagesPerChangeset, code: .tooManyElements)
        var stages: [ChangesetStage] = []
        stages.reserveCapacity(n)
        for _ in 0..<n { stages.append(try stage()) }
        // Assigned rather than passed to `Changeset(stages:)`, which drops empty stages:
        // the decoded value must re-encode to the same bytes.
        var changeset = Changeset()
        changeset.stages = stages
        return changeset
    }

    /// A present list's count: at least 1 (an empty list is announced by a clear mask
    /// bit, so a zero count would be a second encoding of the same stage).
    private mutating func presentCount(_ what: String, minBytes: Int) throws(ProtocolError) -> Int {
        let n = try changeCount(what, minBytes: minBytes)
        guard n > 0 else { throw Self.malformed("\(what) marked present with a zero count") }
        return n
    }

    mutating func stage() throws(ProtocolError) -> ChangesetStage {
        let mask = try u8("stage mask")
        var s = ChangesetStage()
        if mask & (1 << 0) != 0 {
            let n = try presentCount("section deletes", minBytes: 1)
            s.sectionDeletes.reserveCapacity(n)
            for _ in 0..<n { s.sectionDeletes.append(try index("section index")) }
        }
        if mask & (1 << 1) != 0 {
            let n = try presentCount("section inserts", minBytes: 1 + Self.minSectionBytes)
            s.sectionInserts.reserveCapacity(n)
            for _ in 0..<n {
                let at = try index("section index")
                try chargeSections(1)
                s.sectionInserts.append(SectionInsert(index: at, section: try section()))
            }
        }
        if mask & (1 << 2) != 0 {
            let n = try presentCount("section moves", minBytes: 2)
            s.sectionMoves.reserveCapacity(n)
            for _ in 0..<n {
                let from = try index("section index")
                s.sectionMoves.append(SectionMove(from: from, to: try index("section index")))
            }
        }
        if mask & (1 << 3) != 0 {
            let n = try presentCount("supplementary updates", minBytes: 3)
            s.supplementaryUpdates.reserveCapacity(n)
            for _ in 0..<n {
                let section = try index("section index")
                let raw = try u8("supplementary element")
                guard let element = SupplementaryUpdate.Element(rawValue: raw) else {
                    throw Self.malformed("unknown supplementary element \(raw)")
                }
                let value = try optionalBlob(
                    "supplementary value", maxBytes: limits.maxPayloadBytes, code: .payloadTooLarge)
                s.supplementaryUpdates.append(SupplementaryUpdate(section: section, element: element, value: value))
            }
        }
        if mask & (1 << 4) != 0 {
            let n = try presentCount("row deletes", minBytes: 2)
            s.rowDeletes.reserveCapacity(n)
            for _ in 0..<n { s.rowDeletes.append(try rowPath()) }
        }
        if mask & (1 << 5) != 0 {
            let n = try presentCount("row inserts", minBytes: 2 + Self.minRowBytes)
            s.rowInserts.reserveCapacity(n)
            for _ in 0..<n {
                let path = try rowPath()
                s.rowInserts.append(RowAtPath(path: path, row: try row()))
            }
        }
        if mask & (1 << 6) != 0 {
            let n = try presentCount("row moves", minBytes: 4)
            s.rowMoves.reserveCapacity(n)
            for _ in 0..<n {
                let from = try rowPath()
                s.rowMoves.append(RowMove(from: from, to: try rowPath()))
            }
        }
        if mask & (1 << 7) != 0 {
            let n = try presentCount("row updates", minBytes: 2 + Self.minRowBytes)
            s.rowUpdates.reserveCapacity(n)
            for _ in 0..<n {
                let path = try rowPath()
                s.rowUpdates.append(RowAtPath(path: path, row: try row()))
            }
        }
        return s
    }
}
