import FlowSyncCore
import FlowSyncProtocol

/// What a client keeps on disk for one list's confirmed state: the server's state at
/// ``position``, whose digest is ``digest``.
struct PersistedReplica: Sendable, Equatable {
    var name: String
    var position: ListVersion
    var confirmed: Director

    static func == (a: PersistedReplica, b: PersistedReplica) -> Bool {
        a.name == b.name && a.position == b.position && a.confirmed == b.confirmed
    }
}

/// What a client keeps on disk for one list's writes: every write the persisted replica
/// does not contain, oldest first, and the next `seq` the client would use.
///
/// A write committed after the persisted replica's position stays here (with
/// ``PendingWrite/ackedAt`` set to the version it committed at) until a replica at or
/// past that version is on disk: so a relaunch shows it, and never shows it twice.
struct PersistedPending: Sendable, Equatable {
    var name: String
    var nextSeq: UInt64
    var writes: [PendingWrite]

    static func == (a: PersistedPending, b: PersistedPending) -> Bool {
        a.name == b.name && a.nextSeq == b.nextSeq && a.writes.count == b.writes.count
            && zip(a.writes, b.writes).allSatisfy { $0.seq == $1.seq && $0.anchored == $1.anchored && $0.sent == $1.sent && $0.ackedAt == $1.ackedAt }
    }
}

/// Why a replica or pending file was not used.
struct ReplicaFileError: Error, Equatable, CustomStringConvertible {
    let message: String
    var description: String { message }
}

/// The byte format of the client's persisted files (docs/SDK.md, "Offline"). Pure: bytes
/// in, values out; the I/O is `ReplicaDirectory`'s.
///
/// ```
/// file    = magic(4) formatVersion(u8) body checksum(u64, XXH64 of everything before)
/// replica : magic "FSR1", body = frameLength(varint) frame   — a protocol Snapshot frame
///           (name, position, digest, sections; deflated like any Snapshot)
/// pending : magic "FSP1", body = name(string) nextSeq(u64) count(varint) write*
/// write   = seq(u64) flags(u8: 1 sent, 2 acked) [ackedAt(u64 u64)] [mutateFrame(bytes)]
///           anchoredCount(varint) anchoredOperation*
/// ```
///
/// Integers are big-endian, varints LEB128, strings and byte arrays varint-length-prefixed.
/// A file that is short, has a wrong magic or version, fails its checksum, or whose
/// content does not add up (a Snapshot whose sections do not have its digest) is refused
/// with a ``ReplicaFileError``: the client then starts that list from the server, and the
/// next write replaces the file.
enum ReplicaFileFormat {
    static let replicaMagic: [UInt8] = Array("FSR1".utf8)
    static let pendingMagic: [UInt8] = Array("FSP1".utf8)
    static let formatVersion: UInt8 = 1

    /// Decoding limits for the embedded frames: the file was written by this client, so
    /// only the checksum's and the allocation guards' bounds matter.
    static let frameLimits = DecoderLimits(
        maxFrameBytes: Int(UInt32.max), maxInflatedBytes: Int(UInt32.max), maxListNameBytes: 1 << 20,
        maxIDBytes: 1 << 20, maxKindBytes: 1 << 20, maxPayloadBytes: 1 << 30, maxTextBytes: 1 << 20,
        maxOpsPerMutation: 1 << 24, maxSectionsPerMessage: 1 << 24, maxRowsPerMessage: 1 << 30,
        maxChangesPerMessage: 1 << 30)

    // MARK: Replica

    /// The replica file's bytes. Deflated at level 1 (about 4× smaller at 120 MB/s,
    /// docs/BENCHMARKS.md), with the protocol's standard dictionary.
    static func encode(_ replica: PersistedReplica) -> [UInt8] {
        let encoder = FrameEncoder(configuration: CompressionConfiguration(threshold: 64, level: 1, dictionary: .standard))
        let frame = encoder.encode(.snapshot(Snapshot(listName: replica.name, position: replica.position, digest: replica.confirmed.digest,
                                                      reason: .freshSubscribe, sections: replica.confirmed.sections)))
        var out = FileWriter(magic: replicaMagic)
        out.bytes(frame)
        return out.finish()
    }

