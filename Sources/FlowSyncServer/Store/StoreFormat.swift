import FlowSyncCore
import FlowSyncProtocol

/// The on-disk format of the file store, version 1 (docs/STORAGE.md is the spec).
/// All integers little-endian.
///
/// Log segment (`log-<generation>.fsl`):
/// ```
/// header: "FSYNCLOG" u16 format=1 u16 flags=0 u64 epoch u64 firstVersion
///         u16 nameLength name(UTF-8) u32 crc32c(header so far)
/// record: u32 bodyLength u32 crc32c(bodyLength bytes ‖ body) body
/// body:   u8 kind=1 (batch), then one FlowSync protocol `Diff` frame, exactly as
///         sent to subscribers (deflated with the standard dictionary when that paid)
/// ```
/// Snapshot (`snap-<generation>.fss`), one CRC over the whole file:
/// ```
/// "FSYNCSNP" u16 format=1 u16 flags=0 u64 epoch u64 version u16 nameLength name
/// u32 frameLength, a protocol `Snapshot` frame (sections, position, digest)
/// u32 clients, per client: u16 idLength id u8 hasForgotten u64 forgottenBelow
///     u32 entries, per entry: u64 seq u64 epoch u64 version
/// u32 crc32c(everything before)
/// ```
/// Reserved values are refused, never ignored, even when the checksum agrees: the
/// `flags` of the segment header and the snapshot (must be 0), a record kind other than 1,
/// a snapshot client's `hasForgotten` other than 0 or 1 (and `forgottenBelow` ≠ 0 when it
/// is 0). They are how a later format would mark a change an older daemon must not
/// misread.
///
/// The clean-stop manifest (`STOPPED`) has a format of its own: ``CleanStopManifest``.
///
/// Why reuse protocol frames: the codec is already specified, fuzzed and tested against
/// golden vectors, and the diff frame is already encoded for fan-out — the store writes
/// the same bytes and pays no second encode.
enum StoreFormat {
    static let formatVersion: UInt16 = 1
    static let logMagic = Array("FSYNCLOG".utf8)
    static let snapshotMagic = Array("FSYNCSNP".utf8)
    static let batchKind: UInt8 = 1
    /// Bytes before a record's body.
    static let recordHeaderBytes = 8
    /// Largest record body accepted (a corrupt length beyond it is damage, not a record).
    static let maxRecordBytes = 1 << 30

    /// Frames in the store are never limited like client input: they were written by
    /// this daemon, and a lowered limit must not make them unreadable. The checksum
    /// guards against damage.
    static let decoderLimits = DecoderLimits(
        maxFrameBytes: Int(Int32.max), maxInflatedBytes: Int(Int32.max), allowCompressed: true,
        maxListNameBytes: 65_535, maxIDBytes: Int(Int32.max), maxKindBytes: Int(Int32.max),
        maxPayloadBytes: Int(Int32.max),
        maxTextBytes: Int(Int32.max), maxDictionaryBytes: Int(Int32.max), maxOpsPerMutation: Int(Int32.max),
        maxSectionsPerMessage: Int(Int32.max), maxRowsPerMessage: Int(Int32.max), maxChangesPerMessage: Int(Int32.max),
        maxStagesPerChangeset: Int(Int32.max), maxMutationsPerDiff: Int(Int32.max), maxStatsEntries: 0)

    /// How the store encodes frames it was not handed (snapshots, tests' batches).
    static let compression = CompressionConfiguration(threshold: 64, level: 1, dictionary: .standard)

    // MARK: Segment header

    struct SegmentHeader: Equatable {
        var epoch: UInt64
        var firstVersion: UInt64
        var listName: String
    }

    static func encode(_ header: SegmentHeader) -> [UInt8] {
        var w = StoreWriter()
        w.bytes(logMagic)
        w.u16(formatVersion)
        w.u16(0)
        w.u64(header.epoch)
        w.u64(header.firstVersion)
        w.string16(header.listName)
        w.u32(CRC32C.checksum(w.buffer))
        return w.buffer
    }

    /// What is wrong with a header or a whole-file structure (a snapshot, the clean-stop
    /// manifest): too short to hold one, or damaged at a byte offset.
    enum HeaderProblem: Error {
        case short
        case damaged(String, at: Int = 0)

