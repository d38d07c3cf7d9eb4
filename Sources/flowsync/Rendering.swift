import FlowSyncClient
import FlowSyncCore
import Foundation

/// How the CLI shows lists and changes: a readable text form for people, and one JSON
/// object per line for scripts (`--json`).
enum Rendering {
    // MARK: Values

    /// A payload as JSON when it is JSON text, else as a string (UTF-8) or base64.
    static func jsonValue(_ bytes: [UInt8]) -> Any {
        if let value = try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed]) {
            return value
        }
        if let text = String(validating: bytes, as: UTF8.self) { return text }
        return ["base64": Data(bytes).base64EncodedString()]
    }

    /// A payload for a person: the text itself (JSON as written), or its size.
    static func text(_ bytes: [UInt8]?) -> String {
        guard let bytes else { return "-" }
        if let text = String(validating: bytes, as: UTF8.self) { return text }
        return "<\(bytes.count) bytes>"
    }

    static func row(_ row: Row) -> [String: Any] {
        ["id": row.id, "kind": row.kind, "payload": jsonValue(row.payload)]
    }

    static func section(_ section: Section) -> [String: Any] {
        var object: [String: Any] = ["id": section.id, "rows": section.rows.map(row)]
        object["header"] = section.header.map(jsonValue) ?? NSNull()
        object["footer"] = section.footer.map(jsonValue) ?? NSNull()
        return object
    }

    static func line(_ object: Any) -> String {
        let data =
            (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]))
            ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    static func path(_ p: RowPath) -> [Int] { [p.section, p.row] }

    // MARK: Snapshots

    static func json(_ snapshot: ListSnapshot) -> [String: Any] {
        [
            "list": snapshot.name, "version": snapshot.version.map(version) ?? NSNull(),
            "sections": snapshot.director.sections.map(section),
        ]
    }

    static func version(_ v: ListVersion) -> [String: Any] { ["epoch": "\(v.epoch)", "version": v.version] }

    /// A table: one block per section, one line per row.
    static func table(_ snapshot: ListSnapshot) -> String {
        var out =
            "\(snapshot.name) @ \(snapshot.version.map { "\($0)" } ?? "?"): \(snapshot.numberOfSections) sections, \(snapshot.numberOfModels) rows\n"
        for (s, section) in snapshot.director.sections.enumerated() {
            out += "[\(s)] section \(section.id)"
            if let header = section.header { out += "  header: \(text(header))" }
            if let footer = section.footer { out += "  footer: \(text(footer))" }
            out += "\n"
            for (r, row) in section.rows.enumerated() {
                out += "  [\(s),\(r)] \(row.id)\(row.kind.isEmpty ? "" : " (\(row.kind))")  \(text(row.payload))\n"
            }
        }
        return out
    }

    // MARK: Changes

    static func json(_ change: ListChange) -> [String: Any] {
        var object: [String: Any] = [
            "list": change.listName, "cause": "\(change.cause)",
            "version": change.snapshot.version.map(version) ?? NSNull(),
        ]
        object["stages"] = change.changeset.stages.map { stage -> [String: Any] in
            var s: [String: Any] = [:]
            if !stage.sectionDeletes.isEmpty { s["sectionDeletes"] = stage.sectionDeletes }
            if !stage.sectionInserts.isEmpty {
                s["sectionInserts"] = stage.sectionInserts.map { ["index": $0.index, "section": section($0.section)] }
            }
            if !stage.sectionMoves.isEmpty {
                s["sectionMoves"] = stage.sectionMoves.map { ["from": $0.from, "to": $0.to] }
            }
            if !stage.supplementaryUpdates.isEmpty {
                s["supplementaryUpdates"] = stage.supplementaryUpdates.map {
                    [
                        "section": $0.section, "element": $0.element == .header ? "header" : "footer",
                        "value": $0.value.map(jsonValue) ?? NSNull(),
                    ]
                }
            }
            if !stage.rowDeletes.isEmpty { s["rowDeletes"] = stage.rowDeletes.map(path) }
            if !stage.rowInserts.isEmpty {
                s["rowInserts"] = stage.rowInserts.map { ["path": path($0.path), "row": row($0.row)] }
            }
            if !stage.rowMoves.isEmpty {
                s["rowMoves"] = stage.rowMoves.map { ["from": path($0.from), "to": path($0.to)] }
            }
            if !stage.rowUpdates.isEmpty {
                s["rowUpdates"] = stage.rowUpdates.map { ["path": path($0.path), "row": row($0.row)] }
            }
            return s
        }
        return object
    }

    /// The change as a table view applies it: one `performBatchUpdates` per stage.
    static func text(_ change: ListChange) -> String {
        let version = change.snapshot.version.map { "\($0)" } ?? "?"
        var out =
            "\(change.listName) @ \(version) (\(change.cause)): \(change.changeset.stages.count) stage(s), \(change.snapshot.numberOfModels) rows\n"
        let after = change.snapshot.director
        for (k, stage) in change.changeset.stages.enumerated() {
            out += "  stage \(k + 1):\n"
            for s in stage.sectionDeletes { out += "    delete section \(s)\n" }
            for insert in stage.sectionInserts {
                out += "    insert section \(insert.index) \(insert.section.id) (\(insert.section.rows.count) rows)\n"
            }
            for move in stage.sectionMoves { out += "    move section \(move.from) → \(move.to)\n" }
            for update in stage.supplementaryUpdates {
                out +=
                    "    \(update.element == .header ? "header" : "footer") of section \(update.section): \(text(update.value))\n"
            }
            for p in stage.rowDeletes { out += "    delete row [\(p.section),\(p.row)]\n" }
            for insert in stage.rowInserts {
                out +=
                    "    insert row [\(insert.path.section),\(insert.path.row)] \(insert.row.id)  \(text(insert.row.payload))\n"
            }
            for move in stage.rowMoves {
                // With one stage, the final state is the stage's: name the moved row.
                var id = ""
                if change.changeset.stages.count == 1, move.to.section < after.sections.count,
                    move.to.row < after.sections[move.to.section].rows.count
                {
                    id = " " + after[move.to].id
                }
                out +=
                    "    move row [\(move.from.section),\(move.from.row)] → [\(move.to.section),\(move.to.row)]\(id)\n"
            }
            for update in stage.rowUpdates {
                out +=
                    "    update row [\(update.path.section),\(update.path.row)] \(update.row.id)  \(text(update.row.payload))\n"
            }
        }
        return out
    }
}