    /// The replica in `bytes`.
    /// - Throws: ``ReplicaFileError`` for anything but an intact file of this format.
    static func decodeReplica(_ bytes: [UInt8]) throws(ReplicaFileError) -> PersistedReplica {
        var reader = try FileReader(bytes, magic: replicaMagic)
        let frame = try reader.bytes("snapshot frame")
        try reader.end()
        guard case .snapshot(let snapshot) = try decodeFrame(frame, "snapshot") else {
            throw ReplicaFileError(message: "the replica file holds no Snapshot")
        }
        guard let director = try? Director(sections: snapshot.sections, limits: ListReplica.limits),
              director.digest == snapshot.digest else {
            throw ReplicaFileError(message: "the replica's sections do not have its digest")
        }
        return PersistedReplica(name: snapshot.listName, position: snapshot.position, confirmed: director)
    }

    // MARK: Pending writes

    /// The pending file's bytes.
    static func encode(_ pending: PersistedPending) -> [UInt8] {
        var out = FileWriter(magic: pendingMagic)
        out.string(pending.name)
        out.u64(pending.nextSeq)
        out.varint(UInt64(pending.writes.count))
        let encoder = FrameEncoder(configuration: .disabled)
        for write in pending.writes {
            out.u64(write.seq)
            out.u8((write.sent == nil ? 0 : 1) | (write.ackedAt == nil ? 0 : 2))
            if let acked = write.ackedAt { out.version(acked) }
            if let sent = write.sent { out.bytes(encoder.encode(.mutate(sent))) }
            out.varint(UInt64(write.anchored.count))
            for operation in write.anchored { out.anchored(operation) }
        }
        return out.finish()
    }

    /// The pending writes in `bytes`.
    /// - Throws: ``ReplicaFileError`` for anything but an intact file of this format.
    static func decodePending(_ bytes: [UInt8]) throws(ReplicaFileError) -> PersistedPending {
        var reader = try FileReader(bytes, magic: pendingMagic)
        let name = try reader.string("list name")
        let nextSeq = try reader.u64("next seq")
        let count = try reader.count("writes")
        var writes: [PendingWrite] = []
        for _ in 0..<count {
            let seq = try reader.u64("seq")
            let flags = try reader.u8("flags")
            guard flags & ~3 == 0 else { throw ReplicaFileError(message: "unknown write flags \(flags)") }
            let acked = flags & 2 != 0 ? try reader.version() : nil
            var sent: Mutate?
            if flags & 1 != 0 {
                guard case .mutate(let mutate) = try decodeFrame(try reader.bytes("mutate frame"), "mutate"),
                      mutate.seq == seq, mutate.listName == name else {
                    throw ReplicaFileError(message: "write \(seq): its Mutate does not match it")
                }
                sent = mutate
            }
            let operations = try reader.count("operations")
            var anchored: [AnchoredOperation] = []
            for _ in 0..<operations { anchored.append(try reader.anchored()) }
            writes.append(PendingWrite(seq: seq, anchored: anchored, sent: sent, ackedAt: acked))
        }
        try reader.end()
        return PersistedPending(name: name, nextSeq: nextSeq, writes: writes)
    }

    // MARK: Restoring

    /// The list `name` as the two files' bytes (`nil`: no file) describe it, and why
    /// any file was left out (damaged, truncated, of another list). `nil` when neither
    /// file is usable.
    static func restore(list name: String, replica: [UInt8]?, pending: [UInt8]?) -> (restored: RestoredList?, discarded: [String]) {
        var discarded: [String] = []
        /// The decoded file, when there is one, it is intact and it holds list `name`.
        func use<T>(_ bytes: [UInt8]?, _ what: String, _ decode: ([UInt8]) throws(ReplicaFileError) -> T, name listName: (T) -> String) -> T? {
            guard let bytes else { return nil }
            do throws(ReplicaFileError) {
                let decoded = try decode(bytes)
                guard listName(decoded) == name else { throw ReplicaFileError(message: "it holds list \"\(listName(decoded))\"") }
                return decoded
            } catch {
                discarded.append("\(what): \(error)")
                return nil
            }
        }
        let replica = use(replica, "replica file", decodeReplica, name: \.name)
        let pending = use(pending, "pending-writes file", decodePending, name: \.name)
        guard replica != nil || pending != nil else { return (nil, discarded) }
        let restored = RestoredList(confirmed: replica?.confirmed ?? Director(limits: ListReplica.limits), position: replica?.position,
                                    pending: pending?.writes ?? [], nextSeq: pending?.nextSeq ?? 0)
        return (restored, discarded)
    }

