import FlowSyncCore
import FlowSyncProtocol
import FlowSyncServer
import Foundation

/// Lays out a data directory of many valid stored lists quickly, for the start-up
/// benchmarks and tests of issue #33 (a million lists): one list is written once through
/// the real store (``FileStore``), and every other list is a copy of its log segment with
/// the list's name patched in and the checksums recomputed — one `mkdir`, one file write
/// per list, no encode, no `fsync` — then a clean-stop manifest written in the format of
/// docs/STORAGE.md ("Clean-stop manifest"), or the marker a crash leaves.
///
/// Names are `prefix` followed by a zero-padded number (`list-0000042`), all of one
/// length, so every copy's bytes line up with the template's and the manifest's
/// directory order is the numeric one. The template's Diff frames are encoded without
/// compression, so the name appears in them as plain bytes.
///
/// Not a store: it writes files by the documented format and nothing checks them until
/// a daemon loads them (the tests and the benchmark do: every list loads, a damaged one
/// is refused).
public enum StoredListsLayout {
    /// How the layout says the previous run ended.
    public enum Stop: Sendable {
        /// A clean stop: `STOPPED` records every list.
        case clean
        /// A crash: `RUNNING` (`fsync=always`), no manifest.
        case crashed
    }

    /// The name of list `k`.
    public static func name(_ k: Int, prefix: String = "list-") -> String {
        let digits = String(k)
        return prefix + String(repeating: "0", count: max(0, 7 - digits.count)) + digits
    }

    /// Writes `count` lists named ``name(_:prefix:)`` into `directory` (created; must not
    /// hold a store yet), each a section and four rows in five batches.
    /// - Returns: the bytes of one list's log segment.
    @discardableResult
    public static func write(
        count: Int, into directory: String, stop: Stop = .clean, prefix: String = "list-",
        progress: ((Int) -> Void)? = nil
    ) throws -> Int {
        let placeholder = name(0, prefix: prefix)
        let template = try templateSegment(named: placeholder)
        let listsDirectory = directory + "/lists"
        try FileManager.default.createDirectory(atPath: listsDirectory, withIntermediateDirectories: true)
        let placeholderBytes = Array(placeholder.utf8)
        let offsets = occurrences(of: placeholderBytes, in: template.bytes)
        var bytes = template.bytes
        for k in 0..<count {
            let listName = name(k, prefix: prefix)
            let nameBytes = Array(listName.utf8)
            precondition(nameBytes.count == placeholderBytes.count, "names must share one length: \(listName)")
            for offset in offsets { bytes.replaceSubrange(offset..<(offset + nameBytes.count), with: nameBytes) }
            resealSegment(&bytes)
            let listDirectory = listsDirectory + "/" + listName
            guard mkdir(listDirectory, 0o755) == 0 || errno == EEXIST else {
                throw CrashTestError("mkdir \(listDirectory): errno \(errno)")
            }
            try writeFile(listDirectory + "/" + template.fileName, bytes)
            if let progress, (k + 1) % 50_000 == 0 { progress(k + 1) }
        }
        switch stop {
        case .clean:
            try writeFile(
                directory + "/STOPPED",
                manifest(
                    count: count, prefix: prefix, epoch: template.epoch, version: template.version,
                    fileName: template.fileName, fileLength: bytes.count))
        case .crashed:
            try writeFile(directory + "/RUNNING", Array("fsync=always\n".utf8))
        }
        return bytes.count
    }

    // MARK: The template

    struct Template {
        var fileName: String
        var bytes: [UInt8]
        var epoch: UInt64
        var version: UInt64
    }

    /// One list written through the real store: its only log segment.
    static func templateSegment(named listName: String) throws -> Template {
        let scratch = NSTemporaryDirectory() + "flowsync-layout-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let store = FileStore(directory: scratch, options: FileStore.Options(fsync: .never))
        _ = try store.recover(RecoveryOptions())
        let epoch: UInt64 = 0x5EED_0000_0000_0033
        var sequencer = Sequencer(director: Director(), position: ListVersion(epoch: epoch, version: 0))
        let encoder = FrameEncoder(configuration: .disabled)
        for step in 0..<5 {
            let ops: [FlowSyncCore.Operation] =
                step == 0
                ? [.insertSections([Section(id: "s")], at: 0)]
                : [
                    .insertRows(
                        [Row(id: "r\(step)", kind: "t", payload: Array("row \(step)".utf8))], in: .index(0), at: 0)
                ]
            sequencer.submit(
                MutationRequest(clientID: "layout", seq: UInt64(step + 1), base: sequencer.position, operations: ops),
                tag: 0)
            guard let commit = sequencer.seal().commit else {
                throw CrashTestError("the template's mutation was refused")
            }
            let diff = Diff(
                listName: listName, epoch: commit.to.epoch, fromVersion: commit.from.version,
                toVersion: commit.to.version, digest: commit.digest, changeset: commit.changeset,
                mutations: commit.mutations)
            _ = try store.append(
                StoredBatch(listName: listName, commit: commit, encodedDiff: encoder.encode(.diff(diff))))
        }
        try store.close()
        let listDirectory = scratch + "/lists/" + listName
        let files = try FileManager.default.contentsOfDirectory(atPath: listDirectory).filter { $0.hasSuffix(".fsl") }
        guard files.count == 1, let file = files.first,
            let data = FileManager.default.contents(atPath: listDirectory + "/" + file)
        else { throw CrashTestError("the template list left \(files), not one log segment") }
        return Template(fileName: file, bytes: Array(data), epoch: epoch, version: sequencer.position.version)
    }

