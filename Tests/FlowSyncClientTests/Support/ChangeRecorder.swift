import FlowSyncCore
import FlowSyncTestSupport

@testable import FlowSyncClient

/// The SDK's contract with a UI, checked change by change: every delivered changeset
/// plays on a table (each stage valid under UIKit's rules) from the previous change's
/// state to this change's snapshot, so replaying them all from an empty list gives the
/// replica.
struct ChangeRecorder: Sendable {
    /// The list as a table view that applied every change so far would show it.
    private(set) var table = Director(limits: ListReplica.limits)
    private(set) var causes: [ListChange.Cause] = []

    /// - Returns: A description of the first broken rule, or `nil`.
    mutating func record(
        cause: ListChange.Cause, changeset: Changeset, view: Director, version: ListVersion?
    ) -> String? {
        if let problem = UIKitBatchSimulator.check(changeset, from: table, to: view) {
            return "change \(causes.count) (\(cause)): \(problem)"
        }
        table = view
        causes.append(cause)
        return nil
    }

    mutating func record(_ change: ListChange) -> String? {
        // Each change must start exactly where the last one ended (no gap, no repeat).
        if change.previous.director != table {
            return
                "change \(causes.count) (\(change.cause)) starts at\n\(UIKitBatchSimulator.dump(change.previous.director))\nbut the table shows\n\(UIKitBatchSimulator.dump(table))"
        }
        return record(
            cause: change.cause, changeset: change.changeset, view: change.snapshot.director,
            version: change.snapshot.version)
    }
}
