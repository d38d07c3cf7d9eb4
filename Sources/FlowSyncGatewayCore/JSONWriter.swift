/// A forward-only JSON text builder: what the gateway sends (list bodies, SSE events,
/// WebSocket messages, webhook bodies) is written straight into one byte buffer.
///
/// Why not `JSONSerialization` or `Codable`: a row's payload is already JSON text on the
/// wire (the protocol keeps it as opaque bytes), and this writer embeds it verbatim after a
/// validity check instead of parsing it into objects and printing it again. The caller
/// is responsible for well-formed nesting (`beginObject`/`endObject` pairs, `key` before
/// each member value); the writer inserts the commas.
public struct JSONWriter: Sendable {
    /// The UTF-8 text written so far.
    public private(set) var bytes: [UInt8] = []
    /// Per open container: whether it already holds an element (so the next needs a comma).
    private var hasElement: [Bool] = []
    /// True right after `key(_:)`: the next value is that member's, no comma before it.
    private var afterKey = false

    public init(reservingCapacity capacity: Int = 256) {
        bytes.reserveCapacity(capacity)
    }

    /// The text as a `String`.
    public var text: String { String(decoding: bytes, as: UTF8.self) }

    private mutating func separate() {
        if afterKey {
            afterKey = false
            return
        }
        if let last = hasElement.last {
            if last { bytes.append(UInt8(ascii: ",")) }
            hasElement[hasElement.count - 1] = true
        }
    }

    public mutating func beginObject() {
        separate()
        bytes.append(UInt8(ascii: "{"))
        hasElement.append(false)
    }

    public mutating func endObject() {
        hasElement.removeLast()
        bytes.append(UInt8(ascii: "}"))
    }

    public mutating func beginArray() {
        separate()
        bytes.append(UInt8(ascii: "["))
        hasElement.append(false)
    }

    public mutating func endArray() {
        hasElement.removeLast()
        bytes.append(UInt8(ascii: "]"))
    }

    /// A member name; the next call writes its value.
    public mutating func key(_ name: String) {
        separate()
        appendQuoted(name)
        bytes.append(UInt8(ascii: ":"))
        afterKey = true
    }

    public mutating func string(_ value: String) {
        separate()
        appendQuoted(value)
    }

    public mutating func int<I: BinaryInteger>(_ value: I) {
        separate()
        bytes.append(contentsOf: String(value).utf8)
    }

    public mutating func bool(_ value: Bool) {
        separate()
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
    }

    public mutating func null() {
        separate()
        bytes.append(contentsOf: "null".utf8)
    }

    /// Text the caller has checked is one well-formed JSON value (a validated payload).
    public mutating func raw(_ json: [UInt8]) {
        separate()
        bytes.append(contentsOf: json)
    }

    /// Convenience: `"name": "value"`.
    public mutating func member(_ name: String, _ value: String) {
        key(name)
        string(value)
    }

    /// Convenience: `"name": 12`.
    public mutating func member<I: BinaryInteger>(_ name: String, _ value: I) {
        key(name)
        int(value)
    }

    private mutating func appendQuoted(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        for unit in text.utf8 {
            switch unit {
            case UInt8(ascii: "\""): bytes.append(contentsOf: [0x5C, 0x22])
            case UInt8(ascii: "\\"): bytes.append(contentsOf: [0x5C, 0x5C])
            case 0x0A: bytes.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x0D: bytes.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x09: bytes.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            case 0x00..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                bytes.append(contentsOf: [
                    0x5C, UInt8(ascii: "u"), 0x30, 0x30, hex[Int(unit >> 4)], hex[Int(unit & 0xF)],
                ])
            default: bytes.append(unit)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
