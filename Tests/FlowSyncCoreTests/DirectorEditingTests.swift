import FlowSyncCore
import FlowSyncCoreTestSupport
import Testing

/// Each FlowKit-style edit, its changeset, and each kind of refusal.
@Suite(.timeLimit(.minutes(2))) struct DirectorEditingTests {
    func ids(_ d: Director) -> [[String]] { d.sections.map { $0.rows.map(\.id) } }
    func rows(_ ids: String...) -> [Row] { ids.map { Row(id: $0, text: $0) } }

    func sample() throws -> Director {
        try Director(sections: [
            Section(id: "A", rows: rows("a0", "a1", "a2")),
            Section(id: "B", rows: rows("b0", "b1")),
            Section(id: "C"),
        ])
    }

    /// Applies `ops`, checks the changeset with the UIKit simulator, returns the result.
    func edit(_ d: Director, _ ops: [Operation]) throws -> (Director, Changeset) {
        var new = d
        let changeset = try new.apply(ops)
        new.checkInvariants()
        if let problem = UIKitBatchSimulator.check(changeset, from: d, to: new) { Issue.record("\(problem)") }
        return (new, changeset)
    }

    @Test func sectionEdits() throws {
        let d = try sample()
        var (n, c) = try edit(d, [.insertSections([Section(id: "N", rows: rows("n0"))], at: 1)])
        #expect(n.sections.map(\.id) == ["A", "N", "B", "C"])
        #expect(c.stages.count == 1 && c.stages[0].sectionInserts.map(\.index) == [1])

        (n, c) = try edit(d, [.removeSections([.index(2), .id("A")])])
        #expect(n.sections.map(\.id) == ["B"])
        #expect(c.stages[0].sectionDeletes == [0, 2])

        (n, c) = try edit(d, [.moveSection(.id("A"), to: 2)])
        #expect(n.sections.map(\.id) == ["B", "C", "A"])
        #expect(c.stages[0].sectionMoves == [SectionMove(from: 0, to: 2)])

        (n, _) = try edit(d, [.swapSections(.index(0), .id("C"))])
        #expect(n.sections.map(\.id) == ["C", "B", "A"])

        (n, _) = try edit(d, [.removeAllSections])
        #expect(n.sections.isEmpty && n.rowCount == 0)

        (n, c) = try edit(d, [.setHeader(.id("B"), [7]), .setFooter(.index(0), [8])])
        #expect(n.sections[1].header == [7] && n.sections[0].footer == [8])
        #expect(c.stages.count == 1)
        #expect(
            Set(c.stages[0].supplementaryUpdates) == [
                SupplementaryUpdate(section: 1, element: .header, value: [7]),
                SupplementaryUpdate(section: 0, element: .footer, value: [8]),
            ], "header/footer changes are their own kind, not section reloads")

        (n, _) = try edit(d, [.setSections([Section(id: "C", rows: rows("a1")), Section(id: "Z")])])
        #expect(n.sections.map(\.id) == ["C", "Z"] && ids(n) == [["a1"], []])
    }

    @Test func rowEdits() throws {
        let d = try sample()
        var (n, c) = try edit(d, [.insertRows(rows("x", "y"), in: .id("B"), at: 1)])
        #expect(ids(n)[1] == ["b0", "x", "y", "b1"])
        #expect(c.stages[0].rowInserts.map(\.path) == [RowPath(section: 1, row: 1), RowPath(section: 1, row: 2)])

        (n, c) = try edit(d, [.replaceRow(.index(1, in: .id("A")), with: Row(id: "a1", text: "new"))])
        #expect(n[RowPath(section: 0, row: 1)].payload == Array("new".utf8))
        #expect(c.stages[0].rowUpdates.map(\.path) == [RowPath(section: 0, row: 1)])

        (n, c) = try edit(d, [.replaceRow(.id("a1"), with: Row(id: "fresh"))])
        #expect(ids(n)[0] == ["a0", "fresh", "a2"], "a new ID replaces the row: delete + insert")
        #expect(c.stages.flatMap(\.rowDeletes) == [RowPath(section: 0, row: 1)])

        (n, _) = try edit(d, [.removeRows([.id("a0"), .index(1, in: .id("B")), .index(2, in: .index(0))])])
        #expect(ids(n) == [["a1"], ["b0"], []])

        (n, _) = try edit(d, [.removeAllRows(in: .id("A"))])
        #expect(ids(n)[0].isEmpty)

        (n, c) = try edit(d, [.moveRow(.index(0, in: .id("A")), toSection: .id("A"), at: 2)])
        #expect(ids(n)[0] == ["a1", "a2", "a0"])
        #expect(c.stages[0].rowMoves == [RowMove(from: RowPath(section: 0, row: 0), to: RowPath(section: 0, row: 2))])

        (n, c) = try edit(d, [.moveRow(.id("a1"), toSection: .id("C"), at: 0)])
        #expect(ids(n) == [["a0", "a2"], ["b0", "b1"], ["a1"]])
        #expect(
            c.stages[0].rowMoves == [RowMove(from: RowPath(section: 0, row: 1), to: RowPath(section: 2, row: 0))],
            "a cross-section move is one move")

        (n, _) = try edit(d, [.swapRows(.id("a0"), .id("a2"))])
        #expect(ids(n)[0] == ["a2", "a1", "a0"])
        (n, _) = try edit(d, [.swapRows(.id("a0"), .id("b1"))])
        #expect(ids(n) == [["b1", "a1", "a2"], ["b0", "a0"], []])

        (n, c) = try edit(d, [.setRows(rows("a2", "q", "a0"), in: .id("A"))])
        #expect(ids(n)[0] == ["a2", "q", "a0"])
        #expect(c.stages.flatMap(\.rowDeletes) == [RowPath(section: 0, row: 1)])
        #expect(c.stages.flatMap(\.rowInserts).map(\.path) == [RowPath(section: 0, row: 1)])
        #expect(
            c.stages.flatMap(\.rowMoves).count == 1,
            "set(rows:) is diffed: one move, not a delete and insert of every row")
    }

    @Test func setRowsMayTakeRowsFromItsOwnSectionOnly() throws {
        let d = try sample()
        var n = d
        try n.set(rows: rows("a2", "a0", "new"), inSection: .id("A"))
        #expect(ids(n)[0] == ["a2", "a0", "new"])
        var m = d
        #expect(throws: MutationError.self) { try m.set(rows: rows("b0"), inSection: .id("A")) }
        #expect(m == d)
    }

    @Test func flowKitConveniences() throws {
        var d = Director()
        try d.add(section: Section(id: "S"))
        try d.add(rows: rows("1", "2", "3"), inSection: .id("S"))
        try d.add(row: Row(id: "0"), inSection: .id("S"), at: 0)
        try d.move(rowAt: 0, to: 3, inSection: .index(0))
        try d.swap(row: .index(0, in: .index(0)), with: .index(1, in: .index(0)))
        try d.add(sections: [Section(id: "T"), Section(id: "U")], at: 0)
        try d.move(sectionAt: 2, to: 0)
        try d.swap(sectionAt: 1, with: 2)
        try d.remove(sectionsAt: [2])
        try d.remove(row: .id("3"))
        #expect(d.sections.map(\.id) == ["S", "U"])
        #expect(ids(d)[0] == ["2", "1", "0"])
        d.checkInvariants()
    }

    // MARK: Refusals: each names the op and the reason, and changes nothing.

    static let refusals: [(String, [Operation], MutationError.Reason, Int)] = [
        ("row index out of range", [.removeRows([.index(3, in: .id("A"))])], .indexOutOfRange, 0),
        ("section index out of range", [.moveSection(.index(3), to: 0)], .indexOutOfRange, 0),
        ("insert index past the end", [.insertRows([Row(id: "x")], in: .id("A"), at: 4)], .indexOutOfRange, 0),
        ("move destination past the end", [.moveRow(.id("a0"), toSection: .id("A"), at: 3)], .indexOutOfRange, 0),
        ("duplicate row ID", [.insertRows([Row(id: "b0")], in: .id("A"), at: 0)], .duplicateID, 0),
        ("row ID twice in one op", [.insertRows([Row(id: "x"), Row(id: "x")], in: .id("A"), at: 0)], .duplicateID, 0),
        ("duplicate section ID", [.insertSections([Section(id: "B")], at: 0)], .duplicateID, 0),
        ("row named twice", [.removeRows([.id("a0"), .index(0, in: .id("A"))])], .duplicateID, 0),
        ("unknown section", [.insertRows([Row(id: "x")], in: .id("nope"), at: 0)], .unknownSection, 0),
        ("unknown row", [.removeRows([.id("nope")])], .unknownRow, 0),
        ("empty ID", [.insertRows([Row(id: "")], in: .id("A"), at: 0)], .invalidID, 0),
        (
            "later op fails",
            [.removeRows([.id("a0")]), .insertSections([Section(id: "N")], at: 0), .removeRows([.id("a0")])],
            .unknownRow, 2
        ),
        ("replace with an existing ID", [.replaceRow(.id("a0"), with: Row(id: "b1"))], .duplicateID, 0),
    ]

    @Test(arguments: 0..<refusals.count)
    func refusalLeavesDirectorUntouched(index: Int) throws {
        let (name, ops, reason, opIndex) = Self.refusals[index]
        let d = try sample()
        var n = d
        do {
            try n.apply(ops)
            Issue.record("\(name): was accepted")
        } catch {
            #expect(error.reason == reason, "\(name): \(error)")
            #expect(error.opIndex == opIndex, "\(name): \(error)")
        }
        #expect(n == d && n.digest == d.digest, "\(name)")
        n.checkInvariants()
    }

    @Test func limitsAreEnforced() throws {
        let limits = DirectorLimits(
            maxIDBytes: 4, maxKindBytes: 2, maxPayloadBytes: 3, maxSections: 2, maxRows: 3, maxOpsPerMutation: 2)
        var d = try Director(sections: [Section(id: "s")], limits: limits)
        let cases: [([Operation], MutationError.Reason)] = [
            ([.insertRows([Row(id: "12345")], in: .index(0), at: 0)], .invalidID),
            ([.insertRows([Row(id: "k", kind: "abc")], in: .index(0), at: 0)], .limitExceeded),
            ([.insertRows([Row(id: "p", payload: [1, 2, 3, 4])], in: .index(0), at: 0)], .limitExceeded),
            ([.setHeader(.index(0), [1, 2, 3, 4])], .limitExceeded),
            ([.insertSections([Section(id: "t"), Section(id: "u")], at: 0)], .limitExceeded),
            (
                [.insertRows([Row(id: "1"), Row(id: "2"), Row(id: "3"), Row(id: "4")], in: .index(0), at: 0)],
                .limitExceeded
            ),
            ([.setHeader(.index(0), nil), .setHeader(.index(0), nil), .setHeader(.index(0), nil)], .limitExceeded),
        ]
        for (ops, reason) in cases {
            #expect(throws: MutationError.self) { try d.apply(ops) }
            do { try d.apply(ops) } catch { #expect(error.reason == reason, "\(ops): \(error)") }
        }
        try d.apply([.insertRows([Row(id: "1"), Row(id: "2"), Row(id: "3")], in: .index(0), at: 0)])
        #expect(d.rowCount == 3)
    }

    @Test func batchKeepsGoodGroupsAndRefusesBadOnes() throws {
        var d = try sample()
        let outcome = d.applyBatch([
            [.insertRows([Row(id: "x")], in: .id("C"), at: 0)],
            [.removeRows([.id("a0")]), .removeRows([.id("missing")])],
            [.moveRow(.id("x"), toSection: .id("A"), at: 0)],
        ])
        #expect(outcome.results.map { (try? $0.get()) != nil } == [true, false, true])
        #expect(ids(d) == [["x", "a0", "a1", "a2"], ["b0", "b1"], []])
        #expect(UIKitBatchSimulator.check(outcome.changeset, from: try sample(), to: d) == nil)
    }
}