    /// Recomputes a log segment's header and record checksums (docs/STORAGE.md, "Log
    /// segment"): the header's CRC covers the header before it; a record's covers its
    /// four length bytes and its body.
    static func resealSegment(_ bytes: inout [UInt8]) {
        let nameLength = Int(bytes[28]) | Int(bytes[29]) << 8
        let headerEnd = 30 + nameLength
        store(CRC32C.checksum(bytes[0..<headerEnd]), at: headerEnd, in: &bytes)
        var at = headerEnd + 4
        while at + 8 <= bytes.count {
            let length = Int(bytes[at]) | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2]) << 16 | Int(bytes[at + 3]) << 24
            let crc = CRC32C.checksum(
                bytes[(at + 8)..<(at + 8 + length)], continuing: CRC32C.checksum(bytes[at..<(at + 4)]))
            store(crc, at: at + 4, in: &bytes)
            at += 8 + length
        }
    }

    // MARK: The manifest

    /// `STOPPED` recording `count` lists of one segment each, ordered by directory.
    static func manifest(
        count: Int, prefix: String, epoch: UInt64, version: UInt64, fileName: String, fileLength: Int
    ) -> [UInt8] {
        var out: [UInt8] = Array("FSYNCSTP".utf8)
        out.reserveCapacity(24 + count * (2 * (prefix.utf8.count + 7) + 40 + fileName.utf8.count))
        append16(1, to: &out)
        append16(0, to: &out)
        append32(UInt32(count), to: &out)
        let file = Array(fileName.utf8)
        for k in 0..<count {
            let entry = Array(name(k, prefix: prefix).utf8)
            append16(UInt16(entry.count), to: &out)
            out += entry
            append16(UInt16(entry.count), to: &out)
            out += entry
            append64(epoch, to: &out)
            append64(version, to: &out)
            append32(1, to: &out)
            append16(UInt16(file.count), to: &out)
            out += file
            append64(UInt64(fileLength), to: &out)
        }
        append32(CRC32C.checksum(out), to: &out)
        return out
    }

    // MARK: Bytes

    static func occurrences(of needle: [UInt8], in haystack: [UInt8]) -> [Int] {
        guard needle.count <= haystack.count else { return [] }
        return (0...(haystack.count - needle.count)).filter { haystack[$0..<($0 + needle.count)].elementsEqual(needle) }
    }

    private static func store(_ value: UInt32, at offset: Int, in bytes: inout [UInt8]) {
        for k in 0..<4 { bytes[offset + k] = UInt8(truncatingIfNeeded: value >> (8 * k)) }
    }

    private static func append16(_ value: UInt16, to out: inout [UInt8]) {
        out.append(UInt8(truncatingIfNeeded: value))
        out.append(UInt8(truncatingIfNeeded: value >> 8))
    }

    private static func append32(_ value: UInt32, to out: inout [UInt8]) {
        for k in 0..<4 { out.append(UInt8(truncatingIfNeeded: value >> (8 * k))) }
    }

    private static func append64(_ value: UInt64, to out: inout [UInt8]) {
        for k in 0..<8 { out.append(UInt8(truncatingIfNeeded: value >> (8 * k))) }
    }

    private static func writeFile(_ path: String, _ bytes: [UInt8]) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw CrashTestError("open \(path): errno \(errno)") }
        defer { close(fd) }
        var done = 0
        try bytes.withUnsafeBytes { buffer in
            while done < buffer.count {
                let n = Glibc.write(fd, buffer.baseAddress! + done, buffer.count - done)
                if n < 0 {
                    if errno == EINTR { continue }
                    throw CrashTestError("write \(path): errno \(errno)")
                }
                done += n
            }
        }
    }
}
