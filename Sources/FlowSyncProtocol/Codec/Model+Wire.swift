import FlowSyncCore

// Wire forms of the core's model values: Row, Section, SectionRef, RowRef, RowPath.
// `docs/PROTOCOL.md`, "Model values", is the normative description.

extension WireWriter {
    /// `Row`: id, kind, payload. The content hash is not sent: the receiver recomputes
    /// it (it is a pure function of kind and payload, and sending it would let a sender
    /// make the two disagree).
    mutating func row(_ row: Row) {
        string(row.id)
        string(row.kind)
        blob(row.payload)
    }

    /// `Section`: id, optional header, optional footer, row count, rows.
    mutating func section(_ section: Section) {
        string(section.id)
        optionalBlob(section.header)
        optionalBlob(section.footer)
        index(section.rows.count)
        for r in section.rows { row(r) }
    }

    mutating func sections(_ sections: [Section]) {
        index(sections.count)
        for s in sections { section(s) }
    }

    mutating func rows(_ rows: [Row]) {
        index(rows.count)
        for r in rows { row(r) }
    }

    /// `SectionRef`: tag 0 + id string, or tag 1 + index.
    mutating func sectionRef(_ ref: SectionRef) {
        switch ref {
        case .id(let id):
            u8(0)
            string(id)
        case .index(let i):
            u8(1)
            index(i)
        }
    }

    /// `RowRef`: tag 0 + id string, or tag 1 + row index + `SectionRef`.
    mutating func rowRef(_ ref: RowRef) {
        switch ref {
        case .id(let id):
            u8(0)
            string(id)
        case .index(let i, let section):
            u8(1)
            index(i)
            sectionRef(section)
        }
    }

    /// `RowPath`: section index, row index.
    mutating func rowPath(_ path: RowPath) {
        index(path.section)
        index(path.row)
    }
}

extension WireReader {
    mutating func row() throws(ProtocolError) -> Row {
        let id = try string("row ID", maxBytes: limits.maxIDBytes, code: .idTooLong)
        let kind = try string("row kind", maxBytes: limits.maxKindBytes, code: .idTooLong)
        let payload = try blob("row payload", maxBytes: limits.maxPayloadBytes, code: .payloadTooLarge)
        return Row(id: id, kind: kind, payload: payload)
    }

    /// Smallest encoded row: three empty length bytes.
    static let minRowBytes = 3
    /// Smallest encoded section: empty id, two absent flags, zero rows.
    static let minSectionBytes = 4

    mutating func rows(_ what: String) throws(ProtocolError) -> [Row] {
        let n = try rowCount(what, minBytes: Self.minRowBytes)
        var rows: [Row] = []
        rows.reserveCapacity(n)
        for _ in 0..<n { rows.append(try row()) }
        return rows
    }

    mutating func section() throws(ProtocolError) -> Section {
        let id = try string("section ID", maxBytes: limits.maxIDBytes, code: .idTooLong)
        let header = try optionalBlob("header", maxBytes: limits.maxPayloadBytes, code: .payloadTooLarge)
        let footer = try optionalBlob("footer", maxBytes: limits.maxPayloadBytes, code: .payloadTooLarge)
        let rows = try rows("rows")
        return Section(id: id, header: header, footer: footer, rows: rows)
    }

    mutating func sections(_ what: String) throws(ProtocolError) -> [Section] {
        let n = try sectionCount(what, minBytes: Self.minSectionBytes)
        var sections: [Section] = []
        sections.reserveCapacity(n)
        for _ in 0..<n { sections.append(try section()) }
        return sections
    }

    mutating func sectionRef() throws(ProtocolError) -> SectionRef {
        switch try u8("section reference tag") {
        case 0: return .id(try string("section ID", maxBytes: limits.maxIDBytes, code: .idTooLong))
        case 1: return .index(try index("section index"))
        case let tag: throw Self.malformed("unknown section reference tag \(tag)")
        }
    }

    mutating func sectionRefs(_ what: String) throws(ProtocolError) -> [SectionRef] {
        let n = try sectionCount(what, minBytes: 2)
        var refs: [SectionRef] = []
        refs.reserveCapacity(n)
        for _ in 0..<n { refs.append(try sectionRef()) }
        return refs
    }

    mutating func rowRef() throws(ProtocolError) -> RowRef {
        switch try u8("row reference tag") {
        case 0: return .id(try string("row ID", maxBytes: limits.maxIDBytes, code: .idTooLong))
        case 1:
            let i = try index("row index")
            return .index(i, in: try sectionRef())
        case let tag: throw Self.malformed("unknown row reference tag \(tag)")
        }
    }

    mutating func rowRefs(_ what: String) throws(ProtocolError) -> [RowRef] {
        let n = try rowCount(what, minBytes: 2)
        var refs: [RowRef] = []
        refs.reserveCapacity(n)
        for _ in 0..<n { refs.append(try rowRef()) }
        return refs
    }

    mutating func rowPath() throws(ProtocolError) -> RowPath {
        let s = try index("section index")
        let r = try index("row index")
        return RowPath(section: s, row: r)
    }
}
