import FlowSyncCore

/// Seeded generators of directors and operation groups for property tests and
/// benchmarks. IDs come from counters, so generated rows never clash unless a test
/// asks for it (`validOnly: false` mixes in references that do not exist).
public struct DirectorGenerator {
    public var random: SeededRandom
    private var counter = 0
    /// Prepended to every generated ID, so several generators (several writers) never
    /// mint the same ID.
    public let idPrefix: String

    public init(seed: UInt64, idPrefix: String = "") {
        random = SeededRandom(seed: seed)
        self.idPrefix = idPrefix
    }

    /// A fresh, unused ID with a prefix.
    public mutating func freshID(_ prefix: String) -> String {
        counter += 1
        return "\(idPrefix)\(prefix)\(counter)"
    }

    /// A small random payload (JSON-like text).
    public mutating func payload() -> [UInt8] {
        Array("{\"v\":\(random.int(0..<4))}".utf8)
    }

    public mutating func row() -> Row {
        Row(id: freshID("r"), kind: random.chance(0.2) ? "other" : "cell", payload: payload())
    }

    public mutating func header() -> [UInt8]? {
        random.chance(0.5) ? nil : Array("h\(random.int(0..<3))".utf8)
    }

    public mutating func section(rows: Int) -> Section {
        Section(id: freshID("s"), header: header(), footer: header(), rows: (0..<rows).map { _ in row() })
    }

    /// A director of one of several shapes: empty, one section, or many sections of
    /// varied (possibly zero) length.
    /// Two random states for a whole-list replacement (catch-up, resync): mostly
    /// unrelated, but 70 % of the time the second also holds the first's first section
    /// (new header, rows shuffled), so the diff has moves and updates, not only deletes
    /// and inserts.
    public mutating func unrelatedPair() -> (Director, Director) {
        let a = director()
        var b = director()
        if let section = a.sections.first, random.chance(0.7) {
            var shared = section
            shared.header = header()
            _ = try? b.apply([
                .insertSections(
                    [Section(id: shared.id, header: shared.header, rows: shared.rows.shuffled(using: &random))], at: 0)
            ])
        }
        return (a, b)
    }

    public mutating func director() -> Director {
        let shape = random.int(0..<6)
        let sectionCount: Int
        switch shape {
        case 0: sectionCount = 0
        case 1: sectionCount = 1
        default: sectionCount = random.int(1...6)
        }
        let sections = (0..<sectionCount).map { _ in section(rows: random.chance(0.2) ? 0 : random.int(0...8)) }
        return try! Director(sections: sections)
    }

    /// A row reference into `d`, or `nil` when it has no rows.
    mutating func rowRef(_ d: Director) -> RowRef? {
        let nonEmpty = d.sections.indices.filter { !d.sections[$0].rows.isEmpty }
        guard let s = nonEmpty.randomElement(using: &random) else { return nil }
        let r = random.int(0..<d.sections[s].rows.count)
        if random.chance(0.5) { return .id(d.sections[s].rows[r].id) }
        return .index(r, in: sectionRef(d, s))
    }

    mutating func sectionRef(_ d: Director, _ s: Int) -> SectionRef {
        random.chance(0.5) ? .id(d.sections[s].id) : .index(s)
    }

