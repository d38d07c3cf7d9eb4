import FlowSyncCore
import FlowSyncProtocol

// The primitives of `ReplicaFileFormat`: big-endian integers, varints, length-prefixed
// bytes, and the trailing checksum. A file of their own so the format (what goes
// where) reads apart from the byte mechanics.

/// Appends the primitives of ``ReplicaFileFormat``; ``finish()`` adds the checksum.
struct FileWriter {
    private(set) var buffer: [UInt8]

    init(magic: [UInt8]) {
        buffer = magic
        buffer.append(ReplicaFileFormat.formatVersion)
    }

    mutating func u8(_ v: UInt8) { buffer.append(v) }

    mutating func u64(_ v: UInt64) {
        for shift in stride(from: 56, through: 0, by: -8) {
            buffer.append(UInt8(truncatingIfNeeded: v >> UInt64(shift)))
        }
    }

    mutating func varint(_ v: UInt64) {
        var v = v
        while v >= 0x80 {
            buffer.append(UInt8(v & 0x7F) | 0x80)
            v >>= 7
        }
        buffer.append(UInt8(v))
    }

    mutating func bytes(_ b: [UInt8]) {
        varint(UInt64(b.count))
        buffer.append(contentsOf: b)
    }

    mutating func string(_ s: String) { bytes(Array(s.utf8)) }

    mutating func optionalBytes(_ b: [UInt8]?) {
        if let b {
            u8(1)
            bytes(b)
        } else {
            u8(0)
        }
    }

    mutating func version(_ v: ListVersion) {
        u64(v.epoch)
        u64(v.version)
    }

    mutating func strings(_ list: [String]) {
        varint(UInt64(list.count))
        for s in list { string(s) }
    }

    mutating func anchor(_ a: Anchor) {
        strings(a.after)
        strings(a.before)
    }

    mutating func rows(_ rows: some Collection<Row>) {
        varint(UInt64(rows.count))
        for row in rows {
            string(row.id)
            string(row.kind)
            bytes(row.payload)
        }
    }

    mutating func sections(_ sections: [Section]) {
        varint(UInt64(sections.count))
        for section in sections {
            string(section.id)
            optionalBytes(section.header)
            optionalBytes(section.footer)
            rows(section.rows)
        }
    }

    /// One anchored operation: a tag (its case's position in ``AnchoredOperation``),
    /// then its fields in declaration order.
    mutating func anchored(_ operation: AnchoredOperation) {
        switch operation {
        case .setSections(let s):
            u8(0)
            sections(s)
        case .insertSections(let s, let at):
            u8(1)
            sections(s)
            anchor(at)
        case .removeSections(let ids):
            u8(2)
            strings(ids)
        case .removeAllSections: u8(3)
        case .moveSection(let id, let to):
            u8(4)
            string(id)
            anchor(to)
        case .swapSections(let a, let b):
            u8(5)
            string(a)
            string(b)
        case .setHeader(let id, let h):
            u8(6)
            string(id)
            optionalBytes(h)
        case .setFooter(let id, let f):
            u8(7)
            string(id)
            optionalBytes(f)
        case .setRows(let r, let id):
            u8(8)
            rows(r)
            string(id)
        case .insertRows(let r, let id, let at):
            u8(9)
            rows(r)
            string(id)
            anchor(at)
        case .replaceRow(let id, let row):
            u8(10)
            string(id)
            rows(CollectionOfOne(row))
        case .removeRows(let ids):
            u8(11)
            strings(ids)
        case .removeAllRows(let id):
            u8(12)
            string(id)
        case .moveRow(let id, let section, let at):
            u8(13)
            string(id)
            string(section)
            anchor(at)
        case .swapRows(let a, let b):
            u8(14)
            string(a)
            string(b)
        }
    }

    func finish() -> [UInt8] {
        var out = self
        out.u64(XXH64.hash(buffer))
        return out.buffer
    }
}

/// Reads what ``FileWriter`` wrote. Every read is bounds-checked, and every count is
/// checked against the bytes left (each element takes at least one), so no input makes
/// it trap or allocate more than the file's size.
struct FileReader {
    private let buffer: [UInt8]
    private var offset: Int
    /// Where the body ends (the checksum follows).
    private let bodyEnd: Int

    init(_ bytes: [UInt8], magic: [UInt8]) throws(ReplicaFileError) {
        guard bytes.count >= magic.count + 1 + 8 else {
            throw ReplicaFileError(message: "the file is too short (\(bytes.count) bytes)")
        }
        guard Array(bytes[0..<magic.count]) == magic else {
            throw ReplicaFileError(message: "not a FlowSync client file (magic)")
        }
        guard bytes[magic.count] == ReplicaFileFormat.formatVersion else {
            throw ReplicaFileError(
                message: "format version \(bytes[magic.count]) is not \(ReplicaFileFormat.formatVersion)")
        }
        let bodyEnd = bytes.count - 8
        var stored: UInt64 = 0
        for k in 0..<8 { stored = stored << 8 | UInt64(bytes[bodyEnd + k]) }
        guard stored == bytes.withUnsafeBytes({ XXH64.hash(UnsafeRawBufferPointer(rebasing: $0[0..<bodyEnd])) }) else {
            throw ReplicaFileError(message: "the file fails its checksum (damaged or torn)")
        }
        self.bodyEnd = bodyEnd
        buffer = bytes
        offset = magic.count + 1
    }

