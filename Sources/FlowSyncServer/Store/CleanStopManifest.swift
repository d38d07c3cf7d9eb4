import FlowSyncCore

/// What a clean stop left in the data directory: per list, its position and every
/// snapshot and log segment file with its exact length. Written atomically as
/// `<data_dir>/STOPPED` by ``FileStore/close()``, after everything it lists is synced;
/// removed (durably) by ``FileStore/recover(_:)`` before the store takes any write.
///
/// A torn tail can only come from a crash. While this manifest is present, the previous
/// run stopped cleanly, so recovery accepts exactly what it records and nothing else: a
/// file missing, shorter, longer or damaged, a file it does not list, or a list that
/// recovers to another position is corruption (docs/STORAGE.md, "Clean stop").
///
/// Format 1 (little-endian; docs/STORAGE.md is the spec):
/// ```
/// "FSYNCSTP" u16 format=1 u16 flags=0
/// u32 lists, per list (ordered by directory):
///     u16 length, directory (the entry under lists/)   u16 length, list name
///     u64 epoch  u64 version                            (the list's position at the stop)
///     u32 files, per file (ordered by name): u16 length, name   u64 length in bytes
/// u32 crc32c(everything before)
/// ```
struct CleanStopManifest: Equatable {
    struct File: Equatable {
        /// `snap-<generation>.fss` or `log-<generation>.fsl`.
        var name: String
        var length: Int
    }

    struct List: Equatable {
        /// The list's directory under `lists/` (``StoreFormat/directoryName(for:)``).
        var directory: String
        var name: String
        var position: ListVersion
        /// Its snapshots and segments, ordered by name.
        var files: [File]
    }

    /// Ordered by directory.
    var lists: [List]

    static let fileName = "STOPPED"
    static let magic = Array("FSYNCSTP".utf8)
    static let formatVersion: UInt16 = 1

    init(lists: [List]) {
        self.lists = lists.map { list in
            var list = list
            list.files.sort { $0.name < $1.name }
            return list
        }.sorted { $0.directory < $1.directory }
    }

    /// The recorded list kept in `directory`, if any.
    func list(inDirectory directory: String) -> List? {
        lists.first { $0.directory == directory }
    }

    func encoded() -> [UInt8] {
        var w = StoreWriter()
        w.bytes(Self.magic)
        w.u16(Self.formatVersion)
        w.u16(0)
        w.u32(UInt32(lists.count))
        for list in lists {
            w.string16(list.directory)
            w.string16(list.name)
            w.u64(list.position.epoch)
            w.u64(list.position.version)
            w.u32(UInt32(list.files.count))
            for file in list.files {
                w.string16(file.name)
                w.u64(UInt64(file.length))
            }
        }
        w.u32(CRC32C.checksum(w.buffer))
        return w.buffer
    }

    /// Decodes a manifest; refuses anything format 1 did not write (a bad checksum,
    /// reserved flags, a file name that is neither a snapshot nor a segment, a
    /// duplicate, trailing bytes).
    static func decode(_ bytes: [UInt8]) throws(StoreFormat.HeaderProblem) -> CleanStopManifest {
        guard bytes.count >= 16 else { throw .damaged("clean-stop manifest of \(bytes.count) bytes") }
        let stored = bytes[(bytes.count - 4)...].withUnsafeBytes { $0.loadUnaligned(as: UInt32.self).littleEndian }
        guard CRC32C.checksum(bytes[0..<(bytes.count - 4)]) == stored else {
            throw .damaged("clean-stop manifest fails its checksum", at: bytes.count - 4)
        }
        var r = StoreReader(Array(bytes[0..<(bytes.count - 4)]))
        guard let magic = r.bytes(8), magic == Self.magic else {
            throw .damaged("not a FlowSync clean-stop manifest (bad magic)")
        }
        guard let format = r.u16(), format == formatVersion else {
            throw .damaged("clean-stop manifest format is not \(formatVersion), the one this flowsyncd reads", at: 8)
        }
        guard let flags = r.u16() else { throw .damaged("clean-stop manifest truncated", at: r.offset) }
        try StoreFormat.checkReservedFlags(flags, in: "clean-stop manifest")
        guard let listCount = r.u32() else { throw .damaged("clean-stop manifest truncated", at: r.offset) }
        var lists: [List] = []
        var directories = Set<String>()
        for _ in 0..<listCount {
            let at = r.offset
            guard let directory = r.string16(), let name = r.string16(), let epoch = r.u64(), let version = r.u64(),
                let fileCount = r.u32()
            else { throw .damaged("clean-stop manifest truncated", at: at) }
            guard !directory.isEmpty, !directory.contains("/"), directory != ".", directory != "..",
                directories.insert(directory).inserted
            else {
                throw .damaged(
                    "clean-stop manifest names list directory \"\(directory)\" twice or not as a directory entry",
                    at: at)
            }
            let files = try Self.readFiles(fileCount, from: &r)
            lists.append(
                List(
                    directory: directory, name: name, position: ListVersion(epoch: epoch, version: version),
                    files: files))
        }
        guard r.offset == r.count else {
            throw .damaged("\(r.count - r.offset) unexpected bytes at the end of the clean-stop manifest", at: r.offset)
        }
        return CleanStopManifest(lists: lists)
    }
}

extension CleanStopManifest {
    /// A list record's `fileCount` file entries: each a snapshot or segment name of
    /// format 1, at most once, with its length. Shared by the full decode and the
    /// on-demand index, which decodes one record at a list's load.
    static func readFiles(_ fileCount: UInt32, from r: inout StoreReader) throws(StoreFormat.HeaderProblem) -> [File] {
        var files: [File] = []
        var names = Set<String>()
        for _ in 0..<fileCount {
            let fileAt = r.offset
            guard let fileName = r.string16(), let length = r.u64() else {
                throw .damaged("clean-stop manifest truncated", at: fileAt)
            }
            guard
                StoreFormat.generation(of: fileName, prefix: "snap-", suffix: ".fss") != nil
                    || StoreFormat.generation(of: fileName, prefix: "log-", suffix: ".fsl") != nil,
                length <= UInt64(Int.max), names.insert(fileName).inserted
            else {
                throw .damaged(
                    "clean-stop manifest records \"\(fileName)\" (\(length) bytes), not a snapshot or segment of format 1, or twice",
                    at: fileAt)
            }
            files.append(File(name: fileName, length: Int(length)))
        }
        return files
    }
}
