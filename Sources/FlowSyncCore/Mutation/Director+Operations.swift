// Resolving and applying single operations. Each operation is validated completely
// *before* its first primitive runs, so a failing operation never leaves a partial
// edit of its own; earlier operations of the same group are reverted from the undo log
// (see `Director+Batch.swift`).

extension Director {
    // MARK: Resolution

    func resolve(_ ref: SectionRef, op: Int) throws(MutationError) -> Int {
        switch ref {
        case .id(let id):
            guard let s = sectionIndex(id: id) else {
                throw MutationError(opIndex: op, reason: .unknownSection, message: "no section with ID \"\(id)\"")
            }
            return s
        case .index(let s):
            guard s >= 0 && s < sections.count else {
                throw MutationError(
                    opIndex: op, reason: .indexOutOfRange, message: "section index \(s) not in 0..<\(sections.count)")
            }
            return s
        }
    }

    func resolve(_ ref: RowRef, op: Int) throws(MutationError) -> RowPath {
        switch ref {
        case .id(let id):
            guard let path = rowPath(id: id) else {
                throw MutationError(opIndex: op, reason: .unknownRow, message: "no row with ID \"\(id)\"")
            }
            return path
        case .index(let r, let sectionRef):
            let s = try resolve(sectionRef, op: op)
            guard r >= 0 && r < sections[s].rows.count else {
                throw MutationError(
                    opIndex: op, reason: .indexOutOfRange,
                    message: "row index \(r) not in 0..<\(sections[s].rows.count) of section \"\(sections[s].id)\"")
            }
            return RowPath(section: s, row: r)
        }
    }

    // MARK: Validation

    func validateID(_ id: String, _ what: String, op: Int) throws(MutationError) {
        if id.isEmpty {
            throw MutationError(opIndex: op, reason: .invalidID, message: "\(what) ID is empty")
        }
        if id.utf8.count > limits.maxIDBytes {
            throw MutationError(
                opIndex: op, reason: .invalidID,
                message: "\(what) ID is \(id.utf8.count) bytes, limit \(limits.maxIDBytes)")
        }
    }

    func validatePayload(_ bytes: [UInt8]?, _ what: String, op: Int) throws(MutationError) {
        if let bytes, bytes.count > limits.maxPayloadBytes {
            throw MutationError(
                opIndex: op, reason: .limitExceeded,
                message: "\(what) is \(bytes.count) bytes, limit \(limits.maxPayloadBytes)")
        }
    }

    func validateRowContent(_ row: Row, op: Int) throws(MutationError) {
        try validateID(row.id, "row", op: op)
        if row.kind.utf8.count > limits.maxKindBytes {
            throw MutationError(
                opIndex: op, reason: .limitExceeded,
                message: "kind of row \"\(row.id)\" is \(row.kind.utf8.count) bytes, limit \(limits.maxKindBytes)")
        }
        try validatePayload(row.payload, "payload of row \"\(row.id)\"", op: op)
    }

    /// Validates rows about to be added. A row ID may already exist only in section
    /// `replacing` (whose rows are all being replaced).
    func validateNewRows(_ rows: [Row], replacing: Int? = nil, seen: inout Set<String>, op: Int) throws(MutationError) {
        let replacedID = replacing.map { sections[$0].id }
        for row in rows {
            try validateRowContent(row, op: op)
            if let owner = rowSectionIDs[row.id], owner != replacedID {
                throw MutationError(
                    opIndex: op, reason: .duplicateID, message: "row ID \"\(row.id)\" already in section \"\(owner)\"")
            }
            guard seen.insert(row.id).inserted else {
                throw MutationError(opIndex: op, reason: .duplicateID, message: "row ID \"\(row.id)\" given twice")
            }
        }
    }

    func checkRowLimit(adding n: Int, removing m: Int = 0, op: Int) throws(MutationError) {
        if rowCount - m + n > limits.maxRows {
            throw MutationError(
                opIndex: op, reason: .limitExceeded,
                message: "would hold \(rowCount - m + n) rows, limit \(limits.maxRows)")
        }
    }

    func checkSectionLimit(count: Int, op: Int) throws(MutationError) {
        if count > limits.maxSections {
            throw MutationError(
                opIndex: op, reason: .limitExceeded,
                message: "would hold \(count) sections, limit \(limits.maxSections)")
        }
    }

