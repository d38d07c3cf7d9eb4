import FlowSyncCore

#if canImport(Glibc)
import Glibc
#endif

/// A clean-stop manifest indexed for an on-demand start: it is checked (checksum,
/// header, the entries' bounds and order) in one pass that allocates nothing per list,
/// and a list's record is decoded — and its file names checked — only when that list is
/// loaded. Decoding every record at start cost about 5 µs and 450 bytes per list (0.5 s
/// and 45 MB at 100,000 lists).
///
/// What it keeps (issue #33, item 9: a million lists with the shipped config):
/// - one 4-byte offset per list, always;
/// - the manifest's bytes (about 80 per list) only while the manifest is smaller than
///   ``keptInMemoryBelow``. A larger one is read again from its file, entry by entry,
///   with `pread` on a descriptor opened at start (so a later clean stop, which renames a
///   new manifest over it, does not change what this run's start recorded): a lookup is
///   a binary search of about 20 small reads from the page cache, next to a list load
///   that reads and replays files. At 1,000,000 lists this keeps 4 MB instead of 88 MB.
///
/// Entries are ordered by directory (``CleanStopManifest/encoded()`` sorts them), so a
/// lookup is a binary search; strictly increasing directories also rule out duplicates.
struct CleanStopManifestIndex: Sendable {
    /// Manifests at least this large are read back from their file, not kept.
    static let keptInMemoryBelow = 1 << 20

    private enum Entries: Sendable {
        /// The manifest without its checksum.
        case bytes([UInt8])
        /// The manifest's file, read back entry by entry.
        case file(ManifestFile)
    }

    private let entries: Entries
    /// Where each list's entry starts, in directory order.
    private let offsets: [UInt32]
    /// Where the last entry ends (the checksum's offset).
    private let end: Int

    var count: Int { offsets.count }

    /// Checks the manifest file at `path` through a read-only mapping, giving each
    /// window of it back (`MADV_DONTNEED`) once read, so the process never holds more than
    /// ``mappingWindow`` of it; then indexes it, read back with `pread`. `nil` when the
    /// file is smaller than ``keptInMemoryBelow``, cannot be mapped, or is damaged: the
    /// caller then reads it whole (``init(validating:path:keptInMemoryBelow:)``), which
    /// reports the damage exactly.
    init?(mappingValid path: String) {
        guard let file = ManifestFile(path: path), file.length >= Self.keptInMemoryBelow, file.length < Int(UInt32.max),
            let mapping = mmap(nil, file.length, PROT_READ, MAP_PRIVATE, file.descriptor, 0), mapping != MAP_FAILED
        else { return nil }
        defer { munmap(mapping, file.length) }
        _ = madvise(mapping, file.length, Int32(MADV_SEQUENTIAL))
        let raw = UnsafeRawBufferPointer(start: mapping, count: file.length)
        let end = file.length - 4
        var crc: UInt32 = 0
        var at = 0
        while at < end {
            let upTo = min(end, at + Self.mappingWindow)
            crc = CRC32C.checksum(UnsafeRawBufferPointer(rebasing: raw[at..<upTo]), continuing: crc)
            _ = madvise(mapping + at, upTo - at, Int32(MADV_DONTNEED))
            at = upTo
        }
        guard crc == raw[end...].withUnsafeBytes({ $0.loadUnaligned(as: UInt32.self).littleEndian }) else { return nil }
        guard let offsets = try? Self.validate(UnsafeRawBufferPointer(rebasing: raw[0..<end]), release: mapping) else {
            return nil
        }
        _ = madvise(mapping, file.length, Int32(MADV_DONTNEED))
        self.offsets = offsets
        self.end = end
        entries = .file(file)
    }

    /// How much of a mapped manifest is read before it is given back.
    static let mappingWindow = 8 << 20

