/// A 64-bit digest of a director's whole state — section and row IDs, their order,
/// row content hashes, headers and footers — that is updated in O(1) per primitive
/// edit, so a replica can check after every batch that it matches the server.
///
/// ## Construction (normative; `docs/PROTOCOL.md` repeats it for other languages)
/// The digest is the wrapping sum (mod 2⁶⁴) of one *term* per node and per adjacency
/// edge. Let `H(s)` = XXH64(UTF-8 of `s`, seed 0), `T(tag, a, b, c)` = XXH64 of the 32
/// bytes `LE64(tag) ‖ LE64(a) ‖ LE64(b) ‖ LE64(c)`, seed 0, `START` = 1, `END` = 2, and
/// `P(x)` = 0 for no header/footer, else XXH64(bytes, seed 1).
/// - every section `s`: `T(3, H(s.id), P(s.header), P(s.footer))`;
/// - every pair of consecutive sections (with `START` before the first and `END` after
///   the last; an empty director has the one edge `START→END`): `T(4, 0, prev, next)`,
///   where prev/next are `H(id)` or the sentinels;
/// - every row `r` of section `s`: `T(1, H(s.id), H(r.id), r.contentHash)`;
/// - every pair of consecutive rows in `s` (with `START`/`END`; an empty section has
///   `START→END`): `T(2, H(s.id), prev, next)`.
///
/// Why edges: IDs are unique, so the set of successor edges determines every sequence
/// exactly, yet inserting or removing one element changes only three edge terms. A
/// positional hash would need O(n) work per insert.
///
/// Not guaranteed: this is not a cryptographic commitment. Two different states
/// collide with probability about 2⁻⁶⁴ for accidental drift; an adversary can forge
/// collisions.
public struct StateDigest: Hashable, Sendable, CustomStringConvertible {
    /// The digest value.
    public var rawValue: UInt64

    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// The sentinel hash standing for "before the first element".
    public static let start: UInt64 = 1
    /// The sentinel hash standing for "after the last element".
    public static let end: UInt64 = 2

    /// The digest of a state, computed from scratch.
    /// - Complexity: O(total rows + sections).
    public static func compute(_ sections: [Section]) -> StateDigest {
        var sum: UInt64 = 0
        var prev = start
        for section in sections {
            let h = idHash(section.id)
            sum &+= sectionEdge(prev, h)
            sum &+= sectionTerms(section, idHash: h)
            prev = h
        }
        sum &+= sectionEdge(prev, end)
        return StateDigest(rawValue: sum)
    }

    public var description: String {
        let hex = String(rawValue, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    // MARK: Terms (internal; the Director keeps the sum current)

    @inline(__always) static func idHash(_ id: String) -> UInt64 { XXH64.hash(id) }

    @inline(__always) static func payloadHash(_ p: [UInt8]?) -> UInt64 {
        guard let p else { return 0 }
        return XXH64.hash(p, seed: 1)
    }

    @inline(__always) static func rowNode(_ section: UInt64, _ rowID: UInt64, _ content: UInt64) -> UInt64 {
        XXH64.hash(words: 1, section, rowID, content)
    }

    @inline(__always) static func rowEdge(_ section: UInt64, _ prev: UInt64, _ next: UInt64) -> UInt64 {
        XXH64.hash(words: 2, section, prev, next)
    }

    @inline(__always) static func sectionNode(_ section: UInt64, header: [UInt8]?, footer: [UInt8]?) -> UInt64 {
        XXH64.hash(words: 3, section, payloadHash(header), payloadHash(footer))
    }

    @inline(__always) static func sectionEdge(_ prev: UInt64, _ next: UInt64) -> UInt64 {
        XXH64.hash(words: 4, 0, prev, next)
    }

    /// Every term that belongs to one section: its node and its rows' nodes and edges.
    /// - Complexity: O(rows in the section).
    static func sectionTerms(_ section: Section, idHash h: UInt64) -> UInt64 {
        var sum = sectionNode(h, header: section.header, footer: section.footer)
        var prev = start
        for row in section.rows {
            let r = idHash(row.id)
            sum &+= rowNode(h, r, row.contentHash)
            sum &+= rowEdge(h, prev, r)
            prev = r
        }
        sum &+= rowEdge(h, prev, end)
        return sum
    }
}
