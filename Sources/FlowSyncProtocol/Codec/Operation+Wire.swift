import FlowSyncCore

/// The one-byte tag of each ``Operation`` case on the wire (`docs/PROTOCOL.md`,
/// "Operations"). Section operations are `0x0_`, row operations `0x1_`.
enum OperationTag: UInt8 {
    case setSections = 0x01
    case insertSections = 0x02
    case removeSections = 0x03
    case removeAllSections = 0x04
    case moveSection = 0x05
    case swapSections = 0x06
    case setHeader = 0x07
    case setFooter = 0x08
    case setRows = 0x10
    case insertRows = 0x11
    case replaceRow = 0x12
    case removeRows = 0x13
    case removeAllRows = 0x14
    case moveRow = 0x15
    case swapRows = 0x16
}

extension WireWriter {
    /// An operation: its tag, then its fields in declaration order (indices after the
    /// reference they index into, arrays as count + elements).
    mutating func operation(_ op: Operation) {
        switch op {
        case .setSections(let s):
            u8(OperationTag.setSections.rawValue)
            sections(s)
        case .insertSections(let s, let at):
            u8(OperationTag.insertSections.rawValue)
            index(at)
            sections(s)
        case .removeSections(let refs):
            u8(OperationTag.removeSections.rawValue)
            index(refs.count)
            for r in refs { sectionRef(r) }
        case .removeAllSections:
            u8(OperationTag.removeAllSections.rawValue)
        case .moveSection(let ref, let to):
            u8(OperationTag.moveSection.rawValue)
            sectionRef(ref)
            index(to)
        case .swapSections(let a, let b):
            u8(OperationTag.swapSections.rawValue)
            sectionRef(a)
            sectionRef(b)
        case .setHeader(let ref, let value):
            u8(OperationTag.setHeader.rawValue)
            sectionRef(ref)
            optionalBlob(value)
        case .setFooter(let ref, let value):
            u8(OperationTag.setFooter.rawValue)
            sectionRef(ref)
            optionalBlob(value)
        case .setRows(let r, let ref):
            u8(OperationTag.setRows.rawValue)
            sectionRef(ref)
            rows(r)
        case .insertRows(let r, let ref, let at):
            u8(OperationTag.insertRows.rawValue)
            sectionRef(ref)
            index(at)
            rows(r)
        case .replaceRow(let ref, let r):
            u8(OperationTag.replaceRow.rawValue)
            rowRef(ref)
            row(r)
        case .removeRows(let refs):
            u8(OperationTag.removeRows.rawValue)
            index(refs.count)
            for r in refs { rowRef(r) }
        case .removeAllRows(let ref):
            u8(OperationTag.removeAllRows.rawValue)
            sectionRef(ref)
        case .moveRow(let ref, let section, let at):
            u8(OperationTag.moveRow.rawValue)
            rowRef(ref)
            sectionRef(section)
            index(at)
        case .swapRows(let a, let b):
            u8(OperationTag.swapRows.rawValue)
            rowRef(a)
            rowRef(b)
        }
    }
}

extension WireReader {
    mutating func operation() throws(ProtocolError) -> Operation {
        let raw = try u8("operation tag")
        guard let tag = OperationTag(rawValue: raw) else {
            throw Self.malformed("unknown operation tag 0x\(String(raw, radix: 16))")
        }
        switch tag {
        case .setSections: return .setSections(try sections("sections"))
        case .insertSections:
            let at = try index("insert index")
            return .insertSections(try sections("sections"), at: at)
        case .removeSections: return .removeSections(try sectionRefs("section references"))
        case .removeAllSections: return .removeAllSections
        case .moveSection:
            let ref = try sectionRef()
            return .moveSection(ref, to: try index("destination index"))
        case .swapSections:
            let a = try sectionRef()
            return .swapSections(a, try sectionRef())
        case .setHeader:
            let ref = try sectionRef()
            return .setHeader(ref, try optionalBlob("header", maxBytes: limits.maxPayloadBytes, code: .payloadTooLarge))
        case .setFooter:
            let ref = try sectionRef()
            return .setFooter(ref, try optionalBlob("footer", maxBytes: limits.maxPayloadBytes, code: .payloadTooLarge))
        case .setRows:
            let ref = try sectionRef()
            return .setRows(try rows("rows"), in: ref)
        case .insertRows:
            let ref = try sectionRef()
            let at = try index("insert index")
            return .insertRows(try rows("rows"), in: ref, at: at)
        case .replaceRow:
            let ref = try rowRef()
            return .replaceRow(ref, with: try row())
        case .removeRows: return .removeRows(try rowRefs("row references"))
        case .removeAllRows: return .removeAllRows(in: try sectionRef())
        case .moveRow:
            let ref = try rowRef()
            let section = try sectionRef()
            return .moveRow(ref, toSection: section, at: try index("destination index"))
        case .swapRows:
            let a = try rowRef()
            return .swapRows(a, try rowRef())
        }
    }

    mutating func operations() throws(ProtocolError) -> [Operation] {
        let n = try count("operations", limit: limits.maxOpsPerMutation, code: .tooManyOps)
        var ops: [Operation] = []
        ops.reserveCapacity(n)
        for _ in 0..<n { ops.append(try operation()) }
        return ops
    }
}
