import FlowSyncCore
import FlowSyncProtocol

/// A minimal ordered JSON value, so the golden-vector file is deterministic text that
/// the test can regenerate and compare byte for byte.
indirect enum JSON {
    case string(String)
    case number(String)
    case bool(Bool)
    case null
    case array([JSON])
    case object([(String, JSON)])

    static func int<T: BinaryInteger>(_ v: T) -> JSON { .number("\(v)") }

    func render(indent: Int = 0) -> String {
        let pad = String(repeating: "  ", count: indent + 1)
        let end = String(repeating: "  ", count: indent)
        switch self {
        case .string(let s): return Self.quote(s)
        case .number(let n): return n
        case .bool(let b): return b ? "true" : "false"
        case .null: return "null"
        case .array(let items):
            if items.isEmpty { return "[]" }
            if items.allSatisfy({
                if case .object = $0 { return false }
                if case .array = $0 { return false }
                return true
            }) {
                return "[" + items.map { $0.render() }.joined(separator: ", ") + "]"
            }
            return "[\n" + items.map { pad + $0.render(indent: indent + 1) }.joined(separator: ",\n") + "\n" + end + "]"
        case .object(let fields):
            if fields.isEmpty { return "{}" }
            return "{\n"
                + fields.map { pad + Self.quote($0.0) + ": " + $0.1.render(indent: indent + 1) }.joined(
                    separator: ",\n") + "\n" + end + "}"
        }
    }

    static func quote(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            default:
                if scalar.value < 0x20 {
                    let h = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - h.count) + h
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}

/// The decoded meaning of a message, field by field with the spec's field names:
/// what an implementer in another language compares its decoder's output with.
enum MeaningRenderer {
    static func bytes(_ b: [UInt8]) -> JSON {
        if let s = String(validating: b, as: UTF8.self), s.unicodeScalars.allSatisfy({ $0.value >= 0x20 }) {
            return .object([("utf8", .string(s))])
        }
        return .object([("hex", .string(hex(b)))])
    }

    static func optionalBytes(_ b: [UInt8]?) -> JSON { b.map(bytes) ?? .null }
    static func version(_ v: ListVersion) -> JSON { .object([("epoch", .int(v.epoch)), ("version", .int(v.version))]) }
    static func digest(_ d: StateDigest) -> JSON { .string(d.description) }

    static func row(_ r: Row) -> JSON {
        .object([
            ("id", .string(r.id)), ("kind", .string(r.kind)), ("payload", bytes(r.payload)),
            ("contentHash (computed, not sent)", .string(StateDigest(rawValue: r.contentHash).description)),
        ])
    }

    static func section(_ s: Section) -> JSON {
        .object([
            ("id", .string(s.id)), ("header", optionalBytes(s.header)), ("footer", optionalBytes(s.footer)),
            ("rows", .array(s.rows.map(row))),
        ])
    }

    static func sectionRef(_ r: SectionRef) -> JSON {
        switch r {
        case .id(let id): return .object([("id", .string(id))])
        case .index(let i): return .object([("index", .int(i))])
        }
    }

    static func rowRef(_ r: RowRef) -> JSON {
        switch r {
        case .id(let id): return .object([("id", .string(id))])
        case .index(let i, let s): return .object([("index", .int(i)), ("section", sectionRef(s))])
        }
    }

    static func path(_ p: RowPath) -> JSON { .array([.int(p.section), .int(p.row)]) }

    static func operation(_ op: Operation) -> JSON {
        func o(_ name: String, _ fields: [(String, JSON)]) -> JSON { .object([("op", .string(name))] + fields) }
        switch op {
        case .setSections(let s): return o("setSections", [("sections", .array(s.map(section)))])
        case .insertSections(let s, let at):
            return o("insertSections", [("at", .int(at)), ("sections", .array(s.map(section)))])
        case .removeSections(let r): return o("removeSections", [("sections", .array(r.map(sectionRef)))])
        case .removeAllSections: return o("removeAllSections", [])
        case .moveSection(let r, let to): return o("moveSection", [("section", sectionRef(r)), ("to", .int(to))])
        case .swapSections(let a, let b): return o("swapSections", [("a", sectionRef(a)), ("b", sectionRef(b))])
        case .setHeader(let r, let v): return o("setHeader", [("section", sectionRef(r)), ("value", optionalBytes(v))])
        case .setFooter(let r, let v): return o("setFooter", [("section", sectionRef(r)), ("value", optionalBytes(v))])
        case .setRows(let rows, let r):
            return o("setRows", [("section", sectionRef(r)), ("rows", .array(rows.map(row)))])
        case .insertRows(let rows, let r, let at):
            return o("insertRows", [("section", sectionRef(r)), ("at", .int(at)), ("rows", .array(rows.map(row)))])
        case .replaceRow(let r, let new): return o("replaceRow", [("row", rowRef(r)), ("with", row(new))])
        case .removeRows(let r): return o("removeRows", [("rows", .array(r.map(rowRef)))])
        case .removeAllRows(let r): return o("removeAllRows", [("section", sectionRef(r))])
        case .moveRow(let r, let s, let at):
            return o("moveRow", [("row", rowRef(r)), ("toSection", sectionRef(s)), ("at", .int(at))])
        case .swapRows(let a, let b): return o("swapRows", [("a", rowRef(a)), ("b", rowRef(b))])
        }
    }

    static func stage(_ s: ChangesetStage) -> JSON {
        var fields: [(String, JSON)] = []
        if !s.sectionDeletes.isEmpty { fields.append(("sectionDeletes", .array(s.sectionDeletes.map { .int($0) }))) }
        if !s.sectionInserts.isEmpty {
            fields.append(
                (
                    "sectionInserts",
                    .array(
                        s.sectionInserts.map { .object([("index", .int($0.index)), ("section", section($0.section))]) })
                ))
        }
        if !s.sectionMoves.isEmpty {
            fields.append(
                (
                    "sectionMoves",
                    .array(s.sectionMoves.map { .object([("from", .int($0.from)), ("to", .int($0.to))]) })
                ))
        }
        if !s.supplementaryUpdates.isEmpty {
            fields.append(
                (
                    "supplementaryUpdates",
                    .array(
                        s.supplementaryUpdates.map {
                            .object([
                                ("section", .int($0.section)),
                                ("element", .string($0.element == .header ? "header" : "footer")),
                                ("value", optionalBytes($0.value)),
                            ])
                        })
                ))
        }
        if !s.rowDeletes.isEmpty { fields.append(("rowDeletes", .array(s.rowDeletes.map(path)))) }
        if !s.rowInserts.isEmpty {
            fields.append(
                ("rowInserts", .array(s.rowInserts.map { .object([("path", path($0.path)), ("row", row($0.row))]) })))
        }
        if !s.rowMoves.isEmpty {
            fields.append(
                ("rowMoves", .array(s.rowMoves.map { .object([("from", path($0.from)), ("to", path($0.to))]) })))
        }
        if !s.rowUpdates.isEmpty {
            fields.append(
                ("rowUpdates", .array(s.rowUpdates.map { .object([("path", path($0.path)), ("row", row($0.row))]) })))
        }
        return .object(fields)
    }

    static func reaction(_ r: ClientReaction) -> JSON {
        switch r {
        case .retry: return .string("retry")
        case .resync: return .string("resync")
        case .giveUp: return .string("giveUp")
        case .refreshToken: return .string("refreshToken")
        case .backoff(let ms): return .object([("backoffMilliseconds", .int(ms))])
        }
    }

    static func optionalString(_ s: String?) -> JSON { s.map { .string($0) } ?? .null }

    static func message(_ m: Message) -> JSON {
        func o(_ fields: [(String, JSON)]) -> JSON { .object([("type", .string("\(m.type)"))] + fields) }
        switch m {
        case .hello(let h):
            return o([
                ("minVersion", .int(h.minVersion)), ("maxVersion", .int(h.maxVersion)),
                ("clientName", .string(h.clientName)),
                ("clientID", .string(h.clientID)), ("authToken", optionalString(h.authToken)),
            ])
        case .welcome(let w):
            let l = w.limits
            return o([
                ("version", .int(w.version)), ("serverName", .string(w.serverName)),
                (
                    "limits",
                    .object([
                        ("maxFrameBytes", .int(l.maxFrameBytes)), ("maxInflatedBytes", .int(l.maxInflatedBytes)),
                        ("maxOpsPerMutation", .int(l.maxOpsPerMutation)),
                        ("maxListsPerConnection", .int(l.maxListsPerConnection)),
                        ("maxListNameBytes", .int(l.maxListNameBytes)), ("maxIDBytes", .int(l.maxIDBytes)),
                        ("maxPayloadBytes", .int(l.maxPayloadBytes)),
                    ])
                ),
                ("heartbeatMilliseconds", .int(w.heartbeatMilliseconds)),
                (
                    "dictionary",
                    w.dictionary.isEmpty
                        ? .string("")
                        : .object([
                            ("bytes", .int(w.dictionary.count)),
                            ("adler32", .int(CompressionDictionary(w.dictionary).id)),
                        ])
                ),
            ])
        case .subscribe(let s):
            return o([
                ("listName", .string(s.listName)), ("resumeFrom", s.resumeFrom.map(version) ?? .null),
                ("digest", s.digest.map(digest) ?? .null),
            ])
        case .unsubscribe(let u): return o([("listName", .string(u.listName))])
        case .snapshot(let s):
            return o([
                ("listName", .string(s.listName)), ("position", version(s.position)), ("digest", digest(s.digest)),
                ("reason", .string("\(s.reason)")), ("sections", .array(s.sections.map(section))),
            ])
        case .diff(let d):
            return o([
                ("listName", .string(d.listName)), ("epoch", .int(d.epoch)), ("fromVersion", .int(d.fromVersion)),
                ("toVersion", .int(d.toVersion)),
                ("digest", digest(d.digest)), ("stages", .array(d.changeset.stages.map(stage))),
                (
                    "mutations",
                    .array(d.mutations.map { .object([("clientID", .string($0.clientID)), ("seq", .int($0.seq))]) })
                ),
            ])
        case .mutate(let x):
            return o([
                ("listName", .string(x.listName)), ("clientID", .string(x.clientID)), ("seq", .int(x.seq)),
                ("base", version(x.base)),
                ("operations", .array(x.operations.map(operation))),
            ])
        case .ack(let a):
            return o([("listName", .string(a.listName)), ("seq", .int(a.seq)), ("committed", version(a.committed))])
        case .reject(let r):
            return o([
                ("listName", .string(r.listName)), ("seq", .int(r.seq)), ("code", .int(r.code.rawValue)),
                ("message", .string(r.message)),
            ])
        case .error(let e):
            return o([
                ("code", .int(e.code.rawValue)), ("message", .string(e.message)), ("reaction", reaction(e.reaction)),
                ("listName", optionalString(e.listName)), ("closesConnection", .bool(e.closesConnection)),
            ])
        case .ping(let p): return o([("nonce", .int(p.nonce))])
        case .pong(let p): return o([("nonce", .int(p.nonce))])
        case .notice(let n):
            return o([
                ("kind", .string("\(n.kind)")), ("message", .string(n.message)),
                ("delayMilliseconds", .int(n.delayMilliseconds)),
            ])
        case .statsRequest(let r):
            return o([("requestID", .int(r.requestID)), ("listName", optionalString(r.listName))])
        case .refreshToken(let r): return o([("token", .string(r.token))])
        case .statsReply(let r):
            return o([
                ("requestID", .int(r.requestID)),
                (
                    "entries",
                    .array(r.entries.map { .object([("name", .string($0.name)), ("value", .int($0.value))]) })
                ),
            ])
        case .backupRequest(let r): return o([("requestID", .int(r.requestID)), ("directory", .string(r.directory))])
        case .backupReply(let r):
            return o([
                ("requestID", .int(r.requestID)), ("failure", r.failure.map { .int($0.rawValue) } ?? .null),
                ("message", .string(r.message)),
                ("lists", .int(r.lists)), ("bytes", .int(r.bytes)),
            ])
        }
    }
}
