import FlowSyncCore
import Foundation

/// The JSON form of operations for `flowsync apply` — sections and rows by ID, as a
/// writer that does not track indices should (docs/PROTOCOL.md, "Base").
///
/// ```json
/// [
///   {"op": "insertSections", "at": 0, "sections": [{"id": "inbox", "header": {"title": "Inbox"}}]},
///   {"op": "insertRows", "section": "inbox", "rows": [{"id": "m1", "kind": "mail", "payload": {"subject": "Hi"}}]},
///   {"op": "moveRow", "id": "m1", "toSection": "archive", "at": 0},
///   {"op": "replaceRow", "id": "m1", "row": {"id": "m1", "kind": "mail", "payload": {"subject": "Re: Hi"}}},
///   {"op": "removeRows", "ids": ["m1"]}
/// ]
/// ```
///
/// Every operation: `insertSections` (`at`, default the end), `setSections`,
/// `removeSections` (`ids`), `removeAllSections`, `moveSection` (`id`, `to`),
/// `swapSections` (`a`, `b`), `setHeader`/`setFooter` (`section`, `value`, null removes),
/// `insertRows` (`section`, `at` default the end, `rows`), `setRows`, `replaceRow` (`id`,
/// `row`), `removeRows` (`ids`), `removeAllRows` (`section`), `moveRow` (`id`,
/// `toSection`, `at` default the end), `swapRows` (`a`, `b`). A row is `id`, `kind`
/// (default `json`) and `payload` (any JSON value, stored as its JSON text) or `text`.
enum OperationJSON {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Parses a JSON array of operations (or one operation object).
    static func parse(_ data: Data, against director: Director) throws -> [FlowSyncCore.Operation] {
        let value: Any
        do {
            value = try JSONSerialization.jsonObject(with: data)
        } catch {
            throw Failure(description: "not JSON: \(error.localizedDescription)")
        }
        let list: [Any] = (value as? [Any]) ?? [value]
        var scratch = director
        var ops: [FlowSyncCore.Operation] = []
        for (index, item) in list.enumerated() {
            guard let object = item as? [String: Any] else {
                throw Failure(description: "operation \(index) is not an object")
            }
            let op = try operation(object, index: index, in: scratch)
            // Defaults such as "the end" depend on the state the earlier operations left.
            _ = try? scratch.apply([op])
            ops.append(op)
        }
        return ops
    }

    static func operation(_ o: [String: Any], index: Int, in d: Director) throws -> FlowSyncCore.Operation {
        func string(_ key: String) throws -> String {
            guard let value = o[key] as? String else {
                throw Failure(description: "operation \(index): \"\(key)\" (a string) is missing")
            }
            return value
        }
        func strings(_ key: String) throws -> [String] {
            guard let value = o[key] as? [String] else {
                throw Failure(description: "operation \(index): \"\(key)\" (an array of strings) is missing")
            }
            return value
        }
        func int(_ key: String, default fallback: Int? = nil) throws -> Int {
            if let value = o[key] as? Int { return value }
            if let fallback, o[key] == nil { return fallback }
            throw Failure(description: "operation \(index): \"\(key)\" (an integer) is missing")
        }
        func rows(_ key: String) throws -> [Row] {
            guard let value = o[key] as? [[String: Any]] else {
                throw Failure(description: "operation \(index): \"\(key)\" (an array of rows) is missing")
            }
            return try value.map { try row($0, index: index) }
        }
        func sections(_ key: String) throws -> [Section] {
            guard let value = o[key] as? [[String: Any]] else {
                throw Failure(description: "operation \(index): \"\(key)\" (an array of sections) is missing")
            }
            return try value.map { s in
                guard let id = s["id"] as? String else {
                    throw Failure(description: "operation \(index): a section without \"id\"")
                }
                let rows = try (s["rows"] as? [[String: Any]] ?? []).map { try row($0, index: index) }
                return Section(id: id, header: try bytes(s["header"]), footer: try bytes(s["footer"]), rows: rows)
            }
        }
        func sectionCount(_ id: String) -> Int { d.section(id: id)?.rows.count ?? 0 }

        guard let name = o["op"] as? String else { throw Failure(description: "operation \(index): \"op\" is missing") }
        switch name {
        case "insertSections":
            return .insertSections(try sections("sections"), at: try int("at", default: d.sections.count))
        case "setSections": return .setSections(try sections("sections"))
        case "removeSections": return .removeSections(try strings("ids").map { .id($0) })
        case "removeAllSections": return .removeAllSections
        case "moveSection": return .moveSection(.id(try string("id")), to: try int("to"))
        case "swapSections": return .swapSections(.id(try string("a")), .id(try string("b")))
        case "setHeader": return .setHeader(.id(try string("section")), try bytes(o["value"]))
        case "setFooter": return .setFooter(.id(try string("section")), try bytes(o["value"]))
        case "insertRows":
            let section = try string("section")
            return .insertRows(try rows("rows"), in: .id(section), at: try int("at", default: sectionCount(section)))
        case "setRows": return .setRows(try rows("rows"), in: .id(try string("section")))
        case "replaceRow":
            guard let r = o["row"] as? [String: Any] else {
                throw Failure(description: "operation \(index): \"row\" is missing")
            }
            return .replaceRow(.id(try string("id")), with: try row(r, index: index))
        case "removeRows": return .removeRows(try strings("ids").map { .id($0) })
        case "removeAllRows": return .removeAllRows(in: .id(try string("section")))
        case "moveRow":
            let id = try string("id"), to = try string("toSection")
            var end = sectionCount(to)
            if let path = d.rowPath(id: id), d.sections[path.section].id == to { end -= 1 }
            return .moveRow(.id(id), toSection: .id(to), at: try int("at", default: end))
        case "swapRows": return .swapRows(.id(try string("a")), .id(try string("b")))
        default: throw Failure(description: "operation \(index): unknown op \"\(name)\"")
        }
    }

    static func row(_ o: [String: Any], index: Int) throws -> Row {
        guard let id = o["id"] as? String else {
            throw Failure(description: "operation \(index): a row without \"id\"")
        }
        let kind = o["kind"] as? String ?? "json"
        if let text = o["text"] as? String { return Row(id: id, kind: kind, payload: Array(text.utf8)) }
        return Row(id: id, kind: kind, payload: try bytes(o["payload"]) ?? [])
    }

    /// A JSON value as its JSON text (`nil` for absent or null).
    static func bytes(_ value: Any?) throws -> [UInt8]? {
        guard let value, !(value is NSNull) else { return nil }
        guard
            let data = try? JSONSerialization.data(
                withJSONObject: value, options: [.fragmentsAllowed, .sortedKeys, .withoutEscapingSlashes])
        else {
            throw Failure(description: "a payload is not valid JSON")
        }
        return Array(data)
    }
}
