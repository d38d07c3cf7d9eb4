import FlowSyncCore
import Testing

/// Hand-written UIKit traps: each stage is one that `performBatchUpdates` rejects, and
/// the validator must name the rule.
@Suite(.timeLimit(.minutes(2))) struct BatchValidatorTests {
    func p(_ s: Int, _ r: Int) -> RowPath { RowPath(section: s, row: r) }
    func row(_ id: String) -> Row { Row(id: id) }

    func stage(_ build: (inout ChangesetStage) -> Void) -> ChangesetStage {
        var s = ChangesetStage()
        build(&s)
        return s
    }

    static func cases() -> [(String, ChangesetStage, [Int], [Int], BatchViolation.Rule)] {
        let t = BatchValidatorTests()
        return [
            ("delete past the end", t.stage { $0.rowDeletes = [t.p(0, 3)] }, [3], [2], .rowOutOfRange),
            (
                "insert past the end", t.stage { $0.rowInserts = [RowAtPath(path: t.p(0, 4), row: t.row("x"))] }, [3],
                [4], .rowOutOfRange
            ),
            ("delete in a missing section", t.stage { $0.rowDeletes = [t.p(2, 0)] }, [3], [3], .sectionOutOfRange),
            ("section delete past the end", t.stage { $0.sectionDeletes = [1] }, [3], [], .sectionOutOfRange),
            ("row deleted twice", t.stage { $0.rowDeletes = [t.p(0, 1), t.p(0, 1)] }, [3], [1], .duplicateRow),
            ("section deleted twice", t.stage { $0.sectionDeletes = [0, 0] }, [1, 1], [1], .duplicateSection),
            (
                "section deleted and moved",
                t.stage {
                    $0.sectionDeletes = [0]
                    $0.sectionMoves = [SectionMove(from: 0, to: 0)]
                }, [1, 1], [1], .duplicateSection
            ),
            (
                "two inserts at one path",
                t.stage {
                    $0.rowInserts = [
                        RowAtPath(path: t.p(0, 0), row: t.row("x")), RowAtPath(path: t.p(0, 0), row: t.row("y")),
                    ]
                }, [0], [2], .duplicateRow
            ),
            (
                "insert and move to one path",
                t.stage {
                    $0.rowInserts = [RowAtPath(path: t.p(0, 0), row: t.row("x"))]
                    $0.rowMoves = [RowMove(from: t.p(0, 1), to: t.p(0, 0))]
                }, [2], [3], .duplicateRow
            ),
            (
                "delete and reload",
                t.stage {
                    $0.rowDeletes = [t.p(0, 1)]
                    $0.rowUpdates = [RowAtPath(path: t.p(0, 1), row: t.row("x"))]
                }, [2], [1], .deleteAndReload
            ),
            (
                "move and reload",
                t.stage {
                    $0.rowMoves = [RowMove(from: t.p(0, 0), to: t.p(0, 1))]
                    $0.rowUpdates = [RowAtPath(path: t.p(0, 0), row: t.row("x"))]
                }, [2], [2], .deleteAndReload
            ),
            (
                "row delete in a deleted section",
                t.stage {
                    $0.sectionDeletes = [0]
                    $0.rowDeletes = [t.p(0, 0)]
                }, [1, 1], [1], .rowInDeletedSection
            ),
            (
                "move out of a deleted section",
                t.stage {
                    $0.sectionDeletes = [0]
                    $0.rowMoves = [RowMove(from: t.p(0, 0), to: t.p(0, 0))]
                }, [1, 1], [2], .rowInDeletedSection
            ),
            (
                "insert into an inserted section",
                t.stage {
                    $0.sectionInserts = [SectionInsert(index: 0, section: Section(id: "n"))]
                    $0.rowInserts = [RowAtPath(path: t.p(0, 0), row: t.row("x"))]
                }, [1], [1, 1], .rowIntoInsertedSection
            ),
            (
                "move into an inserted section (stale index)",
                t.stage {
                    $0.sectionInserts = [SectionInsert(index: 1, section: Section(id: "n"))]
                    $0.rowMoves = [RowMove(from: t.p(0, 0), to: t.p(1, 0))]
                }, [2], [1, 1], .rowIntoInsertedSection
            ),
            (
                "section count does not add up", t.stage { $0.sectionDeletes = [0] }, [1, 1], [1, 1],
                .sectionCountMismatch
            ),
            ("row count does not add up", t.stage { $0.rowDeletes = [t.p(0, 0)] }, [3], [3], .rowCountMismatch),
            (
                "moved-in row not counted", t.stage { $0.rowMoves = [RowMove(from: t.p(0, 0), to: t.p(1, 0))] },
                [1, 1], [1, 1], .rowCountMismatch
            ),
            (
                "moved section keeps its count", t.stage { $0.sectionMoves = [SectionMove(from: 0, to: 1)] }, [1, 2],
                [1, 2], .rowCountMismatch
            ),
            (
                "header of a missing section",
                t.stage { $0.supplementaryUpdates = [SupplementaryUpdate(section: 1, element: .header, value: nil)] },
                [0], [0], .sectionOutOfRange
            ),
        ]
    }

    @Test(arguments: 0..<cases().count)
    func trapIsNamed(index: Int) {
        let (name, stage, before, after, rule) = Self.cases()[index]
        do {
            try BatchValidator.validate(stage, before: before, after: after)
            Issue.record("\(name): accepted")
        } catch {
            #expect(error.rule == rule, "\(name): \(error)")
        }
    }

    @Test func validCombinationsPass() throws {
        // Deletes at old positions, inserts at new ones, a cross-section move, a section
        // move with its rows: all in one batch, as UIKit allows.
        var s = ChangesetStage()
        s.rowDeletes = [p(0, 0)]
        s.rowInserts = [RowAtPath(path: p(0, 0), row: row("x")), RowAtPath(path: p(0, 1), row: row("y"))]
        s.rowMoves = [RowMove(from: p(1, 0), to: p(0, 2))]
        try BatchValidator.validate(s, before: [2, 1], after: [4, 0])
        var m = ChangesetStage()
        m.sectionMoves = [SectionMove(from: 0, to: 1)]
        try BatchValidator.validate(m, before: [1, 2], after: [2, 1])
    }

    @Test func applyRefusesAChangesetThatDoesNotFitAndChangesNothing() throws {
        let d = try Director(sections: [Section(id: "s", rows: [row("a"), row("b")])])
        var copy = d
        var bad = ChangesetStage()
        bad.rowDeletes = [p(0, 0)]
        bad.rowInserts = [RowAtPath(path: p(0, 0), row: row("b"))]  // "b" already exists
        #expect(throws: ChangesetApplyError.self) { try Changeset(stages: [bad]).apply(to: &copy) }
        #expect(copy == d && copy.digest == d.digest)
        var reload = ChangesetStage()
        reload.rowUpdates = [RowAtPath(path: p(0, 0), row: row("zzz"))]
        do {
            try Changeset(stages: [reload]).apply(to: &copy)
            Issue.record("accepted a reload that changes the ID")
        } catch {
            #expect(error.violation.rule == .reloadChangesID)
        }
        #expect(copy == d)
    }
}