    /// Checks `manifest` (the file's bytes) and indexes it; `path` is the file it was
    /// read from, re-opened for reading when the manifest is large (`nil`: keep it).
    /// - Throws: as ``CleanStopManifest/decode(_:)`` for the checksum, the header and the
    ///   structure; entries out of order are refused too (this store never writes them).
    init(
        validating manifest: [UInt8], path: String? = nil, keptInMemoryBelow: Int = Self.keptInMemoryBelow
    ) throws(StoreFormat.HeaderProblem) {
        guard manifest.count >= 16 else { throw .damaged("clean-stop manifest of \(manifest.count) bytes") }
        guard manifest.count < Int(UInt32.max) else {
            throw .damaged("clean-stop manifest of \(manifest.count) bytes: too large")
        }
        let end = manifest.count - 4
        let stored = manifest[end...].withUnsafeBytes { $0.loadUnaligned(as: UInt32.self).littleEndian }
        guard manifest.withUnsafeBytes({ CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[0..<end])) }) == stored
        else {
            throw .damaged("clean-stop manifest fails its checksum", at: end)
        }
        let validated = manifest.withUnsafeBytes { raw -> Result<[UInt32], StoreFormat.HeaderProblem> in
            do throws(StoreFormat.HeaderProblem) {
                return .success(try Self.validate(UnsafeRawBufferPointer(rebasing: raw[0..<end])))
            } catch {
                return .failure(error)
            }
        }
        self.offsets = try validated.get()
        self.end = end
        if manifest.count >= keptInMemoryBelow, let path, let file = ManifestFile(path: path),
            file.length == manifest.count
        {
            entries = .file(file)
        } else {
            entries = .bytes(Array(manifest[0..<end]))
        }
    }

    /// The header and every entry's bounds and order, without an allocation per entry.
    /// Returns where each entry starts.
    /// `release`: the mapping `raw` lies in, whose windows are given back as the pass
    /// goes (``init(mappingValid:)``).
    private static func validate(
        _ raw: UnsafeRawBufferPointer, release mapping: UnsafeMutableRawPointer? = nil
    ) throws(StoreFormat.HeaderProblem) -> [UInt32] {
        var at = 0
        var released = 0
        func u16() -> Int? {
            guard raw.count - at >= 2 else { return nil }
            defer { at += 2 }
            return Int(raw[at]) | Int(raw[at + 1]) << 8
        }
        func u32() -> Int? {
            guard raw.count - at >= 4 else { return nil }
            defer { at += 4 }
            return Int(raw[at]) | Int(raw[at + 1]) << 8 | Int(raw[at + 2]) << 16 | Int(raw[at + 3]) << 24
        }
        func skip(_ n: Int) -> Bool {
            guard n >= 0, raw.count - at >= n else { return false }
            at += n
            return true
        }
        guard raw.count >= 8, Array(raw[0..<8]) == CleanStopManifest.magic else {
            throw .damaged("not a FlowSync clean-stop manifest (bad magic)")
        }
        at = 8
        guard let format = u16(), format == Int(CleanStopManifest.formatVersion) else {
            throw .damaged(
                "clean-stop manifest format is not \(CleanStopManifest.formatVersion), the one this flowsyncd reads",
                at: 8)
        }
        guard let flags = u16() else { throw .damaged("clean-stop manifest truncated", at: at) }
        try StoreFormat.checkReservedFlags(UInt16(flags), in: "clean-stop manifest")
        guard let listCount = u32() else { throw .damaged("clean-stop manifest truncated", at: at) }
        var offsets: [UInt32] = []
        offsets.reserveCapacity(min(listCount, raw.count / 8))
        var previous: Range<Int>?
        for _ in 0..<listCount {
            let entry = at
            if let mapping, entry - released >= mappingWindow {
                // Keep the window before the previous entry (its directory is compared next).
                let upTo = (previous?.lowerBound ?? entry) & ~4095
                if upTo > released {
                    _ = madvise(mapping + released, upTo - released, Int32(MADV_DONTNEED))
                    released = upTo
                }
            }
            // directory, name, epoch, version, file count, then per file a name and a length.
            guard let directoryLength = u16() else { throw .damaged("clean-stop manifest truncated", at: entry) }
            let directory = at..<(at + directoryLength)
            guard skip(directoryLength), let nameLength = u16(), skip(nameLength), skip(16), let files = u32() else {
                throw .damaged("clean-stop manifest truncated", at: entry)
            }
            if let previous {
                let ordered = memcmp(
                    raw.baseAddress! + previous.lowerBound, raw.baseAddress! + directory.lowerBound,
                    min(previous.count, directory.count))
                guard ordered < 0 || (ordered == 0 && previous.count < directory.count) else {
                    throw .damaged("clean-stop manifest lists directories out of order or twice", at: entry)
                }
            }
            for _ in 0..<files {
                guard let fileNameLength = u16(), skip(fileNameLength), skip(8) else {
                    throw .damaged("clean-stop manifest truncated", at: entry)
                }
            }
            previous = directory
            offsets.append(UInt32(entry))
        }
        guard at == raw.count else {
            throw .damaged("\(raw.count - at) unexpected bytes at the end of the clean-stop manifest", at: at)
        }
        return offsets
    }

    /// The bytes of entry `k`.
    private func entry(_ k: Int) -> [UInt8]? {
        let start = Int(offsets[k])
        let stop = k + 1 < offsets.count ? Int(offsets[k + 1]) : end
        switch entries {
        case .bytes(let bytes): return Array(bytes[start..<stop])
        case .file(let file): return file.read(start..<stop)
        }
    }

    /// The record of the list kept in `directory`, decoded and checked now.
    /// - Throws: an entry that format 1 did not write (a directory that is not one entry,
    ///   a file that is neither a snapshot nor a segment, a file twice), or a manifest
    ///   that can no longer be read back.
    func list(inDirectory directory: String) throws(StoreFormat.HeaderProblem) -> CleanStopManifest.List? {
        let key = Array(directory.utf8)
        var low = 0
        var high = offsets.count
        while low < high {
            let middle = (low + high) / 2
            guard let bytes = entry(middle) else {
                throw .damaged("clean-stop manifest no longer readable", at: Int(offsets[middle]))
            }
            var r = StoreReader(bytes)
            guard let length = r.u16(), let name = r.bytes(Int(length)) else { return nil }
            if name == key { return try Self.decode(bytes, at: Int(offsets[middle])) }
            if name.lexicographicallyPrecedes(key) { low = middle + 1 } else { high = middle }
        }
        return nil
    }

    /// Every record, decoded (a clean stop carrying forward the lists it did not load);
    /// entries that do not decode are left out.
    func allLists() -> [CleanStopManifest.List] {
        let all: [UInt8]
        switch entries {
        case .bytes(let bytes): all = bytes
        case .file(let file):
            guard let bytes = file.read(0..<end) else { return [] }
            all = bytes
        }
        return offsets.indices.compactMap { k in
            let stop = k + 1 < offsets.count ? Int(offsets[k + 1]) : end
            return try? Self.decode(Array(all[Int(offsets[k])..<stop]), at: Int(offsets[k]))
        }
    }

    /// One entry's bytes, which start at `offset` in the manifest (for the messages).
    private static func decode(
        _ bytes: [UInt8], at offset: Int
    ) throws(StoreFormat.HeaderProblem) -> CleanStopManifest.List {
        var r = StoreReader(bytes)
        guard let directory = r.string16(), let name = r.string16(), let epoch = r.u64(), let version = r.u64(),
            let fileCount = r.u32()
        else {
            throw .damaged("clean-stop manifest truncated", at: offset)
        }
        guard !directory.isEmpty, !directory.contains("/"), directory != ".", directory != ".." else {
            throw .damaged(
                "clean-stop manifest names list directory \"\(directory)\" not as a directory entry", at: offset)
        }
        let files: [CleanStopManifest.File]
        do throws(StoreFormat.HeaderProblem) {
            files = try CleanStopManifest.readFiles(fileCount, from: &r)
        } catch {
            let (reason, at) = error.reasonAndOffset
            throw .damaged(reason, at: offset + at)
        }
        return CleanStopManifest.List(
            directory: directory, name: name, position: ListVersion(epoch: epoch, version: version), files: files)
    }
}

/// A manifest file held open for reading back its entries (``CleanStopManifestIndex``).
/// `pread` needs no shared offset, so workers may read it at once.
final class ManifestFile: @unchecked Sendable {
    let descriptor: Int32
    /// The file's length when it was opened.
    let length: Int

    /// Opens `path` for reading.
    init?(path: String) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        var status = stat()
        guard fstat(fd, &status) == 0 else {
            close(fd)
            return nil
        }
        descriptor = fd
        length = Int(status.st_size)
    }

    deinit { close(descriptor) }

    func read(_ range: Range<Int>) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: range.count)
        var done = 0
        let ok = bytes.withUnsafeMutableBytes { buffer -> Bool in
            while done < range.count {
                let n = pread(
                    descriptor, buffer.baseAddress! + done, range.count - done, off_t(range.lowerBound + done))
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { return false }
                done += n
            }
            return true
        }
        return ok ? bytes : nil
    }
}
