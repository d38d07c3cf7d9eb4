import FlowSyncCore
import FlowSyncProtocol

/// The daemon's Snapshot and Diff as JSON: the one shape shared by the SSE stream, the
/// WebSocket and webhook bodies (docs/GATEWAY.md, "Events").
///
/// A changeset keeps the protocol's staged UIKit semantics (PROTOCOL.md, "Changesets"):
/// `stages` in order, each with only its non-empty lists; row paths are `[section, row]`.
public enum ChangeJSON {
    /// `{"list", "position", "digest", "reason", "sections"}`; `type` is written first
    /// when given (WebSocket messages carry it, SSE puts it in the `event:` line).
    public static func snapshot(_ snapshot: Snapshot, type: String? = nil) -> [UInt8] {
        var w = JSONWriter(reservingCapacity: 1024)
        w.beginObject()
        if let type { w.member("type", type) }
        w.member("list", snapshot.listName)
        w.key("position")
        ModelJSON.write(snapshot.position, into: &w)
        w.member("digest", ModelJSON.digestText(snapshot.digest))
        w.member("reason", reasonName(snapshot.reason))
        w.key("sections")
        ModelJSON.write(snapshot.sections, into: &w)
        w.endObject()
        return w.bytes
    }

    /// `{"list", "epoch", "fromVersion", "toVersion", "digest", "changeset", "mutations"}`.
    public static func diff(_ diff: Diff, type: String? = nil) -> [UInt8] {
        var w = JSONWriter(reservingCapacity: 512)
        w.beginObject()
        if let type { w.member("type", type) }
        w.member("list", diff.listName)
        w.member("epoch", String(diff.epoch))  // a u64: a string, as in ModelJSON.write(_: ListVersion)
        w.member("fromVersion", diff.fromVersion)
        w.member("toVersion", diff.toVersion)
        w.member("digest", ModelJSON.digestText(diff.digest))
        w.key("changeset")
        write(diff.changeset, into: &w)
        w.key("mutations")
        w.beginArray()
        for id in diff.mutations {
            w.beginObject()
            w.member("clientID", id.clientID)
            w.member("seq", id.seq)
            w.endObject()
        }
        w.endArray()
        w.endObject()
        return w.bytes
    }

    /// The protocol's name of a snapshot reason.
    public static func reasonName(_ reason: Snapshot.Reason) -> String {
        switch reason {
        case .freshSubscribe: return "freshSubscribe"
        case .resumeTooOld: return "resumeTooOld"
        case .epochChanged: return "epochChanged"
        case .resyncRequested: return "resyncRequested"
        }
    }

    public static func write(_ changeset: Changeset, into w: inout JSONWriter) {
        w.beginObject()
        w.key("stages")
        w.beginArray()
        for stage in changeset.stages { write(stage, into: &w) }
        w.endArray()
        w.endObject()
    }

    static func write(_ stage: ChangesetStage, into w: inout JSONWriter) {
        w.beginObject()
        if !stage.sectionDeletes.isEmpty {
            w.key("sectionDeletes")
            w.beginArray()
            for index in stage.sectionDeletes { w.int(index) }
            w.endArray()
        }
        if !stage.sectionInserts.isEmpty {
            w.key("sectionInserts")
            w.beginArray()
            for insert in stage.sectionInserts {
                w.beginObject()
                w.member("index", insert.index)
                w.key("section")
                ModelJSON.write(insert.section, into: &w)
                w.endObject()
            }
            w.endArray()
        }
        if !stage.sectionMoves.isEmpty {
            w.key("sectionMoves")
            w.beginArray()
            for move in stage.sectionMoves {
                w.beginObject()
                w.member("from", move.from)
                w.member("to", move.to)
                w.endObject()
            }
            w.endArray()
        }
        if !stage.supplementaryUpdates.isEmpty {
            w.key("supplementaryUpdates")
            w.beginArray()
            for update in stage.supplementaryUpdates {
                w.beginObject()
                w.member("section", update.section)
                w.member("element", update.element == .header ? "header" : "footer")
                if let value = update.value { ModelJSON.writeBytes(value, named: "value", into: &w) }
                w.endObject()
            }
            w.endArray()
        }
        if !stage.rowDeletes.isEmpty {
            w.key("rowDeletes")
            w.beginArray()
            for path in stage.rowDeletes { write(path, into: &w) }
            w.endArray()
        }
        if !stage.rowInserts.isEmpty {
            w.key("rowInserts")
            writeRowsAtPaths(stage.rowInserts, into: &w)
        }
        if !stage.rowMoves.isEmpty {
            w.key("rowMoves")
            w.beginArray()
            for move in stage.rowMoves {
                w.beginObject()
                w.key("from")
                write(move.from, into: &w)
                w.key("to")
                write(move.to, into: &w)
                w.endObject()
            }
            w.endArray()
        }
        if !stage.rowUpdates.isEmpty {
            w.key("rowUpdates")
            writeRowsAtPaths(stage.rowUpdates, into: &w)
        }
        w.endObject()
    }

    static func writeRowsAtPaths(_ items: [RowAtPath], into w: inout JSONWriter) {
        w.beginArray()
        for item in items {
            w.beginObject()
            w.key("path")
            write(item.path, into: &w)
            w.key("row")
            ModelJSON.write(item.row, into: &w)
            w.endObject()
        }
        w.endArray()
    }

    static func write(_ path: RowPath, into w: inout JSONWriter) {
        w.beginArray()
        w.int(path.section)
        w.int(path.row)
        w.endArray()
    }
}