        /// The reason and the byte offset, for a ``StoreError/corrupt(_:offset:_:)``.
        var reasonAndOffset: (String, Int) {
            switch self {
            case .short: return ("truncated", 0)
            case .damaged(let reason, let offset): return (reason, offset)
            }
        }
    }

    /// Byte offset of the `flags` field in a segment header, a snapshot and the
    /// clean-stop manifest (after the 8-byte magic and the u16 format).
    static let flagsOffset = 10

    /// Refuses reserved flags. They exist so a later format can mark a change an older
    /// daemon must not misread; format 1 defines none, so a set bit is damage (or a file
    /// from a newer daemon) — never something to ignore, even when the checksum agrees.
    static func checkReservedFlags(_ flags: UInt16, in what: String) throws(HeaderProblem) {
        guard flags == 0 else {
            throw .damaged(
                "\(what) flags 0x\(String(flags, radix: 16)) are reserved and must be 0 in format \(formatVersion)",
                at: flagsOffset)
        }
    }

    /// The header and its length in bytes.
    static func decodeSegmentHeader(_ bytes: [UInt8]) throws(HeaderProblem) -> (SegmentHeader, Int) {
        var r = StoreReader(bytes)
        guard let magic = r.bytes(8), let format = r.u16(), let flags = r.u16(), let epoch = r.u64(),
            let first = r.u64(),
            let name = r.string16(), let crc = r.u32()
        else { throw .short }
        guard magic == logMagic else { throw .damaged("not a FlowSync log (bad magic)") }
        guard crc == CRC32C.checksum(bytes[0..<(r.offset - 4)]) else {
            throw .damaged("log header fails its checksum", at: r.offset - 4)
        }
        guard format == formatVersion else {
            throw .damaged("log format \(format); this flowsyncd reads format \(formatVersion)", at: 8)
        }
        try checkReservedFlags(flags, in: "segment header")
        return (SegmentHeader(epoch: epoch, firstVersion: first, listName: name), r.offset)
    }

    // MARK: Records

    /// A record around a body (kind byte + frame).
    static func record(frame: [UInt8]) -> [UInt8] {
        let bodyLength = UInt32(frame.count + 1)
        var out: [UInt8] = []
        out.reserveCapacity(frame.count + 9)
        var w = StoreWriter()
        w.u32(bodyLength)
        var crc = CRC32C.checksum(w.buffer)
        crc = CRC32C.checksum(CollectionOfOne(batchKind), continuing: crc)
        crc = CRC32C.checksum(frame, continuing: crc)
        out += w.buffer
        withUnsafeBytes(of: crc.littleEndian) { out += $0 }
        out.append(batchKind)
        out += frame
        return out
    }