    private func need(_ n: Int, _ what: String) throws(ReplicaFileError) {
        guard n >= 0, n <= bodyEnd - offset else { throw ReplicaFileError(message: "truncated \(what)") }
    }

    func end() throws(ReplicaFileError) {
        guard offset == bodyEnd else {
            throw ReplicaFileError(message: "\(bodyEnd - offset) unexpected bytes after the content")
        }
    }

    mutating func u8(_ what: String) throws(ReplicaFileError) -> UInt8 {
        try need(1, what)
        defer { offset += 1 }
        return buffer[offset]
    }

    mutating func u64(_ what: String) throws(ReplicaFileError) -> UInt64 {
        try need(8, what)
        defer { offset += 8 }
        return buffer[offset..<(offset + 8)].reduce(0) { $0 << 8 | UInt64($1) }
    }

    mutating func varint(_ what: String) throws(ReplicaFileError) -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let byte = try u8(what)
            guard shift < 64, shift < 63 || byte <= 1 else {
                throw ReplicaFileError(message: "\(what): varint overflows")
            }
            result |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return result }
            shift += 7
        }
    }

    /// A count of elements that each take at least one byte.
    mutating func count(_ what: String) throws(ReplicaFileError) -> Int {
        let n = try varint(what)
        guard n <= UInt64(bodyEnd - offset) else {
            throw ReplicaFileError(message: "\(what): count \(n) exceeds the bytes left")
        }
        return Int(n)
    }

    mutating func bytes(_ what: String) throws(ReplicaFileError) -> [UInt8] {
        let n = try count(what)
        defer { offset += n }
        return Array(buffer[offset..<(offset + n)])
    }

    mutating func string(_ what: String) throws(ReplicaFileError) -> String {
        let raw = try bytes(what)
        // (String(validating:) needs iOS 18.)
        let s = String(decoding: raw, as: UTF8.self)
        guard s.utf8.elementsEqual(raw) else { throw ReplicaFileError(message: "\(what) is not UTF-8") }
        return s
    }

    mutating func optionalBytes(_ what: String) throws(ReplicaFileError) -> [UInt8]? {
        switch try u8(what) {
        case 0: return nil
        case 1: return try bytes(what)
        case let flag: throw ReplicaFileError(message: "\(what): bad presence flag \(flag)")
        }
    }

    mutating func version() throws(ReplicaFileError) -> ListVersion {
        ListVersion(epoch: try u64("epoch"), version: try u64("version"))
    }

    mutating func strings(_ what: String) throws(ReplicaFileError) -> [String] {
        var list: [String] = []
        for _ in 0..<(try count(what)) { list.append(try string(what)) }
        return list
    }

    mutating func anchor() throws(ReplicaFileError) -> Anchor {
        Anchor(after: try strings("anchor"), before: try strings("anchor"))
    }

    mutating func rows() throws(ReplicaFileError) -> [Row] {
        var rows: [Row] = []
        for _ in 0..<(try count("rows")) {
            rows.append(Row(id: try string("row id"), kind: try string("row kind"), payload: try bytes("row payload")))
        }
        return rows
    }

    mutating func sections() throws(ReplicaFileError) -> [Section] {
        var sections: [Section] = []
        for _ in 0..<(try count("sections")) {
            let id = try string("section id")
            let header = try optionalBytes("header")
            let footer = try optionalBytes("footer")
            sections.append(Section(id: id, header: header, footer: footer, rows: try rows()))
        }
        return sections
    }

    mutating func anchored() throws(ReplicaFileError) -> AnchoredOperation {
        switch try u8("operation tag") {
        case 0: return .setSections(try sections())
        case 1: return .insertSections(try sections(), at: try anchor())
        case 2: return .removeSections(try strings("section ids"))
        case 3: return .removeAllSections
        case 4: return .moveSection(try string("section id"), to: try anchor())
        case 5: return .swapSections(try string("section id"), try string("section id"))
        case 6: return .setHeader(try string("section id"), try optionalBytes("header"))
        case 7: return .setFooter(try string("section id"), try optionalBytes("footer"))
        case 8: return .setRows(try rows(), in: try string("section id"))
        case 9: return .insertRows(try rows(), in: try string("section id"), at: try anchor())
        case 10:
            let id = try string("row id")
            let replacement = try rows()
            guard replacement.count == 1 else {
                throw ReplicaFileError(message: "replaceRow carries \(replacement.count) rows")
            }
            return .replaceRow(id, with: replacement[0])
        case 11: return .removeRows(try strings("row ids"))
        case 12: return .removeAllRows(in: try string("section id"))
        case 13: return .moveRow(try string("row id"), toSection: try string("section id"), at: try anchor())
        case 14: return .swapRows(try string("row id"), try string("row id"))
        case let tag: throw ReplicaFileError(message: "unknown operation tag \(tag)")
        }
    }
}
