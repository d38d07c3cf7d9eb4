// FlowKit / Owl-style editing conveniences. Each builds one ``Operation`` and applies
// it atomically, returning the changeset a UI would animate. To group several edits
// into one atomic change (FlowKit's `reloadData(after:)`), build the operations and
// call `apply(_:)` once.

extension Director {
    // MARK: Sections

    /// Replaces every section.
    @discardableResult
    public mutating func set(sections: [Section]) throws(MutationError) -> Changeset {
        try apply([.setSections(sections)])
    }

    /// Inserts a section at `index` (defaults to the end).
    @discardableResult
    public mutating func add(section: Section, at index: Int? = nil) throws(MutationError) -> Changeset {
        try apply([.insertSections([section], at: index ?? sections.count)])
    }

    /// Inserts sections at `index` (defaults to the end).
    @discardableResult
    public mutating func add(sections new: [Section], at index: Int? = nil) throws(MutationError) -> Changeset {
        try apply([.insertSections(new, at: index ?? sections.count)])
    }

    /// Removes the section at `index`.
    @discardableResult
    public mutating func remove(sectionAt index: Int) throws(MutationError) -> Changeset {
        try apply([.removeSections([.index(index)])])
    }

    /// Removes the sections at `indices` (resolved before any is removed).
    @discardableResult
    public mutating func remove(sectionsAt indices: [Int]) throws(MutationError) -> Changeset {
        try apply([.removeSections(indices.map { .index($0) })])
    }

    /// Removes every section.
    @discardableResult
    public mutating func removeAllSections() throws(MutationError) -> Changeset {
        try apply([.removeAllSections])
    }

    /// Moves the section at `from` to `to`.
    @discardableResult
    public mutating func move(sectionAt from: Int, to: Int) throws(MutationError) -> Changeset {
        try apply([.moveSection(.index(from), to: to)])
    }

    /// Exchanges two sections.
    @discardableResult
    public mutating func swap(sectionAt a: Int, with b: Int) throws(MutationError) -> Changeset {
        try apply([.swapSections(.index(a), .index(b))])
    }

    /// Sets or clears a section's header.
    @discardableResult
    public mutating func set(header: [UInt8]?, forSection section: SectionRef) throws(MutationError) -> Changeset {
        try apply([.setHeader(section, header)])
    }

    /// Sets or clears a section's footer.
    @discardableResult
    public mutating func set(footer: [UInt8]?, forSection section: SectionRef) throws(MutationError) -> Changeset {
        try apply([.setFooter(section, footer)])
    }

    // MARK: Rows

    /// Replaces every row of a section.
    @discardableResult
    public mutating func set(rows: [Row], inSection section: SectionRef) throws(MutationError) -> Changeset {
        try apply([.setRows(rows, in: section)])
    }

    /// Inserts a row at `index` of a section (defaults to the end).
    @discardableResult
    public mutating func add(
        row: Row, inSection section: SectionRef, at index: Int? = nil
    ) throws(MutationError) -> Changeset {
        try add(rows: [row], inSection: section, at: index)
    }

    /// Inserts rows at `index` of a section (defaults to the end).
    @discardableResult
    public mutating func add(
        rows: [Row], inSection section: SectionRef, at index: Int? = nil
    ) throws(MutationError) -> Changeset {
        let at: Int
        if let index { at = index } else { at = (try? resolve(section, op: 0)).map { sections[$0].rows.count } ?? 0 }
        return try apply([.insertRows(rows, in: section, at: at)])
    }

    /// Replaces the row at `row` (an update when the ID is kept).
    @discardableResult
    public mutating func replace(row: RowRef, with new: Row) throws(MutationError) -> Changeset {
        try apply([.replaceRow(row, with: new)])
    }

    /// Removes one row.
    @discardableResult
    public mutating func remove(row: RowRef) throws(MutationError) -> Changeset {
        try apply([.removeRows([row])])
    }

    /// Removes rows (resolved before any is removed).
    @discardableResult
    public mutating func remove(rows: [RowRef]) throws(MutationError) -> Changeset {
        try apply([.removeRows(rows)])
    }

    /// Removes every row of a section.
    @discardableResult
    public mutating func removeAllRows(inSection section: SectionRef) throws(MutationError) -> Changeset {
        try apply([.removeAllRows(in: section)])
    }

    /// Moves a row within its section.
    @discardableResult
    public mutating func move(
        rowAt from: Int, to: Int, inSection section: SectionRef
    ) throws(MutationError) -> Changeset {
        try apply([.moveRow(.index(from, in: section), toSection: section, at: to)])
    }

    /// Moves a row to `index` of another (or the same) section.
    @discardableResult
    public mutating func move(
        row: RowRef, toSection section: SectionRef, at index: Int
    ) throws(MutationError) -> Changeset {
        try apply([.moveRow(row, toSection: section, at: index)])
    }

    /// Exchanges two rows.
    @discardableResult
    public mutating func swap(row a: RowRef, with b: RowRef) throws(MutationError) -> Changeset {
        try apply([.swapRows(a, b)])
    }
}