    /// Whether a well-formed record starts at `offset`: a plausible length, the body
    /// inside the file, the batch kind (any kind when `anyKind`) and a matching checksum.
    /// Returns the body length.
    ///
    /// `anyKind` tells a record of a kind format 1 does not define (checksum intact, so
    /// written that way: refused as corruption, never truncated as a torn write) from
    /// one that fails its checksum. The default checks the kind byte first, which also
    /// keeps the torn-tail scan (one attempt per byte offset) cheap.
    static func validRecord(in bytes: UnsafeRawBufferPointer, at offset: Int, anyKind: Bool = false) -> Int? {
        guard bytes.count - offset >= recordHeaderBytes + 1 else { return nil }
        let length = Int(bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self).littleEndian)
        guard length >= 1, length <= maxRecordBytes, length <= bytes.count - offset - recordHeaderBytes,
            anyKind || bytes[offset + recordHeaderBytes] == batchKind
        else { return nil }
        let stored = bytes.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self).littleEndian
        var crc = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + 4)]))
        crc = CRC32C.checksum(
            UnsafeRawBufferPointer(
                rebasing: bytes[(offset + recordHeaderBytes)..<(offset + recordHeaderBytes + length)]), continuing: crc)
        return crc == stored ? length : nil
    }

    // MARK: Snapshots

    static func encode(_ snapshot: StoredSnapshot, encoder: FrameEncoder) -> [UInt8] {
        var w = StoreWriter()
        w.bytes(snapshotMagic)
        w.u16(formatVersion)
        w.u16(0)
        w.u64(snapshot.position.epoch)
        w.u64(snapshot.position.version)
        w.string16(snapshot.listName)
        let frame = encoder.encode(
            .snapshot(
                Snapshot(
                    listName: snapshot.listName, position: snapshot.position, digest: snapshot.digest,
                    reason: .freshSubscribe, sections: snapshot.sections)))
        w.u32(UInt32(frame.count))
        w.bytes(frame)
        w.u32(UInt32(snapshot.dedupe.count))
        for client in snapshot.dedupe {
            w.string16(client.clientID)
            w.u8(client.forgottenBelow == nil ? 0 : 1)
            w.u64(client.forgottenBelow ?? 0)
            w.u32(UInt32(client.entries.count))
            for entry in client.entries {
                w.u64(entry.seq)
                w.u64(entry.version.epoch)
                w.u64(entry.version.version)
            }
        }
        w.u32(CRC32C.checksum(w.buffer))
        return w.buffer
    }

    /// Decodes a snapshot file; the message says what is wrong.
    static func decodeSnapshot(_ bytes: [UInt8]) throws(HeaderProblem) -> StoredSnapshot {
        guard bytes.count >= 12 else { throw .damaged("snapshot file of \(bytes.count) bytes") }
        let stored = bytes[(bytes.count - 4)...].withUnsafeBytes { $0.loadUnaligned(as: UInt32.self).littleEndian }
        guard CRC32C.checksum(bytes[0..<(bytes.count - 4)]) == stored else {
            throw .damaged("snapshot fails its checksum", at: bytes.count - 4)
        }
        var r = StoreReader(Array(bytes[0..<(bytes.count - 4)]))
        guard let magic = r.bytes(8), magic == snapshotMagic else {
            throw .damaged("not a FlowSync snapshot (bad magic)")
        }
        guard let format = r.u16(), format == formatVersion, let flags = r.u16() else {
            throw .damaged("unknown snapshot format", at: 8)
        }
        try checkReservedFlags(flags, in: "snapshot")
        guard let epoch = r.u64(), let version = r.u64(), let name = r.string16(), let frameLength = r.u32(),
            let frame = r.bytes(Int(frameLength))
        else { throw .damaged("snapshot header truncated") }
        let decoder = FrameDecoder(limits: decoderLimits, dictionary: .standard)
        decoder.feed(frame)
        let message: Message?
        do { message = try decoder.next() } catch { throw .damaged("snapshot frame: \(error)") }
        guard case .snapshot(let snapshot)? = message, snapshot.listName == name,
            snapshot.position == ListVersion(epoch: epoch, version: version)
        else { throw .damaged("snapshot frame does not match its header") }
        guard let clientCount = r.u32() else { throw .damaged("snapshot dedupe table truncated") }
        var clients: [DedupeWindow.ClientRecord] = []
        for _ in 0..<clientCount {
            guard let id = r.string16() else { throw .damaged("snapshot dedupe table truncated") }
            let flagOffset = r.offset
            guard let has = r.u8(), let below = r.u64(), let n = r.u32() else {
                throw .damaged("snapshot dedupe table truncated")
            }
            // hasForgotten is a boolean (0 or 1), and forgottenBelow is written as 0 when
            // it is absent: any other value was not written by format 1.
            guard has <= 1 else {
                throw .damaged("hasForgotten \(has) of client \"\(id)\" is not 0 or 1", at: flagOffset)
            }
            guard has == 1 || below == 0 else {
                throw .damaged(
                    "forgottenBelow of client \"\(id)\" is \(below) where hasForgotten = 0 reserves it as 0",
                    at: flagOffset + 1)
            }
            var entries: [DedupeWindow.ClientRecord.Entry] = []
            entries.reserveCapacity(Int(min(n, 1 << 20)))
            for _ in 0..<n {
                guard let seq = r.u64(), let e = r.u64(), let v = r.u64() else {
                    throw .damaged("snapshot dedupe table truncated")
                }
                entries.append(.init(seq: seq, version: ListVersion(epoch: e, version: v)))
            }
            clients.append(.init(clientID: id, forgottenBelow: has == 0 ? nil : below, entries: entries))
        }
        guard r.offset == r.count else {
            throw .damaged("\(r.count - r.offset) unexpected bytes at the end of the snapshot")
        }
        return StoredSnapshot(
            listName: name, position: snapshot.position, digest: snapshot.digest, sections: snapshot.sections,
            dedupe: clients)
    }

    // MARK: File names

    static func segmentName(_ generation: UInt64) -> String { "log-" + hex16(generation) + ".fsl" }
    static func snapshotName(_ generation: UInt64) -> String { "snap-" + hex16(generation) + ".fss" }

    /// The generation in a segment or snapshot file name.
    static func generation(of name: String, prefix: String, suffix: String) -> UInt64? {
        guard name.hasPrefix(prefix), name.hasSuffix(suffix),
            name.utf8.count == prefix.utf8.count + 16 + suffix.utf8.count
        else { return nil }
        return UInt64(name.dropFirst(prefix.count).dropLast(suffix.count), radix: 16)
    }

    static func hex16(_ v: UInt64) -> String {
        let s = String(v, radix: 16)
        return String(repeating: "0", count: 16 - s.count) + s
    }

    /// A list's directory name: the name itself where that is a safe file name,
    /// percent-escaped otherwise; a hash when that would be long (the full name is in
    /// every file's header).
    static func directoryName(for list: String) -> String {
        var out = ""
        for byte in list.utf8 {
            let c = Character(Unicode.Scalar(byte))
            if (c.isASCII && (c.isLetter || c.isNumber)) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
                || (byte == UInt8(ascii: ".") && !out.isEmpty)
            {
                out.append(c)
            } else {
                out += "%" + String(byte, radix: 16, uppercase: true).leftPadded(2)
            }
        }
        if out.utf8.count > 200 { return "~" + hex16(XXH64.hash(list)) }
        return out
    }
}