    /// Validates whole sections about to be added (`replacingAll`: the current sections
    /// are all being removed, so their IDs are free).
    func validateNewSections(_ new: [Section], replacingAll: Bool, op: Int) throws(MutationError) {
        var seenSections = Set<String>()
        var seenRows = Set<String>()
        var added = 0
        for section in new {
            try validateID(section.id, "section", op: op)
            try validatePayload(section.header, "header of section \"\(section.id)\"", op: op)
            try validatePayload(section.footer, "footer of section \"\(section.id)\"", op: op)
            if !replacingAll && sectionIDs.contains(section.id) {
                throw MutationError(
                    opIndex: op, reason: .duplicateID, message: "section ID \"\(section.id)\" already exists")
            }
            guard seenSections.insert(section.id).inserted else {
                throw MutationError(
                    opIndex: op, reason: .duplicateID, message: "section ID \"\(section.id)\" given twice")
            }
            for row in section.rows {
                try validateRowContent(row, op: op)
                if !replacingAll, let owner = rowSectionIDs[row.id] {
                    throw MutationError(
                        opIndex: op, reason: .duplicateID,
                        message: "row ID \"\(row.id)\" already in section \"\(owner)\"")
                }
                guard seenRows.insert(row.id).inserted else {
                    throw MutationError(opIndex: op, reason: .duplicateID, message: "row ID \"\(row.id)\" given twice")
                }
            }
            added += section.rows.count
        }
        try checkSectionLimit(count: (replacingAll ? 0 : sections.count) + new.count, op: op)
        try checkRowLimit(adding: added, removing: replacingAll ? rowCount : 0, op: op)
    }

    // MARK: Application

