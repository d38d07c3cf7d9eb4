import FlowSyncCore

/// A clean-stop manifest kept as its bytes plus the offset of each list's entry, for an
/// on-demand start: it is checked (checksum, header, the entries' bounds and order) in
/// one pass that allocates nothing per list, and a list's record is decoded — and its
/// file names checked — only when that list is loaded. Decoding every record at start
/// cost about 5 µs and 450 bytes per list (0.5 s and 45 MB at 100,000 lists); this costs
/// the manifest's bytes (about 80 per list) and one offset.
///
/// Entries are ordered by directory (``CleanStopManifest/encoded()`` sorts them), so a
/// lookup is a binary search; strictly increasing directories also rule out duplicates.
struct CleanStopManifestIndex: Sendable {
    /// The manifest without its checksum.
    private let bytes: [UInt8]
    /// Where each list's entry starts, in directory order.
    private let offsets: [Int]

    var count: Int { offsets.count }

    /// Checks `manifest` (the file's bytes) and indexes it.
    /// - Throws: as ``CleanStopManifest/decode(_:)`` for the checksum, the header and the
    ///   structure; entries out of order are refused too (this store never writes them).
    init(validating manifest: [UInt8]) throws(StoreFormat.HeaderProblem) {
        guard manifest.count >= 16 else { throw .damaged("clean-stop manifest of \(manifest.count) bytes") }
        let stored = manifest[(manifest.count - 4)...].withUnsafeBytes { $0.loadUnaligned(as: UInt32.self).littleEndian }
        guard CRC32C.checksum(manifest[0..<(manifest.count - 4)]) == stored else {
            throw .damaged("clean-stop manifest fails its checksum", at: manifest.count - 4)
        }
        let bytes = Array(manifest[0..<(manifest.count - 4)])
        var r = StoreReader(bytes)
        guard let magic = r.bytes(8), magic == CleanStopManifest.magic else { throw .damaged("not a FlowSync clean-stop manifest (bad magic)") }
        guard let format = r.u16(), format == CleanStopManifest.formatVersion else {
            throw .damaged("clean-stop manifest format is not \(CleanStopManifest.formatVersion), the one this flowsyncd reads", at: 8)
        }
        guard let flags = r.u16() else { throw .damaged("clean-stop manifest truncated", at: r.offset) }
        try StoreFormat.checkReservedFlags(flags, in: "clean-stop manifest")
        guard let listCount = r.u32() else { throw .damaged("clean-stop manifest truncated", at: r.offset) }
        var offsets: [Int] = []
        offsets.reserveCapacity(Int(listCount))
        var previous: [UInt8] = []
        for _ in 0..<listCount {
            let at = r.offset
            // directory, name, epoch, version, file count, then per file a name and a length.
            guard let directoryLength = r.u16(), let directory = r.bytes(Int(directoryLength)),
                  let nameLength = r.u16(), r.bytes(Int(nameLength)) != nil, r.u64() != nil, r.u64() != nil, let files = r.u32() else {
                throw .damaged("clean-stop manifest truncated", at: at)
            }
            guard offsets.isEmpty || previous.lexicographicallyPrecedes(directory) else {
                throw .damaged("clean-stop manifest lists directories out of order or twice", at: at)
            }
            for _ in 0..<files {
                guard let fileNameLength = r.u16(), r.bytes(Int(fileNameLength)) != nil, r.u64() != nil else {
                    throw .damaged("clean-stop manifest truncated", at: at)
                }
            }
            previous = directory
            offsets.append(at)
        }
        guard r.offset == r.count else { throw .damaged("\(r.count - r.offset) unexpected bytes at the end of the clean-stop manifest", at: r.offset) }
        self.bytes = bytes
        self.offsets = offsets
    }

    /// The record of the list kept in `directory`, decoded and checked now.
    /// - Throws: an entry that format 1 did not write (a directory that is not one entry,
    ///   a file that is neither a snapshot nor a segment, a file twice).
    func list(inDirectory directory: String) throws(StoreFormat.HeaderProblem) -> CleanStopManifest.List? {
        let key = Array(directory.utf8)
        var low = 0
        var high = offsets.count
        while low < high {
            let middle = (low + high) / 2
            var r = StoreReader(bytes, at: offsets[middle])
            guard let length = r.u16(), let entry = r.bytes(Int(length)) else { return nil }
            if entry == key { return try decode(at: offsets[middle]) }
            if entry.lexicographicallyPrecedes(key) { low = middle + 1 } else { high = middle }
        }
        return nil
    }

    /// Every record, decoded (a clean stop carrying forward the lists it did not load);
    /// entries that do not decode are left out.
    func allLists() -> [CleanStopManifest.List] {
        offsets.compactMap { try? decode(at: $0) }
    }

    private func decode(at offset: Int) throws(StoreFormat.HeaderProblem) -> CleanStopManifest.List {
        var r = StoreReader(bytes, at: offset)
        guard let directory = r.string16(), let name = r.string16(), let epoch = r.u64(), let version = r.u64(), let fileCount = r.u32() else {
            throw .damaged("clean-stop manifest truncated", at: offset)
        }
        guard !directory.isEmpty, !directory.contains("/"), directory != ".", directory != ".." else {
            throw .damaged("clean-stop manifest names list directory \"\(directory)\" not as a directory entry", at: offset)
        }
        let files = try CleanStopManifest.readFiles(fileCount, from: &r)
        return CleanStopManifest.List(directory: directory, name: name, position: ListVersion(epoch: epoch, version: version), files: files)
    }
}
