import FlowSyncCore

/// Generates a writer's mutations for one list, following an ``OperationMix``.
///
/// Every mutation is written "at head" (base epoch 0) and refers to sections and rows
/// **by ID**, so it means the same whatever other writers committed before it and a
/// writer may pipeline several without waiting for acks (docs/PROTOCOL.md, "Base").
/// To stay valid under any interleaving, a writer only touches what it owns:
/// - rows it inserted, and the initial rows assigned to it (``initialRows(list:)``);
/// - the shared sections `s0…` (never removed) and sections it created itself.
/// Inserts and moves go to position 0 of their section, which exists in every state.
/// So a mutation can only fail if an earlier one of the same writer failed: the load
/// run counts every Reject, and a healthy run has none.
///
/// A value: each writer owns its own.
public struct OperationGenerator: Sendable {
    /// The writer's identity (its client ID names its rows and sections).
    public let writerID: String
    private let mix: OperationMix
    private let payloadBytes: Int
    private let sharedSections: [String]
    private var random: SplitMix64
    /// Owned rows, flat for O(1) random picks and swap-removal.
    private var rows: [String] = []
    private var rowPosition: [String: Int] = [:]
    private var sectionOfRow: [String: String] = [:]
    /// Sections this writer created and has not removed.
    private var ownSections: [String] = []
    private var nextRow = 0
    private var nextSection = 0
    private var nextPayload = 0

    /// A generator for writer `writerID` on a list whose shared sections are
    /// `sharedSections`, owning `ownedRows` (row ID, section ID) at the start.
    public init(
        writerID: String, sharedSections: [String], ownedRows: [(row: String, section: String)], mix: OperationMix,
        payloadBytes: Int, seed: UInt64
    ) {
        precondition(!sharedSections.isEmpty, "a list needs at least one shared section")
        self.writerID = writerID
        self.sharedSections = sharedSections
        self.mix = mix
        self.payloadBytes = payloadBytes
        self.random = SplitMix64(seed: seed ^ XXH64.hash(writerID))
        for (row, section) in ownedRows { own(row, in: section) }
    }

    /// Rows this writer owns now.
    public var ownedRowCount: Int { rows.count }

    /// The sections of a list's initial state and their rows: `sections` shared
    /// sections `s0…`, `rows` rows `i0…` dealt round robin over the sections. Row `k`
    /// belongs to writer `k % writers` of the list (see ``initialOwnership(rows:sections:writers:writer:)``).
    public static func initialSections(rows: Int, sections: Int, payloadBytes: Int) -> [Section] {
        var result: [[Row]] = Array(repeating: [], count: sections)
        for k in 0..<rows {
            result[k % sections].append(
                Row(id: "i\(k)", kind: "item", payload: payload(writer: "init", serial: k, bytes: payloadBytes)))
        }
        return (0..<sections).map { Section(id: "s\($0)", rows: result[$0]) }
    }

    /// The shared section IDs of a list with `sections` sections.
    public static func sharedSectionIDs(_ sections: Int) -> [String] { (0..<sections).map { "s\($0)" } }

    /// The initial rows writer number `writer` (0-based among the list's `writers`) owns.
    public static func initialOwnership(
        rows: Int, sections: Int, writers: Int, writer: Int
    ) -> [(row: String, section: String)] {
        guard writers > 0 else { return [] }
        return stride(from: writer, to: rows, by: writers).map { ("i\($0)", "s\($0 % sections)") }
    }

    /// A JSON-like payload of exactly `bytes` bytes (at least 2).
    public static func payload(writer: String, serial: Int, bytes: Int) -> [UInt8] {
        var text = Array("{\"w\":\"\(writer)\",\"n\":\(serial),\"pad\":\"".utf8)
        if text.count + 2 > bytes { text = Array("{}".utf8) }
        var out = text
        out.reserveCapacity(max(bytes, out.count))
        let letters = Array("abcdefghijklmnopqrstuvwxyz".utf8)
        var i = UInt(bitPattern: serial)
        while out.count < bytes - 2 {
            out.append(letters[Int(i % UInt(letters.count))])
            i = i &* 7 &+ 3
        }
        if text.count > 2 { out.append(contentsOf: Array("\"}".utf8)) }
        if out.count > bytes { out.removeLast(out.count - bytes) }
        while out.count < bytes { out.append(UInt8(ascii: " ")) }
        return out
    }

