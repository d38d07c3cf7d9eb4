import FlowSyncCore

/// Collects edits for one write (``ListDirector/perform(_:)``), as FlowKit's
/// `reloadData(after:)` block does: every edit inside the block reaches the server as one
/// mutation, applied atomically, and the app sees one change.
///
/// From the second edit on, each one applies at once to a working copy of the list, so
/// later edits see earlier ones (indices, counts) and a bad edit throws where it is made.
/// The first edit is only recorded: a batch of one edit (every convenience edit of
/// ``ListDirector`` and ``LiveSection``) never copies the list — the replica checks it
/// when it applies it, in place.
public final class DirectorBatch {
    /// The list as the edits so far leave it (the first edit is applied on demand).
    public var working: Director {
        settle()
        return state
    }
    /// The edits so far, as protocol operations.
    public private(set) var operations: [Operation] = []

    private var state: Director
    /// How many of ``operations`` are applied to ``state``.
    private var applied = 0

    init(working: Director) { self.state = working }

    /// The list before any edit of the batch, or after them all: reads that do not
    /// need to copy it.
    var current: Director { applied == operations.count ? state : working }

    private func settle() {
        while applied < operations.count {
            // Recorded edits were valid when recorded or are re-checked here; a failure
            // leaves them for the replica to refuse.
            _ = try? state.apply([operations[applied]])
            applied += 1
        }
    }

    /// Applies one raw operation (the escape hatch under the typed edits).
    public func apply(_ operation: Operation) throws(FlowSyncError) {
        if operations.isEmpty {
            // Recorded only; the replica validates it.
            operations.append(operation)
            return
        }
        settle()
        do {
            try state.apply([operation])
        } catch {
            throw .invalidEdit(MutationError(opIndex: operations.count, reason: error.reason, message: error.message))
        }
        operations.append(operation)
        applied = operations.count
    }

    // MARK: Sections

    /// Inserts a section at `index` (default: at the end).
    public func add(section: NewSection, at index: Int? = nil) throws(FlowSyncError) {
        try add(sections: [section], at: index)
    }

    /// Inserts sections, in order, at `index` (default: at the end).
    public func add(sections: [NewSection], at index: Int? = nil) throws(FlowSyncError) {
        var encoded: [Section] = []
        for section in sections { encoded.append(try section.encoded()) }
        try apply(.insertSections(encoded, at: index ?? current.sections.count))
    }

    /// Adds models at the end of the last section, first creating a section with ID
    /// `newSectionID` when there is none. (FlowKit's `add(models:)` always makes a new
    /// section: use `add(section:at:)` for that.)
    public func add(models: [any FlowModel], newSectionID: String = "default") throws(FlowSyncError) {
        var rows: [Row] = []
        for model in models { rows.append(try ModelCoding.row(any: model)) }
        let working = current
        if let last = working.sections.last {
            try apply(.insertRows(rows, in: .id(last.id), at: last.rows.count))
        } else {
            try apply(.insertSections([Section(id: newSectionID, rows: rows)], at: 0))
        }
    }

    /// Removes the sections at `indexes` (of the list before the removal) with their rows.
    public func remove(sectionsAt indexes: [Int]) throws(FlowSyncError) {
        try apply(.removeSections(indexes.map { .index($0) }))
    }

    /// Removes the section at `index` with its rows.
    public func remove(sectionAt index: Int) throws(FlowSyncError) {
        try apply(.removeSections([.index(index)]))
    }

    /// Removes the section with that ID with its rows.
    public func remove(sectionID: String) throws(FlowSyncError) {
        try apply(.removeSections([.id(sectionID)]))
    }

    /// Moves a section; `to` is its index afterwards.
    public func move(sectionAt from: Int, to: Int) throws(FlowSyncError) {
        try apply(.moveSection(.index(from), to: to))
    }

    /// Swaps two sections.
    public func swap(sectionAt a: Int, with b: Int) throws(FlowSyncError) {
        try apply(.swapSections(.index(a), .index(b)))
    }

    /// Replaces every section (the UI gets the minimal diff, not a reload).
    public func set(sections: [NewSection]) throws(FlowSyncError) {
        var encoded: [Section] = []
        for section in sections { encoded.append(try section.encoded()) }
        try apply(.setSections(encoded))
    }

    /// Removes every section.
    public func removeAll() throws(FlowSyncError) {
        try apply(.removeAllSections)
    }

    /// The section with that ID, for row edits.
    public func section(_ id: String) -> BatchSection { BatchSection(batch: self, ref: .id(id)) }

    /// The section at `index`, for row edits.
    public func section(at index: Int) throws(FlowSyncError) -> BatchSection {
        let current = self.current
        guard current.sections.indices.contains(index) else {
            throw .invalidEdit(
                MutationError(
                    opIndex: operations.count, reason: .indexOutOfRange,
                    message: "section index \(index) not in 0..<\(current.sections.count)"))
        }
        return BatchSection(batch: self, ref: .id(current.sections[index].id))
    }
}

