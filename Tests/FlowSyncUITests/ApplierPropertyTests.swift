import FlowSyncClient
import FlowSyncCore
import FlowSyncTestSupport
import FlowSyncUI
import Testing

/// The applier against the UIKit batch simulator, for every change the core's property
/// tests generate (incremental changesets of random groups, batches of groups, and
/// diffs between unrelated states), several stages included: zero "Invalid update".
/// And the old documented way (final snapshot as the data source for every stage)
/// failing the same simulator, so the fix is shown to matter.
@Suite(.timeLimit(.minutes(2))) struct ApplierPropertyTests {
    static let seeds: [UInt64] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
    static let casesPerSeed = 1_000

    /// What one seeded run found, checked after it returns (off the pool).
    struct Summary: Sendable {
        var failures: [String] = []
        var changes = 0
        var multiStage = 0
        var oldWayFailures = 0
        var diffableFailures: [String] = []
    }

    static func listChange(_ old: Director, _ changeset: Changeset, _ new: Director) -> ListChange {
        ListChange(
            cause: .remote, previous: ListSnapshot(name: "l", director: old), changeset: changeset,
            snapshot: ListSnapshot(name: "l", director: new))
    }

    /// Plays `change` through a fresh applier on a view showing its previous state.
    /// - Returns: The first problem, or `nil`.
    static func play(_ change: ListChange) -> String? {
        let view = SimulatedListView(displaying: change.previous.director)
        let applier = ListUpdateApplier(target: view, snapshot: change.previous, maximumAnimatedChanges: .max)
        view.dataSource = { applier.snapshot.director }
        let outcome = applier.apply(change)
        return verify(outcome, view, applier, change)
    }

    static func verify(
        _ outcome: ListUpdateApplier<SimulatedListView>.Outcome, _ view: SimulatedListView,
        _ applier: ListUpdateApplier<SimulatedListView>, _ change: ListChange
    ) -> String? {
        if let problem = view.problems.first { return problem }
        switch outcome {
        case .reloaded(let reason): return "reloaded (\(reason)) instead of animating"
        case .unchanged where !change.changeset.isEmpty: return "a non-empty change reported unchanged"
        case .animated(let batches) where batches != view.batches:
            return "\(batches) batches reported, \(view.batches) ran"
        default: break
        }
        if view.reloads != 0 { return "reloadData called" }
        if view.displayed != change.snapshot.director {
            return "the view ends at\n\(UIKitBatchSimulator.dump(view.displayed))"
        }
        if applier.snapshot.director != change.snapshot.director { return "the applier's snapshot is not the change's" }
        return nil
    }

    /// The old instruction: data source = the final snapshot, then one batch per stage.
    /// - Returns: The problems UIKit would raise.
    static func playTheOldWay(_ change: ListChange) -> [String] {
        let view = SimulatedListView(displaying: change.previous.director)
        let final = change.snapshot.director
        view.dataSource = { final }
        for stage in change.changeset.stages {
            view.performBatchUpdates {
                view.issueChanges(of: stage)
                view.refreshSupplementaries(SupplementaryRefresh.grouping(stage.supplementaryUpdates))
            }
        }
        return view.problems
    }

    /// The diffable content against a brute-force oracle: every row and section present
    /// before and after under the same ID with other content.
    static func checkDiffable(_ change: ListChange) -> String? {
        let content = DiffableListContent(change: change)
        let old = change.previous.director, new = change.snapshot.director
        if content.sections.map(\.id) != new.sections.map(\.id)
            || content.sections.map(\.itemIDs) != new.sections.map { $0.rows.map(\.id) }
        {
            return "diffable sections differ from the snapshot"
        }
        var items = Set<String>(), sections = Set<String>()
        for section in new.sections {
            if let before = old.section(id: section.id),
                before.header != section.header || before.footer != section.footer
            {
                sections.insert(section.id)
            }
            for row in section.rows {
                if let path = old.rowPath(id: row.id), !old[path].hasSameContent(as: row) { items.insert(row.id) }
            }
        }
        if Set(content.reconfiguredItems) != items || content.reconfiguredItems.count != items.count {
            return "reconfigured items \(content.reconfiguredItems.sorted()), expected \(items.sorted())"
        }
        if Set(content.reloadedSections) != sections || content.reloadedSections.count != sections.count {
            return "reloaded sections \(content.reloadedSections.sorted()), expected \(sections.sorted())"
        }
        return nil
    }

    static func examine(_ change: ListChange, _ context: @autoclosure () -> String, into summary: inout Summary) {
        summary.changes += 1
        if change.changeset.stages.count > 1 {
            summary.multiStage += 1
            if !playTheOldWay(change).isEmpty { summary.oldWayFailures += 1 }
        }
        if summary.failures.count < 3, let problem = play(change) {
            summary.failures.append("\(problem)\n\(context())\nchangeset: \(change.changeset)")
        }
        if summary.diffableFailures.count < 3, let problem = checkDiffable(change) {
            summary.diffableFailures.append("\(problem)\n\(context())")
        }
    }

    @Test(arguments: seeds)
    func everyGeneratedChangeAppliesWithoutAnInvalidUpdate(seed: UInt64) async throws {
        let summary = try await offThePool { () -> Summary in
            var generator = DirectorGenerator(seed: seed)
            var summary = Summary()
            for caseIndex in 0..<Self.casesPerSeed {
                let old = generator.director()
                let group = generator.group(for: old)
                var new = old
                let outcome = new.applyBatch([group])
                guard (try? outcome.results[0].get()) != nil else { continue }
                let context = "seed \(seed) case \(caseIndex)\nold:\n\(UIKitBatchSimulator.dump(old))\nops: \(group)"
                Self.examine(Self.listChange(old, outcome.changeset, new), "incremental, " + context, into: &summary)
                Self.examine(
                    Self.listChange(old, Changeset.diff(from: old, to: new), new), "diff, " + context, into: &summary)
            }
            return summary
        }
        #expect(summary.failures.isEmpty, "seed \(seed): \(summary.failures.joined(separator: "\n\n"))")
        #expect(summary.diffableFailures.isEmpty, "seed \(seed): \(summary.diffableFailures.joined(separator: "\n\n"))")
        // The generator must keep producing changes of several stages, or this proves little.
        #expect(
            summary.multiStage > Self.casesPerSeed / 10,
            "seed \(seed): only \(summary.multiStage) multi-stage changes of \(summary.changes)")
    }

    /// One applier and one view through a run of consecutive changes (batches of
    /// groups, some refused), as an observer sees them.
    @Test(arguments: [11, 12, 13] as [UInt64])
    func consecutiveChangesOnOneView(seed: UInt64) async throws {
        let failures = try await offThePool { () -> [String] in
            var generator = DirectorGenerator(seed: seed)
            var failures: [String] = []
            for run in 0..<50 where failures.isEmpty {
                var current = generator.director()
                let view = SimulatedListView(displaying: current)
                let applier = ListUpdateApplier(
                    target: view, snapshot: ListSnapshot(name: "l", director: current),
                    maximumAnimatedChanges: .max)
                view.dataSource = { applier.snapshot.director }
                for step in 0..<20 {
                    var groups: [[Operation]] = []
                    var scratch = current
                    for _ in 0..<generator.random.int(1...4) {
                        let group = generator.group(for: scratch, maxOps: 4, validOnly: false)
                        groups.append(group)
                        _ = try? scratch.apply(group)
                    }
                    var next = current
                    let outcome = next.applyBatch(groups)
                    let change = Self.listChange(current, outcome.changeset, next)
                    let batchesBefore = view.batches
                    let result = applier.apply(change)
                    if let problem = view.problems.first {
                        failures.append("seed \(seed) run \(run) step \(step): \(problem)\ngroups: \(groups)")
                        break
                    }
                    if case .reloaded(let reason) = result {
                        failures.append("seed \(seed) run \(run) step \(step): reloaded (\(reason))")
                        break
                    }
                    if view.displayed != next || applier.snapshot.director != next {
                        failures.append(
                            "seed \(seed) run \(run) step \(step): view or applier not at the change's end (\(view.batches - batchesBefore) batches)"
                        )
                        break
                    }
                    current = next
                }
            }
            return failures
        }
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n\n"))")
    }

    /// Whole-list replacements (catch-up, resync): diffs between unrelated states.
    @Test func diffsBetweenUnrelatedStates() async throws {
        let summary = try await offThePool { () -> Summary in
            var generator = DirectorGenerator(seed: 99)
            var summary = Summary()
            for caseIndex in 0..<1_000 {
                let (a, b) = generator.unrelatedPair()
                Self.examine(
                    Self.listChange(a, Changeset.diff(from: a, to: b), b), "seed 99 case \(caseIndex)", into: &summary)
            }
            return summary
        }
        #expect(summary.failures.isEmpty, "\(summary.failures.joined(separator: "\n\n"))")
        #expect(summary.diffableFailures.isEmpty, "\(summary.diffableFailures.joined(separator: "\n\n"))")
    }

    /// The old instruction fails on generated multi-stage changes (most of them), and on
    /// a small fixed one; the applier passes both.
    @Test func theOldDocumentedWayRaisesAnInvalidUpdate() async throws {
        let old = try Director(sections: [Section(id: "s", rows: [Row(id: "a"), Row(id: "b"), Row(id: "c")])])
        let new = try Director(sections: [Section(id: "s", rows: [Row(id: "c"), Row(id: "x"), Row(id: "y")])])
        let change = Self.listChange(old, Changeset.diff(from: old, to: new), new)
        #expect(change.changeset.stages.count >= 2, "\(change.changeset)")
        let problems = Self.playTheOldWay(change)
        #expect(problems.first?.contains("Invalid update") == true, "\(problems)")
        #expect(Self.play(change) == nil)

        let summary = try await offThePool { () -> Summary in
            var generator = DirectorGenerator(seed: 7)
            var summary = Summary()
            for caseIndex in 0..<500 {
                let old = generator.director()
                let group = generator.group(for: old)
                var new = old
                let outcome = new.applyBatch([group])
                guard (try? outcome.results[0].get()) != nil else { continue }
                Self.examine(Self.listChange(old, outcome.changeset, new), "seed 7 case \(caseIndex)", into: &summary)
            }
            return summary
        }
        #expect(summary.failures.isEmpty, "\(summary.failures.joined(separator: "\n\n"))")
        #expect(summary.multiStage > 0)
        #expect(
            summary.oldWayFailures > summary.multiStage / 2,
            "seed 7: the old way failed \(summary.oldWayFailures) of \(summary.multiStage) multi-stage changes")
    }
}
