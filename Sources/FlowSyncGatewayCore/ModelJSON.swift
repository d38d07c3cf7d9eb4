import FlowSyncCore
import Foundation

/// Rows, sections and whole lists as JSON, both ways (docs/GATEWAY.md, "JSON model").
///
/// A row is `{"id", "kind", "payload"}`. The protocol keeps a payload as opaque bytes; the
/// gateway shows bytes that are one well-formed JSON value (UTF-8) as that value, verbatim,
/// and any other bytes as `"payloadBase64"`. Headers and footers follow the same rule
/// (`header` / `headerBase64`). On input, `payload` (any JSON value) is stored as its
/// compact JSON text, and `payloadBase64` as the bytes it decodes to.
///
/// Not guaranteed: a JSON payload written through the gateway keeps its value, not its
/// text (member order and number spelling are `JSONSerialization`'s).
public enum ModelJSON {
    // MARK: Output

    /// Writes `bytes` as `"<name>": <json>` when they are one JSON value, else as
    /// `"<name>Base64": "…"`.
    public static func writeBytes(_ bytes: [UInt8], named name: String, into writer: inout JSONWriter) {
        if isJSON(bytes) {
            writer.key(name)
            writer.raw(bytes)
        } else {
            writer.member(name + "Base64", Data(bytes).base64EncodedString())
        }
    }

    /// Whether `bytes` are exactly one well-formed JSON value (leading/trailing spaces allowed).
    public static func isJSON(_ bytes: [UInt8]) -> Bool {
        guard let first = bytes.first(where: { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 }) else {
            return false
        }
        // A cheap first-byte test keeps plain text ("hello") off the parser's slow error path.
        switch first {
        case UInt8(ascii: "{"), UInt8(ascii: "["), UInt8(ascii: "\""), UInt8(ascii: "-"),
            UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "t"), UInt8(ascii: "f"), UInt8(ascii: "n"):
            return (try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])) != nil
        default:
            return false
        }
    }

    public static func write(_ row: Row, into writer: inout JSONWriter) {
        writer.beginObject()
        writer.member("id", row.id)
        writer.member("kind", row.kind)
        writeBytes(row.payload, named: "payload", into: &writer)
        writer.endObject()
    }

    public static func write(_ section: Section, into writer: inout JSONWriter) {
        writer.beginObject()
        writer.member("id", section.id)
        if let header = section.header { writeBytes(header, named: "header", into: &writer) }
        if let footer = section.footer { writeBytes(footer, named: "footer", into: &writer) }
        writer.key("rows")
        writer.beginArray()
        for row in section.rows { write(row, into: &writer) }
        writer.endArray()
        writer.endObject()
    }

    public static func write(_ sections: [Section], into writer: inout JSONWriter) {
        writer.beginArray()
        for section in sections { write(section, into: &writer) }
        writer.endArray()
    }

    /// `{"epoch": "E", "version": V}`. The epoch is a random u64, far past 2^53, where a
    /// JavaScript number loses digits: it is written as a decimal string. Versions count
    /// batches and stay numbers.
    public static func write(_ version: ListVersion, into writer: inout JSONWriter) {
        writer.beginObject()
        writer.member("epoch", String(version.epoch))
        writer.member("version", version.version)
        writer.endObject()
    }

    /// A state digest as 16 lowercase hex digits: a `u64` does not fit a JSON number
    /// (JavaScript's are doubles).
    public static func digestText(_ digest: StateDigest) -> String {
        let hex = String(digest.rawValue, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    // MARK: Input

    /// Reads `{"id", "kind"?, "payload"? | "payloadBase64"?}` at `pointer`.
    public static func row(from value: Any, at pointer: String) throws(RequestError) -> Row {
        let object = try JSONInput.object(value, at: pointer)
        let id = try JSONInput.string(object["id"], at: pointer + "/id")
        let kind = try JSONInput.optionalString(object["kind"], at: pointer + "/kind") ?? ""
        let payload = try bytes(in: object, named: "payload", at: pointer) ?? []
        return Row(id: id, kind: kind, payload: payload)
    }

    /// Reads `{"id", "header"?, "footer"?, "rows"?}` at `pointer`.
    public static func section(from value: Any, at pointer: String) throws(RequestError) -> Section {
        let object = try JSONInput.object(value, at: pointer)
        let id = try JSONInput.string(object["id"], at: pointer + "/id")
        let header = try bytes(in: object, named: "header", at: pointer)
        let footer = try bytes(in: object, named: "footer", at: pointer)
        let rows = try rows(from: object["rows"] ?? [Any](), at: pointer + "/rows")
        return Section(id: id, header: header, footer: footer, rows: rows)
    }

    public static func rows(from value: Any, at pointer: String) throws(RequestError) -> [Row] {
        let array = try JSONInput.array(value, at: pointer)
        var rows: [Row] = []
        rows.reserveCapacity(array.count)
        for (i, element) in array.enumerated() { rows.append(try row(from: element, at: "\(pointer)/\(i)")) }
        return rows
    }

    public static func sections(from value: Any, at pointer: String) throws(RequestError) -> [Section] {
        let array = try JSONInput.array(value, at: pointer)
        var sections: [Section] = []
        for (i, element) in array.enumerated() { sections.append(try section(from: element, at: "\(pointer)/\(i)")) }
        return sections
    }

    /// `name` as JSON text, or `nameBase64` as bytes, or nil when neither is present.
    /// JSON `null` under `name` is absent too (for headers: "remove").
    static func bytes(in object: [String: Any], named name: String, at pointer: String) throws(RequestError) -> [UInt8]?
    {
        if let encoded = object[name + "Base64"] {
            let text = try JSONInput.string(encoded, at: "\(pointer)/\(name)Base64", allowEmpty: true)
            guard let data = Data(base64Encoded: text) else {
                throw RequestError(.invalidRequest, "\(pointer)/\(name)Base64: not base64")
            }
            return Array(data)
        }
        guard let value = object[name], !(value is NSNull) else { return nil }
        return try jsonText(value, at: "\(pointer)/\(name)")
    }

    /// A parsed JSON value as compact JSON text.
    public static func jsonText(_ value: Any, at pointer: String) throws(RequestError) -> [UInt8] {
        do {
            let data = try JSONSerialization.data(
                withJSONObject: value, options: [.fragmentsAllowed, .withoutEscapingSlashes])
            return Array(data)
        } catch {
            throw RequestError(.invalidRequest, "\(pointer): cannot be stored as JSON")
        }
    }
}