/// Row edits of one section inside a ``DirectorBatch``.
public struct BatchSection {
    let batch: DirectorBatch
    let ref: SectionRef

    private func sectionIndex() throws(FlowSyncError) -> Int {
        guard let index = batch.current.index(of: ref) else {
            throw .invalidEdit(
                MutationError(opIndex: batch.operations.count, reason: .unknownSection, message: "no \(ref)"))
        }
        return index
    }

    /// The number of rows now.
    public var count: Int { (try? sectionIndex()).map { batch.current.sections[$0].rows.count } ?? 0 }

    /// Inserts a model at `index` (default: at the end).
    public func add(model: some FlowModel, at index: Int? = nil) throws(FlowSyncError) {
        try add(rows: [try ModelCoding.row(model)], at: index)
    }

    /// Inserts models, in order, at `index` (default: at the end). Kinds may be mixed.
    public func add(models: [any FlowModel], at index: Int? = nil) throws(FlowSyncError) {
        var rows: [Row] = []
        for model in models { rows.append(try ModelCoding.row(any: model)) }
        try add(rows: rows, at: index)
    }

    /// Inserts raw rows at `index` (default: at the end).
    public func add(rows: [Row], at index: Int? = nil) throws(FlowSyncError) {
        let s = try sectionIndex()
        try batch.apply(.insertRows(rows, in: ref, at: index ?? batch.current.sections[s].rows.count))
    }

    /// Removes the row at `index`.
    public func remove(at index: Int) throws(FlowSyncError) {
        try batch.apply(.removeRows([.index(index, in: ref)]))
    }

    /// Removes the rows at `indexes` (indices of the state before the removal).
    public func remove(at indexes: [Int]) throws(FlowSyncError) {
        try batch.apply(.removeRows(indexes.map { .index($0, in: ref) }))
    }

    /// Moves a row within the section; `to` is its index afterwards.
    public func move(from: Int, to: Int) throws(FlowSyncError) {
        try batch.apply(.moveRow(.index(from, in: ref), toSection: ref, at: to))
    }

    /// Moves the row at `from` to another section, at `index` there.
    public func move(from: Int, toSection destination: String, at index: Int) throws(FlowSyncError) {
        try batch.apply(.moveRow(.index(from, in: ref), toSection: .id(destination), at: index))
    }

    /// Swaps two rows of the section.
    public func swap(at a: Int, with b: Int) throws(FlowSyncError) {
        try batch.apply(.swapRows(.index(a, in: ref), .index(b, in: ref)))
    }

    /// Replaces every row (the UI gets the minimal diff, with moves and updates).
    public func set(models: [any FlowModel]) throws(FlowSyncError) {
        var rows: [Row] = []
        for model in models { rows.append(try ModelCoding.row(any: model)) }
        try batch.apply(.setRows(rows, in: ref))
    }

    /// Replaces the model with the same ID (a reload of that row when its content changed).
    public func update(model: some FlowModel) throws(FlowSyncError) {
        try batch.apply(.replaceRow(.id(model.rowID), with: try ModelCoding.row(model)))
    }

    /// Replaces the row at `index` with `model` (which may have another ID).
    public func replace(at index: Int, with model: some FlowModel) throws(FlowSyncError) {
        try batch.apply(.replaceRow(.index(index, in: ref), with: try ModelCoding.row(model)))
    }

    /// Removes every row of the section.
    public func removeAll() throws(FlowSyncError) {
        try batch.apply(.removeAllRows(in: ref))
    }

    /// Sets the header (JSON), or removes it with `nil`.
    public func set(header: (any Encodable & Sendable)?) throws(FlowSyncError) {
        try batch.apply(.setHeader(ref, try header.map(NewSection.encode)))
    }

    /// Sets the footer (JSON), or removes it with `nil`.
    public func set(footer: (any Encodable & Sendable)?) throws(FlowSyncError) {
        try batch.apply(.setFooter(ref, try footer.map(NewSection.encode)))
    }
}

extension DirectorBatch {
    /// Removes the model with that ID, wherever it is.
    public func remove(modelID: String) throws(FlowSyncError) {
        try apply(.removeRows([.id(modelID)]))
    }

    /// Moves the model with that ID to `section`, at `index` there (default: the end).
    public func move(modelID: String, toSection section: String, at index: Int? = nil) throws(FlowSyncError) {
        let working = current
        guard let s = working.sectionIndex(id: section) else {
            throw .invalidEdit(
                MutationError(opIndex: operations.count, reason: .unknownSection, message: "no section \(section)"))
        }
        var end = working.sections[s].rows.count
        if let path = working.rowPath(id: modelID), path.section == s { end -= 1 }
        try apply(.moveRow(.id(modelID), toSection: .id(section), at: index ?? end))
    }

    /// Replaces the model with the same ID, wherever it is.
    public func update(model: some FlowModel) throws(FlowSyncError) {
        try apply(.replaceRow(.id(model.rowID), with: try ModelCoding.row(model)))
    }
}