    /// The next mutation's operations (`count` of them, applied in order).
    public mutating func nextOperations(count: Int) -> [FlowSyncCore.Operation] {
        (0..<count).map { _ in nextOperation() }
    }

    /// The next operation, updating what this writer owns as if it were committed.
    public mutating func nextOperation() -> FlowSyncCore.Operation {
        var kind = mix.kind(forRoll: Int(random.next() % 100))
        if rows.isEmpty, kind != .section { kind = .insert }
        switch kind {
        case .insert:
            let section = anySection()
            let id = "\(writerID)-\(nextRow)"
            nextRow += 1
            own(id, in: section)
            return .insertRows([newRow(id)], in: .id(section), at: 0)
        case .remove:
            let id = anyRow()
            disown(id)
            return .removeRows([.id(id)])
        case .move:
            let id = anyRow()
            return .moveRow(.id(id), toSection: .id(sectionOfRow[id]!), at: 0)
        case .update:
            let id = anyRow()
            return .replaceRow(.id(id), with: newRow(id))
        case .crossSectionMove:
            let id = anyRow()
            let from = sectionOfRow[id]!
            let candidates = sharedSections.count + ownSections.count
            var to = anySection()
            if candidates > 1, to == from {
                // Pick again among the others (deterministic: the next one round the ring).
                let all = sharedSections + ownSections
                to = all[(all.firstIndex(of: from)! + 1) % all.count]
            }
            disown(id)
            own(id, in: to)
            return .moveRow(.id(id), toSection: .id(to), at: 0)
        case .section:
            return nextSectionOperation()
        }
    }

    private mutating func anyRow() -> String {
        rows[Int(random.next() % UInt64(rows.count))]
    }

    private mutating func anySection() -> String {
        let total = sharedSections.count + ownSections.count
        let k = Int(random.next() % UInt64(total))
        return k < sharedSections.count ? sharedSections[k] : ownSections[k - sharedSections.count]
    }

    private mutating func nextSectionOperation() -> FlowSyncCore.Operation {
        let roll = random.next() % 3
        if ownSections.count < 2 || roll == 0 {
            let id = "\(writerID)-S\(nextSection)"
            nextSection += 1
            ownSections.append(id)
            return .insertSections([Section(id: id, header: Array("section \(id)".utf8))], at: 0)
        }
        let pick = Int(random.next() % UInt64(ownSections.count))
        let id = ownSections[pick]
        if roll == 1 {
            ownSections.remove(at: pick)
            for row in rows.filter({ sectionOfRow[$0] == id }) { disown(row) }
            return .removeSections([.id(id)])
        }
        nextPayload += 1
        return .setHeader(.id(id), Array("section \(id) #\(nextPayload)".utf8))
    }

    private mutating func newRow(_ id: String) -> Row {
        nextPayload += 1
        return Row(
            id: id, kind: "item", payload: Self.payload(writer: writerID, serial: nextPayload, bytes: payloadBytes))
    }

    private mutating func own(_ row: String, in section: String) {
        rowPosition[row] = rows.count
        rows.append(row)
        sectionOfRow[row] = section
    }

    private mutating func disown(_ row: String) {
        guard let index = rowPosition.removeValue(forKey: row) else {
            preconditionFailure("Internal inconsistency in OperationGenerator: \(row) is not owned")
        }
        let last = rows.removeLast()
        if last != row {
            rows[index] = last
            rowPosition[last] = index
        }
        sectionOfRow[row] = nil
    }
}
