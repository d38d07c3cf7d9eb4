/// One model (a table or collection view cell) in a section: a stable ID, a `kind`
/// tag and an opaque payload.
///
/// - `id` is unique within a ``Director`` (not just within its section), so a row
///   that moves to another section is still recognised as the same row — this is
///   FlowKit's `modelID`.
/// - `kind` is the type tag a client maps to an adapter or cell type (several kinds
///   may share a section).
/// - `payload` is opaque to FlowSync (typically JSON). Two rows with the same ID but a
///   different `kind` or `payload` make an *update* (a reload) in a changeset.
///
/// `contentHash` is computed once at construction (XXH64 of the kind and payload, see
/// `docs/PROTOCOL.md`, "State digest") so the diff and the digest never rehash payloads.
public struct Row: Hashable, Sendable, CustomStringConvertible {
    /// Stable identity, unique within the director.
    public let id: String
    /// Type tag for the client's adapter; may be empty.
    public let kind: String
    /// Opaque content bytes.
    public let payload: [UInt8]
    /// XXH64 over `LE32(kind.utf8.count) ‖ kind ‖ payload`.
    public let contentHash: UInt64

    /// Creates a row and computes its content hash.
    /// - Complexity: O(`payload.count`).
    public init(id: String, kind: String = "", payload: [UInt8] = []) {
        self.id = id
        self.kind = kind
        self.payload = payload
        self.contentHash = Row.contentHash(kind: kind, payload: payload)
    }

    /// Creates a row whose payload is the UTF-8 of `text` (handy for JSON).
    public init(id: String, kind: String = "", text: String) {
        self.init(id: id, kind: kind, payload: Array(text.utf8))
    }

    /// The content hash of a kind and payload, as specified in `docs/PROTOCOL.md`.
    public static func contentHash(kind: String, payload: [UInt8]) -> UInt64 {
        var bytes: [UInt8] = []
        let kindBytes = Array(kind.utf8)
        bytes.reserveCapacity(4 + kindBytes.count + payload.count)
        let n = UInt32(kindBytes.count)
        bytes.append(UInt8(truncatingIfNeeded: n))
        bytes.append(UInt8(truncatingIfNeeded: n >> 8))
        bytes.append(UInt8(truncatingIfNeeded: n >> 16))
        bytes.append(UInt8(truncatingIfNeeded: n >> 24))
        bytes.append(contentsOf: kindBytes)
        bytes.append(contentsOf: payload)
        return XXH64.hash(bytes)
    }

    /// True when `other` has the same content (kind and payload), whatever its ID.
    @inlinable
    public func hasSameContent(as other: Row) -> Bool {
        contentHash == other.contentHash && kind == other.kind && payload == other.payload
    }

    public static func == (lhs: Row, rhs: Row) -> Bool {
        lhs.id == rhs.id && lhs.hasSameContent(as: rhs)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(id)
        hasher.combine(contentHash)
    }

    public var description: String {
        let text = String(decoding: payload.prefix(40), as: UTF8.self)
        return "Row(\(id)\(kind.isEmpty ? "" : ":\(kind)") \(text)\(payload.count > 40 ? "…" : ""))"
    }
}
