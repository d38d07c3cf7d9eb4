import FlowSyncCore

/// Plays a changeset the way a `UITableView` would: one `performBatchUpdates` per
/// stage, each checked with ``BatchValidator`` against the data source's counts
/// before and after the stage, and the data source then compared with the target.
public enum UIKitBatchSimulator {
    /// Applies `changeset` to `old` stage by stage, validating each, and checks the
    /// result equals `new` (content and digest).
    /// - Returns: `nil` when everything holds, else a description of the first failure.
    public static func check(_ changeset: Changeset, from old: Director, to new: Director) -> String? {
        var state = old
        for (index, stage) in changeset.stages.enumerated() {
            let before = state.rowCounts
            do {
                try stage.apply(to: &state)
            } catch {
                return "stage \(index) does not apply: \(error)\nstage: \(stage)"
            }
            do {
                try BatchValidator.validate(stage, before: before, after: state.rowCounts)
            } catch {
                return "stage \(index) breaks a UIKit rule: \(error)\nstage: \(stage)"
            }
        }
        if state != new {
            return "applying the changeset gives\n\(dump(state))\nexpected\n\(dump(new))\nchangeset: \(changeset)"
        }
        if state.digest != new.digest {
            return "digest \(state.digest) after apply, expected \(new.digest)"
        }
        return nil
    }

    /// Plays one `performBatchUpdates` call as UIKit does when the app drives the view
    /// itself: the view shows `displayed` (what it asked its data source last) and the
    /// batch is `stage`; right after the batch's updates block, the data source reports
    /// `dataSource`. UIKit checks the stage against the counts before and the data
    /// source's counts after (``BatchValidator``); the view then shows the stage
    /// applied to `displayed`, which must be what the data source holds.
    ///
    /// `stage` carries the rows the view would ask the data source for (inserted and
    /// reloaded cells, inserted sections, headers).
    /// - Returns: `nil` when the batch holds, else what UIKit would raise.
    public static func performBatch(_ stage: ChangesetStage, displayed: inout Director, dataSource: Director) -> String?
    {
        let before = displayed.rowCounts
        do {
            try BatchValidator.validate(stage, before: before, after: dataSource.rowCounts)
        } catch {
            return
                "Invalid update: \(error) (view had \(before), data source reports \(dataSource.rowCounts))\nstage: \(stage)"
        }
        do {
            try stage.apply(to: &displayed)
        } catch {
            return "the batch does not apply to what the view shows: \(error)\nstage: \(stage)"
        }
        if displayed != dataSource {
            return "after the batch the view shows\n\(dump(displayed))\nbut the data source holds\n\(dump(dataSource))"
        }
        return nil
    }

    /// A compact rendering of a director for failure messages (at most 20 sections of
    /// 20 rows, so a failure on a large list stays readable).
    public static func dump(_ d: Director) -> String {
        d.sections.prefix(20).map { s in
            let header = s.header.map { "h=" + String(decoding: $0, as: UTF8.self) } ?? ""
            let footer = s.footer.map { "f=" + String(decoding: $0, as: UTF8.self) } ?? ""
            let rows =
                s.rows.prefix(20).map { "\($0.id)(\(String(decoding: $0.payload, as: UTF8.self)))" }.joined(
                    separator: " ")
                + (s.rows.count > 20 ? " … (\(s.rows.count) rows)" : "")
            return "  \(s.id) \(header) \(footer): \(rows)"
        }.joined(separator: "\n")
    }
}