    /// One operation that is valid against `d` (most of the time; a few kinds may be
    /// invalid by construction when `validOnly` is false, to exercise rollback).
    public mutating func operation(for d: Director, validOnly: Bool = true) -> Operation {
        if !validOnly && random.chance(0.08) {
            switch random.int(0..<4) {
            case 0: return .removeRows([.id("missing")])
            case 1: return .insertSections([Section(id: d.sections.first?.id ?? "dup")], at: 0)
            case 2: return .moveSection(.index(d.sections.count + 1), to: 0)
            default: return .insertRows([Row(id: d.sections.first?.rows.first?.id ?? "x")], in: .index(0), at: 0)
            }
        }
        let sections = d.sections.count
        if sections == 0 {
            return random.chance(0.8)
                ? .insertSections((0..<random.int(1...2)).map { _ in section(rows: random.int(0...4)) }, at: 0)
                : .setSections((0..<random.int(0...3)).map { _ in section(rows: random.int(0...4)) })
        }
        let s = random.int(0..<sections)
        let count = d.sections[s].rows.count
        switch random.int(0..<20) {
        case 0: return .insertSections([section(rows: random.int(0...3))], at: random.int(0...sections))
        case 1: return .removeSections([sectionRef(d, s)])
        case 2: return .moveSection(sectionRef(d, s), to: random.int(0..<sections))
        case 3: return .swapSections(sectionRef(d, s), sectionRef(d, random.int(0..<sections)))
        case 4: return .setHeader(sectionRef(d, s), header())
        case 5: return .setFooter(sectionRef(d, s), header())
        case 6:
            if random.chance(0.3) { return .removeAllSections }
            // Replace the sections, keeping some (reordered, edited) and adding new ones.
            var kept = d.sections.filter { _ in random.chance(0.6) }.shuffled(using: &random)
            for k in kept.indices where random.chance(0.3) { kept[k].header = header() }
            kept.append(contentsOf: (0..<random.int(0...2)).map { _ in section(rows: random.int(0...3)) })
            return .setSections(kept)
        case 7:
            if random.chance(0.3) { return .removeAllRows(in: sectionRef(d, s)) }
            var rows = d.sections[s].rows.filter { _ in random.chance(0.7) }.shuffled(using: &random)
            for k in rows.indices where random.chance(0.3) {
                rows[k] = Row(id: rows[k].id, kind: rows[k].kind, payload: payload())
            }
            rows.insert(contentsOf: (0..<random.int(0...2)).map { _ in row() }, at: random.int(0...rows.count))
            return .setRows(rows, in: sectionRef(d, s))
        case 8, 9, 10:
            return .insertRows(
                (0..<random.int(1...3)).map { _ in row() }, in: sectionRef(d, s), at: random.int(0...count))
        case 11, 12:
            guard let ref = rowRef(d) else { return .insertRows([row()], in: sectionRef(d, s), at: 0) }
            if random.chance(0.3), let other = rowRef(d), other != ref { return .removeRows([ref, other]) }
            return .removeRows([ref])
        case 13, 14:
            guard let ref = rowRef(d) else { return .insertRows([row()], in: sectionRef(d, s), at: 0) }
            guard let old = d.path(of: ref) else { return .removeRows([ref]) }
            let keepID = random.chance(0.85)
            let id = keepID ? d[old].id : freshID("r")
            return .replaceRow(ref, with: Row(id: id, kind: d[old].kind, payload: payload()))
        case 15, 16, 17:
            // Move within a section or across sections.
            guard let ref = rowRef(d), let from = d.path(of: ref) else { return .setHeader(sectionRef(d, s), header()) }
            let target = random.chance(0.5) ? from.section : s
            let capacity = d.sections[target].rows.count - (target == from.section ? 1 : 0)
            return .moveRow(ref, toSection: sectionRef(d, target), at: random.int(0...capacity))
        default:
            guard let a = rowRef(d), let b = rowRef(d) else {
                return .insertRows([row()], in: sectionRef(d, s), at: count)
            }
            return .swapRows(a, b)
        }
    }

    /// A group of 1…`maxOps` operations, each generated against the state left by the
    /// previous one (so a valid group stays valid as a whole).
    public mutating func group(for d: Director, maxOps: Int = 6, validOnly: Bool = true) -> [Operation] {
        var scratch = d
        var ops: [Operation] = []
        for _ in 0..<random.int(1...maxOps) {
            let op = operation(for: scratch, validOnly: validOnly)
            ops.append(op)
            _ = try? scratch.apply([op])
        }
        return ops
    }
}