extension String {
    fileprivate func leftPadded(_ n: Int) -> String { String(repeating: "0", count: max(0, n - count)) + self }
}

/// Little-endian writer for store headers.
struct StoreWriter {
    var buffer: [UInt8] = []
    mutating func u8(_ v: UInt8) { buffer.append(v) }
    mutating func u16(_ v: UInt16) { withUnsafeBytes(of: v.littleEndian) { buffer += $0 } }
    mutating func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { buffer += $0 } }
    mutating func u64(_ v: UInt64) { withUnsafeBytes(of: v.littleEndian) { buffer += $0 } }
    mutating func bytes(_ b: [UInt8]) { buffer += b }
    mutating func string16(_ s: String) {
        let utf8 = Array(s.utf8.prefix(65_535))
        u16(UInt16(utf8.count))
        buffer += utf8
    }
}

/// Little-endian reader; every read returns nil past the end.
struct StoreReader {
    let data: [UInt8]
    private(set) var offset = 0
    init(_ data: [UInt8]) { self.data = data }
    init(_ data: [UInt8], at offset: Int) {
        self.data = data
        self.offset = offset
    }
    var count: Int { data.count }

    mutating func bytes(_ n: Int) -> [UInt8]? {
        guard n >= 0, data.count - offset >= n else { return nil }
        defer { offset += n }
        return Array(data[offset..<(offset + n)])
    }
    private mutating func fixed<T: FixedWidthInteger>(_: T.Type) -> T? {
        let n = MemoryLayout<T>.size
        guard data.count - offset >= n else { return nil }
        var v: T = 0
        for k in 0..<n { v |= T(data[offset + k]) << (8 * k) }
        offset += n
        return v
    }
    mutating func u8() -> UInt8? { fixed(UInt8.self) }
    mutating func u16() -> UInt16? { fixed(UInt16.self) }
    mutating func u32() -> UInt32? { fixed(UInt32.self) }
    mutating func u64() -> UInt64? { fixed(UInt64.self) }
    mutating func string16() -> String? {
        guard let n = u16(), let b = bytes(Int(n)) else { return nil }
        return String(decoding: b, as: UTF8.self)
    }
}
