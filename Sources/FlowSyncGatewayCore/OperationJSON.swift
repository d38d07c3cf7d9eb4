import FlowSyncCore
import Foundation

/// The protocol's operations (PROTOCOL.md, "Operations") as JSON: `{"op": NAME, …}` with
/// the wire's field names. The HTTP API's mutation body and the WebSocket's `mutate`
/// message both carry an array of these.
///
/// References: a section is `"s1"` (its ID) or `{"index": 0}`; a row is `"r1"` or
/// `{"index": 0, "section": <section ref>}`. IDs are the durable way to refer to things:
/// a writer that does not mirror the list (a backend) cannot know indices.
public enum OperationJSON {
    /// Every operation name, in the protocol's tag order (the OpenAPI spec's enum).
    public static let names = [
        "setSections", "insertSections", "removeSections", "removeAllSections", "moveSection", "swapSections",
        "setHeader", "setFooter", "setRows", "insertRows", "replaceRow", "removeRows", "removeAllRows", "moveRow",
        "swapRows",
    ]

    public static func operations(from value: Any, at pointer: String) throws(RequestError) -> [FlowSyncCore.Operation]
    {
        let array = try JSONInput.array(value, at: pointer)
        var operations: [FlowSyncCore.Operation] = []
        operations.reserveCapacity(array.count)
        for (i, element) in array.enumerated() {
            operations.append(try operation(from: element, at: "\(pointer)/\(i)"))
        }
        return operations
    }

    public static func operation(from value: Any, at p: String) throws(RequestError) -> FlowSyncCore.Operation {
        let o = try JSONInput.object(value, at: p)
        let name = try JSONInput.string(o["op"], at: p + "/op")
        switch name {
        case "setSections":
            return .setSections(try ModelJSON.sections(from: o["sections"] as Any, at: p + "/sections"))
        case "insertSections":
            return .insertSections(
                try ModelJSON.sections(from: o["sections"] as Any, at: p + "/sections"),
                at: try JSONInput.index(o["at"], at: p + "/at"))
        case "removeSections":
            let refs = try JSONInput.array(o["sections"], at: p + "/sections")
            var sections: [SectionRef] = []
            for (i, ref) in refs.enumerated() { sections.append(try sectionRef(ref, at: "\(p)/sections/\(i)")) }
            return .removeSections(sections)
        case "removeAllSections":
            return .removeAllSections
        case "moveSection":
            return .moveSection(
                try sectionRef(o["section"], at: p + "/section"), to: try JSONInput.index(o["to"], at: p + "/to"))
        case "swapSections":
            return .swapSections(try sectionRef(o["a"], at: p + "/a"), try sectionRef(o["b"], at: p + "/b"))
        case "setHeader":
            return .setHeader(
                try sectionRef(o["section"], at: p + "/section"), try ModelJSON.bytes(in: o, named: "value", at: p))
        case "setFooter":
            return .setFooter(
                try sectionRef(o["section"], at: p + "/section"), try ModelJSON.bytes(in: o, named: "value", at: p))
        case "setRows":
            return .setRows(
                try ModelJSON.rows(from: o["rows"] as Any, at: p + "/rows"),
                in: try sectionRef(o["section"], at: p + "/section"))
        case "insertRows":
            return .insertRows(
                try ModelJSON.rows(from: o["rows"] as Any, at: p + "/rows"),
                in: try sectionRef(o["section"], at: p + "/section"),
                at: try JSONInput.index(o["at"], at: p + "/at"))
        case "replaceRow":
            return .replaceRow(
                try rowRef(o["row"], at: p + "/row"), with: try ModelJSON.row(from: o["with"] as Any, at: p + "/with"))
        case "removeRows":
            let refs = try JSONInput.array(o["rows"], at: p + "/rows")
            var rows: [RowRef] = []
            for (i, ref) in refs.enumerated() { rows.append(try rowRef(ref, at: "\(p)/rows/\(i)")) }
            return .removeRows(rows)
        case "removeAllRows":
            return .removeAllRows(in: try sectionRef(o["section"], at: p + "/section"))
        case "moveRow":
            return .moveRow(
                try rowRef(o["row"], at: p + "/row"), toSection: try sectionRef(o["toSection"], at: p + "/toSection"),
                at: try JSONInput.index(o["at"], at: p + "/at"))
        case "swapRows":
            return .swapRows(try rowRef(o["a"], at: p + "/a"), try rowRef(o["b"], at: p + "/b"))
        default:
            throw RequestError(
                .invalidRequest, "\(p)/op: unknown operation \"\(name)\" (one of \(names.joined(separator: ", ")))")
        }
    }