    /// Validates and performs one operation through the primitives.
    mutating func perform(_ operation: Operation, op: Int, _ ctx: inout EditContext) throws(MutationError) {
        switch operation {
        case .setSections(let new):
            try validateNewSections(new, replacingAll: true, op: op)
            for s in sections.indices.reversed() { primitiveRemoveSection(at: s, &ctx) }
            for (s, section) in new.enumerated() { primitiveInsertSection(section, at: s, handle: nil, &ctx) }

        case .insertSections(let new, let index):
            guard index >= 0 && index <= sections.count else {
                throw MutationError(
                    opIndex: op, reason: .indexOutOfRange, message: "insert index \(index) not in 0...\(sections.count)"
                )
            }
            try validateNewSections(new, replacingAll: false, op: op)
            for (k, section) in new.enumerated() { primitiveInsertSection(section, at: index + k, handle: nil, &ctx) }

        case .removeSections(let refs):
            var indices: [Int] = []
            indices.reserveCapacity(refs.count)
            for ref in refs { indices.append(try resolve(ref, op: op)) }
            indices.sort(by: >)
            for k in indices.indices.dropFirst() where indices[k] == indices[k - 1] {
                throw MutationError(
                    opIndex: op, reason: .duplicateID, message: "section \"\(sections[indices[k]].id)\" named twice")
            }
            for s in indices { primitiveRemoveSection(at: s, &ctx) }

        case .removeAllSections:
            for s in sections.indices.reversed() { primitiveRemoveSection(at: s, &ctx) }

        case .moveSection(let ref, let to):
            let from = try resolve(ref, op: op)
            guard to >= 0 && to < sections.count else {
                throw MutationError(
                    opIndex: op, reason: .indexOutOfRange,
                    message: "section destination \(to) not in 0..<\(sections.count)")
            }
            guard from != to else { return }
            let (section, handle) = primitiveRemoveSection(at: from, &ctx)
            primitiveInsertSection(section, at: to, handle: handle, &ctx)

        case .swapSections(let a, let b):
            let i = try resolve(a, op: op), j = try resolve(b, op: op)
            guard i != j else { return }
            let (lo, hi) = (min(i, j), max(i, j))
            // Take the higher one out first so the lower index stays valid.
            let upper = primitiveRemoveSection(at: hi, &ctx)
            let lower = primitiveRemoveSection(at: lo, &ctx)
            primitiveInsertSection(upper.section, at: lo, handle: upper.handle, &ctx)
            primitiveInsertSection(lower.section, at: hi, handle: lower.handle, &ctx)

        case .setHeader(let ref, let header):
            let s = try resolve(ref, op: op)
            try validatePayload(header, "header", op: op)
            guard sections[s].header != header else { return }
            primitiveSetSupplementary(section: s, header: header, footer: sections[s].footer, &ctx)

        case .setFooter(let ref, let footer):
            let s = try resolve(ref, op: op)
            try validatePayload(footer, "footer", op: op)
            guard sections[s].footer != footer else { return }
            primitiveSetSupplementary(section: s, header: sections[s].header, footer: footer, &ctx)

        case .setRows(let rows, let ref):
            let s = try resolve(ref, op: op)
            // Reserved: growing a set of k IDs rehashes it ~log k times.
            var seen = Set<String>(minimumCapacity: rows.count)
            try validateNewRows(rows, replacing: s, seen: &seen, op: op)
            try checkRowLimit(adding: rows.count, removing: sections[s].rows.count, op: op)
            for r in sections[s].rows.indices.reversed() { primitiveRemoveRow(section: s, at: r, &ctx) }
            primitiveInsertRows(rows, section: s, at: 0, &ctx)

        case .insertRows(let rows, let ref, let index):
            let s = try resolve(ref, op: op)
            guard index >= 0 && index <= sections[s].rows.count else {
                throw MutationError(
                    opIndex: op, reason: .indexOutOfRange,
                    message:
                        "row insert index \(index) not in 0...\(sections[s].rows.count) of section \"\(sections[s].id)\""
                )
            }
            var seen = Set<String>(minimumCapacity: rows.count)
            try validateNewRows(rows, seen: &seen, op: op)
            try checkRowLimit(adding: rows.count, op: op)
            primitiveInsertRows(rows, section: s, at: index, &ctx)

        case .replaceRow(let ref, let row):
            let path = try resolve(ref, op: op)
            try validateRowContent(row, op: op)
            let old = sections[path.section].rows[path.row]
            if old.id == row.id {
                primitiveReplaceRow(section: path.section, at: path.row, with: row, &ctx)
            } else {
                // A different ID is a different row: the old one leaves, the new one arrives.
                if let owner = rowSectionIDs[row.id] {
                    throw MutationError(
                        opIndex: op, reason: .duplicateID,
                        message: "row ID \"\(row.id)\" already in section \"\(owner)\"")
                }
                primitiveRemoveRow(section: path.section, at: path.row, &ctx)
                primitiveInsertRow(row, section: path.section, at: path.row, handle: nil, &ctx)
            }

        case .removeRows(let refs):
            var paths: [RowPath] = []
            paths.reserveCapacity(refs.count)
            for ref in refs { paths.append(try resolve(ref, op: op)) }
            paths.sort(by: >)
            for k in paths.indices.dropFirst() where paths[k] == paths[k - 1] {
                throw MutationError(
                    opIndex: op, reason: .duplicateID, message: "row \"\(self[paths[k]].id)\" named twice")
            }
            for path in paths { primitiveRemoveRow(section: path.section, at: path.row, &ctx) }

        case .removeAllRows(let ref):
            let s = try resolve(ref, op: op)
            for r in sections[s].rows.indices.reversed() { primitiveRemoveRow(section: s, at: r, &ctx) }

        case .moveRow(let ref, let sectionRef, let to):
            let from = try resolve(ref, op: op)
            let s = try resolve(sectionRef, op: op)
            let capacity = sections[s].rows.count - (s == from.section ? 1 : 0)
            guard to >= 0 && to <= capacity else {
                throw MutationError(
                    opIndex: op, reason: .indexOutOfRange,
                    message: "row destination \(to) not in 0...\(capacity) of section \"\(sections[s].id)\"")
            }
            guard !(s == from.section && to == from.row) else { return }
            let (row, handle) = primitiveRemoveRow(section: from.section, at: from.row, &ctx)
            primitiveInsertRow(row, section: s, at: to, handle: handle, &ctx)

        case .swapRows(let a, let b):
            let p = try resolve(a, op: op), q = try resolve(b, op: op)
            guard p != q else { return }
            let (lo, hi) = (min(p, q), max(p, q))
            // Remove the later path first: in one section it keeps the earlier index valid.
            let upper = primitiveRemoveRow(section: hi.section, at: hi.row, &ctx)
            let lower = primitiveRemoveRow(section: lo.section, at: lo.row, &ctx)
            primitiveInsertRow(upper.row, section: lo.section, at: lo.row, handle: upper.handle, &ctx)
            primitiveInsertRow(lower.row, section: hi.section, at: hi.row, handle: lower.handle, &ctx)
        }
    }
}
