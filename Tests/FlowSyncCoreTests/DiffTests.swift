import FlowSyncCore
import FlowSyncCoreTestSupport
import Testing

@Suite(.timeLimit(.minutes(2))) struct DiffTests {
    func director(_ sections: [(String, [String])]) throws -> Director {
        try Director(sections: sections.map { Section(id: $0.0, rows: $0.1.map { Row(id: $0, text: "v") }) })
    }

    func check(_ a: Director, _ b: Director) -> Changeset {
        let c = Changeset.diff(from: a, to: b)
        if let problem = UIKitBatchSimulator.check(c, from: a, to: b) { Issue.record("\(problem)") }
        return c
    }

    @Test func identicalStatesGiveAnEmptyChangeset() throws {
        let a = try director([("s", ["a", "b"]), ("t", [])])
        #expect(check(a, a).isEmpty)
    }

    @Test func movesAreMinimal() throws {
        // Moving one row to the front is one move, not n-1.
        let a = try director([("s", (0..<50).map { "r\($0)" })])
        let b = try director([("s", ["r49"] + (0..<49).map { "r\($0)" })])
        #expect(check(a, b).stages.flatMap(\.rowMoves).count == 1)
        let c = try director([("s", []), ("t", []), ("u", []), ("v", [])])
        let d = try director([("v", []), ("s", []), ("t", []), ("u", [])])
        #expect(check(c, d).stages.flatMap(\.sectionMoves).count == 1)
    }

    @Test func crossSectionMoveIsAMoveAndKeepsUpdates() throws {
        let a = try director([("s", ["a", "b"]), ("t", ["c"])])
        var b = try director([("s", ["b"]), ("t", ["c", "a"])])
        try b.replace(row: .id("a"), with: Row(id: "a", text: "changed"))
        let c = check(a, b)
        #expect(
            c.stages.flatMap(\.rowMoves) == [
                RowMove(from: RowPath(section: 0, row: 0), to: RowPath(section: 1, row: 1))
            ])
        #expect(c.stages.flatMap(\.rowUpdates).map(\.path) == [RowPath(section: 0, row: 0)])
        #expect(c.stages.first?.rowUpdates.isEmpty == false, "updates come first, at old positions")
    }

    @Test func rowsLeavingADeletedSectionOrEnteringAnInsertedOneAreDeleteAndInsert() throws {
        let a = try director([("old", ["a", "b"]), ("keep", ["c"])])
        let b = try director([("keep", ["c", "a"]), ("new", ["b"])])
        let c = check(a, b)
        #expect(c.stages.flatMap(\.rowMoves).isEmpty)
        #expect(c.stages.flatMap(\.rowInserts).map(\.row.id) == ["a"])
        #expect(c.stages.flatMap(\.sectionInserts).map(\.section.id) == ["new"])
    }

    @Test func stagesFollowDifferenceKitOrder() throws {
        var a = try director([("s", ["a", "b", "c"]), ("gone", ["g"]), ("t", ["d"])])
        try a.set(header: [1], forSection: .id("t"))
        var b = try director([("t", ["d", "x"]), ("s", ["c", "a"]), ("n", [])])
        try b.replace(row: .id("a"), with: Row(id: "a", text: "w"))
        try b.set(header: [2], forSection: .id("t"))
        let c = check(a, b)
        // updates; deletes; section inserts/moves; row inserts/moves; supplementary.
        #expect(c.stages.count == 5)
        #expect(!c.stages[0].rowUpdates.isEmpty && c.stages[0].changeCount == c.stages[0].rowUpdates.count)
        #expect(!c.stages[1].sectionDeletes.isEmpty && !c.stages[1].rowDeletes.isEmpty)
        #expect(!c.stages[2].sectionInserts.isEmpty && !c.stages[2].sectionMoves.isEmpty)
        #expect(!c.stages[3].rowInserts.isEmpty && !c.stages[3].rowMoves.isEmpty)
        #expect(c.stages[4].supplementaryUpdates == [SupplementaryUpdate(section: 0, element: .header, value: [2])])
    }
}