    private static func decodeFrame(_ frame: [UInt8], _ what: String) throws(ReplicaFileError) -> Message {
        let decoder = FrameDecoder(limits: frameLimits, dictionary: .standard)
        decoder.feed(frame)
        let message: Message?
        do throws(ProtocolError) {
            message = try decoder.next()
        } catch {
            throw ReplicaFileError(message: "the \(what) frame does not decode: \(error)")
        }
        guard let message, decoder.bufferedByteCount == 0 else {
            throw ReplicaFileError(message: "the \(what) frame is incomplete")
        }
        return message
    }
}

// MARK: - Primitive writer and reader

/// Appends the primitives of ``ReplicaFileFormat``; ``finish()`` adds the checksum.
private struct FileWriter {
    private(set) var buffer: [UInt8]

    init(magic: [UInt8]) {
        buffer = magic
        buffer.append(ReplicaFileFormat.formatVersion)
    }

    mutating func u8(_ v: UInt8) { buffer.append(v) }

    mutating func u64(_ v: UInt64) {
        for shift in stride(from: 56, through: 0, by: -8) { buffer.append(UInt8(truncatingIfNeeded: v >> UInt64(shift))) }
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
        if let b { u8(1); bytes(b) } else { u8(0) }
    }

    mutating func version(_ v: ListVersion) { u64(v.epoch); u64(v.version) }

    mutating func strings(_ list: [String]) {
        varint(UInt64(list.count))
        for s in list { string(s) }
    }

    mutating func anchor(_ a: Anchor) { strings(a.after); strings(a.before) }

    mutating func rows(_ rows: some Collection<Row>) {
        varint(UInt64(rows.count))
        for row in rows { string(row.id); string(row.kind); bytes(row.payload) }
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
        case .setSections(let s): u8(0); sections(s)
        case .insertSections(let s, let at): u8(1); sections(s); anchor(at)
        case .removeSections(let ids): u8(2); strings(ids)
        case .removeAllSections: u8(3)
        case .moveSection(let id, let to): u8(4); string(id); anchor(to)
        case .swapSections(let a, let b): u8(5); string(a); string(b)
        case .setHeader(let id, let h): u8(6); string(id); optionalBytes(h)
        case .setFooter(let id, let f): u8(7); string(id); optionalBytes(f)
        case .setRows(let r, let id): u8(8); rows(r); string(id)
        case .insertRows(let r, let id, let at): u8(9); rows(r); string(id); anchor(at)
        case .replaceRow(let id, let row): u8(10); string(id); rows(CollectionOfOne(row))
        case .removeRows(let ids): u8(11); strings(ids)
        case .removeAllRows(let id): u8(12); string(id)
        case .moveRow(let id, let section, let at): u8(13); string(id); string(section); anchor(at)
        case .swapRows(let a, let b): u8(14); string(a); string(b)
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
private struct FileReader {
    private let buffer: [UInt8]
    private var offset: Int
    /// Where the body ends (the checksum follows).
    private let bodyEnd: Int

    init(_ bytes: [UInt8], magic: [UInt8]) throws(ReplicaFileError) {
        guard bytes.count >= magic.count + 1 + 8 else { throw ReplicaFileError(message: "the file is too short (\(bytes.count) bytes)") }
        guard Array(bytes[0..<magic.count]) == magic else { throw ReplicaFileError(message: "not a FlowSync client file (magic)") }
        guard bytes[magic.count] == ReplicaFileFormat.formatVersion else {
            throw ReplicaFileError(message: "format version \(bytes[magic.count]) is not \(ReplicaFileFormat.formatVersion)")
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
        guard offset == bodyEnd else { throw ReplicaFileError(message: "\(bodyEnd - offset) unexpected bytes after the content") }
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
            guard shift < 64, shift < 63 || byte <= 1 else { throw ReplicaFileError(message: "\(what): varint overflows") }
            result |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return result }
            shift += 7
        }
    }

    /// A count of elements that each take at least one byte.
    mutating func count(_ what: String) throws(ReplicaFileError) -> Int {
        let n = try varint(what)
        guard n <= UInt64(bodyEnd - offset) else { throw ReplicaFileError(message: "\(what): count \(n) exceeds the bytes left") }
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
            guard replacement.count == 1 else { throw ReplicaFileError(message: "replaceRow carries \(replacement.count) rows") }
            return .replaceRow(id, with: replacement[0])
        case 11: return .removeRows(try strings("row ids"))
        case 12: return .removeAllRows(in: try string("section id"))
        case 13: return .moveRow(try string("row id"), toSection: try string("section id"), at: try anchor())
        case 14: return .swapRows(try string("row id"), try string("row id"))
        case let tag: throw ReplicaFileError(message: "unknown operation tag \(tag)")
        }
    }
}