    /// `"id"` or `{"index": n}`.
    public static func sectionRef(_ value: Any?, at pointer: String) throws(RequestError) -> SectionRef {
        if let id = value as? String {
            guard !id.isEmpty else { throw RequestError(.invalidRequest, "\(pointer): must not be empty") }
            return .id(id)
        }
        let object = try refObject(value, at: pointer, expecting: "a section ID or {\"index\": n}")
        return .index(try JSONInput.index(object["index"], at: pointer + "/index"))
    }

    /// `"id"` or `{"index": n, "section": <section ref>}`.
    public static func rowRef(_ value: Any?, at pointer: String) throws(RequestError) -> RowRef {
        if let id = value as? String {
            guard !id.isEmpty else { throw RequestError(.invalidRequest, "\(pointer): must not be empty") }
            return .id(id)
        }
        let object = try refObject(value, at: pointer, expecting: "a row ID or {\"index\": n, \"section\": ref}")
        return .index(
            try JSONInput.index(object["index"], at: pointer + "/index"),
            in: try sectionRef(object["section"], at: pointer + "/section"))
    }

    private static func refObject(
        _ value: Any?, at pointer: String, expecting: String
    ) throws(RequestError) -> [String: Any] {
        guard let object = value as? [String: Any] else {
            throw RequestError(.invalidRequest, "\(pointer): expected \(expecting)")
        }
        return object
    }
}

// MARK: Output

extension OperationJSON {
    /// Writes `operation` in the shape ``operation(from:at:)`` reads (IDs as strings,
    /// indices as `{"index": n}`), so every operation round-trips.
    public static func write(_ operation: FlowSyncCore.Operation, into w: inout JSONWriter) {
        w.beginObject()
        switch operation {
        case .setSections(let sections):
            w.member("op", "setSections")
            w.key("sections")
            ModelJSON.write(sections, into: &w)
        case .insertSections(let sections, let at):
            w.member("op", "insertSections")
            w.key("sections")
            ModelJSON.write(sections, into: &w)
            w.member("at", at)
        case .removeSections(let refs):
            w.member("op", "removeSections")
            w.key("sections")
            w.beginArray()
            for ref in refs { write(ref, into: &w) }
            w.endArray()
        case .removeAllSections:
            w.member("op", "removeAllSections")
        case .moveSection(let ref, let to):
            w.member("op", "moveSection")
            w.key("section")
            write(ref, into: &w)
            w.member("to", to)
        case .swapSections(let a, let b):
            w.member("op", "swapSections")
            w.key("a")
            write(a, into: &w)
            w.key("b")
            write(b, into: &w)
        case .setHeader(let ref, let value), .setFooter(let ref, let value):
            if case .setHeader = operation { w.member("op", "setHeader") } else { w.member("op", "setFooter") }
            w.key("section")
            write(ref, into: &w)
            if let value {
                ModelJSON.writeBytes(value, named: "value", into: &w)
            } else {
                w.key("value")
                w.null()
            }
        case .setRows(let rows, let section):
            w.member("op", "setRows")
            w.key("section")
            write(section, into: &w)
            w.key("rows")
            writeRows(rows, into: &w)
        case .insertRows(let rows, let section, let at):
            w.member("op", "insertRows")
            w.key("section")
            write(section, into: &w)
            w.member("at", at)
            w.key("rows")
            writeRows(rows, into: &w)
        case .replaceRow(let ref, let row):
            w.member("op", "replaceRow")
            w.key("row")
            write(ref, into: &w)
            w.key("with")
            ModelJSON.write(row, into: &w)
        case .removeRows(let refs):
            w.member("op", "removeRows")
            w.key("rows")
            w.beginArray()
            for ref in refs { write(ref, into: &w) }
            w.endArray()
        case .removeAllRows(let section):
            w.member("op", "removeAllRows")
            w.key("section")
            write(section, into: &w)
        case .moveRow(let ref, let section, let at):
            w.member("op", "moveRow")
            w.key("row")
            write(ref, into: &w)
            w.key("toSection")
            write(section, into: &w)
            w.member("at", at)
        case .swapRows(let a, let b):
            w.member("op", "swapRows")
            w.key("a")
            write(a, into: &w)
            w.key("b")
            write(b, into: &w)
        }
        w.endObject()
    }

    static func writeRows(_ rows: [Row], into w: inout JSONWriter) {
        w.beginArray()
        for row in rows { ModelJSON.write(row, into: &w) }
        w.endArray()
    }

    static func write(_ ref: SectionRef, into w: inout JSONWriter) {
        switch ref {
        case .id(let id): w.string(id)
        case .index(let i):
            w.beginObject()
            w.member("index", i)
            w.endObject()
        }
    }

    static func write(_ ref: RowRef, into w: inout JSONWriter) {
        switch ref {
        case .id(let id): w.string(id)
        case .index(let i, let section):
            w.beginObject()
            w.member("index", i)
            w.key("section")
            write(section, into: &w)
            w.endObject()
        }
    }
}
