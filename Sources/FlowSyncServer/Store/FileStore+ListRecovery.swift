// Past ~400 lines on purpose: recovery's steps for one list (snapshot, replay, torn
// tail, repair) are one ordered procedure over the same files, read best top to bottom.
import FlowSyncCore
import FlowSyncProtocol

extension FileStore {
    /// What recovery may accept of one list directory.
    enum ListExpectation: Sendable {
        /// No clean-stop manifest: the torn-tail rule applies.
        case afterUncleanStop
        /// Exactly these files and this position.
        case recorded(CleanStopManifest.List)
        /// A clean stop recorded no list here: the directory must hold no list files.
        case notRecorded
    }

    private enum RecordFailure: Error {
        /// Checksum or length (or the kind byte of a record that fails its checksum):
        /// could be a torn write.
        case damaged(String)
        /// Well-formed but does not fit: corruption for sure.
        case misfit(String)
    }

    /// Recovers the list kept in `directory` by the rules of ``recover(_:)`` (steps 1–4
    /// and the clean-stop expectation) and returns it with the state of its files, or
    /// `nil` when nothing usable is there. Static and worker-safe: it touches only the
    /// files of that one directory through `io` (a torn tail is truncated, a repair sets
    /// files aside there) and returns values; the caller registers the files on the loop
    /// (``adopt(_:)``).
    static func readList(
        at directory: String, expecting expectation: ListExpectation, options: RecoveryOptions, io: FileIO,
        report: inout RecoveryReport
    ) throws(StoreError) -> RecoveredListFiles? {
        var snapshots: [(UInt64, String)] = []
        var segmentFiles: [(UInt64, String)] = []
        /// Recovery removed a file here: the directory is synced before the store opens
        /// for writing (a removal that a power loss undoes would bring back a file that a
        /// later clean stop does not record, and that start would be refused).
        var directoryChanged = false
        for name in try io.listDirectory(directory) {
            let path = directory + "/" + name
            if name.hasSuffix(".tmp") {
                // An interrupted snapshot write: never renamed, so never used.
                try io.remove(path)
                directoryChanged = true
            } else if let g = StoreFormat.generation(of: name, prefix: "snap-", suffix: ".fss") {
                snapshots.append((g, path))
            } else if let g = StoreFormat.generation(of: name, prefix: "log-", suffix: ".fsl") {
                segmentFiles.append((g, path))
            }
        }
        snapshots.sort { $0.0 > $1.0 }
        segmentFiles.sort { $0.0 < $1.0 }
        var repaired = false
        var rebuilder: ListRebuilder?
        var listName: String?
        var snapshotGeneration: UInt64 = 0
        var snapshotPath: String?
        var snapshotLength = 0

        // 0. After a clean stop: exactly the files the manifest records.
        var recorded: CleanStopManifest.List?
        var recordedLengths: [String: Int] = [:]
        /// Repair only: the first segment the manifest records that is gone (the log
        /// cannot continue past it).
        var missingSegment: UInt64?
        switch expectation {
        case .afterUncleanStop:
            break
        case .recorded(let list):
            recorded = list
            for file in list.files { recordedLengths[file.name] = file.length }
            var present = Set<String>()
            for (_, path) in snapshots + segmentFiles { present.insert(FileStore.lastComponent(path)) }
            for (_, path) in snapshots + segmentFiles where recordedLengths[FileStore.lastComponent(path)] == nil {
                let reason = "not in the clean-stop manifest (nothing is written to a list after a clean stop)"
                guard options.repair else {
                    throw .corrupt(path, offset: 0, reason + " (start with --repair to set it aside)")
                }
                let bytes = try io.readFile(path)
                try setAside(io: io, path, bytes: bytes)
                try io.remove(path)
                directoryChanged = true
                report.repairedBytes += bytes.count
                report.notes.append("repair: \(path) is \(reason); set aside as \(path).damaged")
                repaired = true
            }
            snapshots.removeAll { recordedLengths[FileStore.lastComponent($0.1)] == nil }
            segmentFiles.removeAll { recordedLengths[FileStore.lastComponent($0.1)] == nil }
            for file in list.files where !present.contains(file.name) {
                let path = directory + "/" + file.name
                guard options.repair else {
                    throw .corrupt(
                        path, offset: 0,
                        "missing: the clean stop recorded it with \(file.length) bytes (start with --repair to keep what is still valid)"
                    )
                }
                report.notes.append("repair: \(path) is missing (the clean stop recorded it with \(file.length) bytes)")
                repaired = true
                if let generation = StoreFormat.generation(of: file.name, prefix: "log-", suffix: ".fsl") {
                    missingSegment = min(missingSegment ?? generation, generation)
                }
            }
        case .notRecorded:
            if let (_, path) = (snapshots + segmentFiles).first {
                let reason =
                    "list directory \(directory) is not in the clean-stop manifest (nothing is written after a clean stop)"
                guard options.repair else {
                    throw .corrupt(path, offset: 0, reason + " (start with --repair to recover it in a new epoch)")
                }
                report.notes.append("repair: \(reason); recovered under the unclean-stop rules, in a new epoch")
                repaired = true
            }
        }
        /// After a clean stop nothing can be torn: every bad byte is damage.
        let tornTailsPossible = recorded == nil

        // 1. The newest valid snapshot.
        for (generation, path) in snapshots {
            let bytes = try io.readFile(path)
            do throws(StoreFormat.HeaderProblem) {
                if let want = recordedLengths[FileStore.lastComponent(path)], bytes.count != want {
                    throw .damaged(
                        "\(bytes.count) bytes where the clean stop recorded \(want)", at: min(bytes.count, want))
                }
                let snapshot = try StoreFormat.decodeSnapshot(bytes)
                do {
                    rebuilder = try ListRebuilder(snapshot: snapshot, options: options)
                } catch {
                    throw StoreFormat.HeaderProblem.damaged(error.description)
                }
                listName = snapshot.listName
                snapshotGeneration = generation
                snapshotPath = path
                snapshotLength = bytes.count
                break
            } catch {
                let (reason, offset) = error.reasonAndOffset
                guard options.repair else {
                    throw .corrupt(path, offset: offset, reason + " (start with --repair to use what is still valid)")
                }
                try setAside(io: io, path, bytes: bytes)
                try io.remove(path)
                directoryChanged = true
                report.notes.append("repair: snapshot \(path) is damaged (\(reason)); set aside as \(path).damaged")
                repaired = true
            }
        }

        // 2–4. The log.
        var segments: [Segment] = []
        var batchesAfterSnapshot = 0
        var bytesAfterSnapshot = 0
        var dropRest = false
        /// Repair only: sets a whole segment aside, and every later one with it (a log
        /// cannot continue past a gap).
        func dropSegment(_ path: String, bytes: [UInt8], _ note: String) throws(StoreError) {
            try setAside(io: io, path, bytes: bytes)
            try io.remove(path)
            directoryChanged = true
            report.notes.append(note)
            report.repairedBytes += bytes.count
            repaired = true
            dropRest = true
        }
        for (index, (generation, path)) in segmentFiles.enumerated() {
            if let missing = missingSegment, generation > missing, !dropRest {
                // Repair: a segment after a missing one cannot continue the log.
                dropRest = true
            }
            if dropRest {
                try setAside(io: io, path, bytes: try io.readFile(path))
                try io.remove(path)
                directoryChanged = true
                report.notes.append("repair: set aside \(path) (after the damage)")
                continue
            }
            let isLast = index == segmentFiles.count - 1
            /// The file as read, and the part of it recovery considers.
            let original = try io.readFile(path)
            var bytes = original
            /// Repair after a clean stop: the file ends before its recorded length.
            var endsShort = false
            if let want = recordedLengths[FileStore.lastComponent(path)] {
                if bytes.count > want {
                    // Decided: longer is damage too. Nothing appends after a clean stop
                    // (the next start removes the manifest before its first append), so
                    // bytes past the recorded end were not written by this store.
                    guard options.repair else {
                        throw .corrupt(
                            path, offset: want,
                            "\(bytes.count - want) bytes after the \(want) the clean stop recorded (nothing is appended after a clean stop; start with --repair to cut them off)"
                        )
                    }
                    bytes.removeLast(bytes.count - want)
                } else if bytes.count < want {
                    guard options.repair else {
                        throw .corrupt(
                            path, offset: bytes.count,
                            "the file ends at byte \(bytes.count), \(want - bytes.count) bytes short of the \(want) the clean stop recorded (start with --repair to keep the valid prefix)"
                        )
                    }
                    endsShort = true
                }
            }
            let header: StoreFormat.SegmentHeader
            let headerLength: Int
            do throws(StoreFormat.HeaderProblem) {
                (header, headerLength) = try StoreFormat.decodeSegmentHeader(bytes)
            } catch {
                if case .short = error, isLast, tornTailsPossible {
                    // Created, but the crash came before its header was on disk: no
                    // record can be in it.
                    try io.remove(path)
                    directoryChanged = true
                    report.truncatedBytes += bytes.count
                    report.notes.append(
                        "torn tail: removed \(path) (\(bytes.count) bytes, an incomplete segment header)")
                    continue
                }
                var (reason, offset) = error.reasonAndOffset
                if case .short = error { reason = "segment header truncated (\(bytes.count) bytes)" }
                guard options.repair else {
                    throw .corrupt(path, offset: offset, reason + " (start with --repair to keep the valid prefix)")
                }
                try dropSegment(path, bytes: original, "repair: \(path): \(reason); set aside with everything after it")
                continue
            }
            if let name = listName, name != header.listName {
                throw .corrupt(
                    path, offset: 0, "segment of list \"\(header.listName)\" in the directory of \"\(name)\"")
            }
            listName = header.listName
            if let current = rebuilder, header.epoch != current.sequencer.position.epoch {
                if snapshotPath != nil && generation < snapshotGeneration {
                    // From before a new epoch began (its snapshot is newer): obsolete.
                    try io.remove(path)
                    directoryChanged = true
                    continue
                }
                guard options.repair else {
                    throw .corrupt(
                        path, offset: 0,
                        "segment of epoch \(header.epoch) after epoch \(current.sequencer.position.epoch) (start with --repair)"
                    )
                }
                try dropSegment(
                    path, bytes: original,
                    "repair: \(path) belongs to another epoch; set aside with everything after it")
                continue
            }
            if rebuilder == nil {
                if header.firstVersion != 1 {
                    guard options.repair else {
                        throw .corrupt(
                            path, offset: 0,
                            "the log starts at version \(header.firstVersion) and no snapshot covers what is before it (start with --repair)"
                        )
                    }
                    try dropSegment(
                        path, bytes: original,
                        "repair: \(path) starts at version \(header.firstVersion) with no snapshot before it; set aside with everything after it"
                    )
                    continue
                }
                rebuilder = ListRebuilder(epoch: header.epoch, options: options)
            }

            var segment = Segment(
                generation: generation, path: path, epoch: header.epoch, firstVersion: header.firstVersion,
                lastVersion: header.firstVersion - 1,
                length: bytes.count)
            var offset = headerLength
            var expected = header.firstVersion
            let decoder = FrameDecoder(limits: StoreFormat.decoderLimits, dictionary: .standard)
            var failure: (offset: Int, problem: RecordFailure)?
            bytes.withUnsafeBytes { raw in
                while offset < raw.count {
                    guard let length = StoreFormat.validRecord(in: raw, at: offset) else {
                        if StoreFormat.validRecord(in: raw, at: offset, anyKind: true) != nil {
                            // Its checksum holds, so it was written that way: not a torn write.
                            failure = (
                                offset,
                                .misfit(
                                    "record kind \(raw[offset + StoreFormat.recordHeaderBytes]) is reserved (format 1 stores kind 1, a batch, only)"
                                )
                            )
                        } else {
                            failure = (
                                offset,
                                .damaged(
                                    raw.count - offset < StoreFormat.recordHeaderBytes
                                        ? "incomplete record header" : "record fails its length or checksum")
                            )
                        }
                        return
                    }
                    let body = UnsafeRawBufferPointer(
                        rebasing: raw[
                            (offset + StoreFormat.recordHeaderBytes + 1)..<(offset + StoreFormat.recordHeaderBytes
                                + length)])
                    decoder.feed(body)
                    let message: Message?
                    do { message = try decoder.next() } catch {
                        failure = (offset, .misfit("record does not decode: \(error)"))
                        return
                    }
                    guard case .diff(let diff)? = message, decoder.bufferedByteCount == 0 else {
                        failure = (offset, .misfit("record is not exactly one diff frame"))
                        return
                    }
                    guard diff.listName == header.listName, diff.epoch == header.epoch, diff.toVersion == expected,
                        diff.fromVersion + 1 == expected
                    else {
                        failure = (
                            offset,
                            .misfit(
                                "record \(diff.listName) \(diff.from)→\(diff.to) where \(header.listName) version \(expected) was expected"
                            )
                        )
                        return
                    }
                    if expected > rebuilder!.sequencer.position.version {
                        do {
                            try rebuilder!.replay(
                                Sequencer.Commit(
                                    from: diff.from, to: diff.to, changeset: diff.changeset, digest: diff.digest,
                                    mutations: diff.mutations))
                        } catch {
                            failure = (offset, .misfit("\(error)"))
                            return
                        }
                        report.replayedBatches += 1
                        batchesAfterSnapshot += 1
                        bytesAfterSnapshot += StoreFormat.recordHeaderBytes + length
                    }
                    segment.lastVersion = expected
                    expected += 1
                    offset += StoreFormat.recordHeaderBytes + length
                }
            }
            if let failure {
                let isTorn: Bool
                if case .damaged = failure.problem, isLast, tornTailsPossible {
                    isTorn = bytes.withUnsafeBytes { raw in
                        !((failure.offset + 1)..<raw.count).contains { StoreFormat.validRecord(in: raw, at: $0) != nil }
                    }
                } else {
                    isTorn = false
                }
                let dropped = original.count - failure.offset
                let reason: String
                switch failure.problem {
                case .damaged(let r), .misfit(let r): reason = r
                }
                if isTorn {
                    try io.truncate(path, to: failure.offset)
                    report.truncatedBytes += dropped
                    report.notes.append(
                        "torn tail: truncated \(path) at byte \(failure.offset), dropping \(dropped) bytes (\(reason))")
                } else {
                    guard options.repair else {
                        throw .corrupt(
                            path, offset: failure.offset,
                            reason + "; \(dropped) bytes from there on (start with --repair to keep the valid prefix)")
                    }
                    try setAside(io: io, path, bytes: original)
                    try io.truncate(path, to: failure.offset)
                    report.repairedBytes += dropped
                    report.notes.append(
                        "repair: \(path): \(reason) at byte \(failure.offset); kept \(failure.offset) bytes (through version \(segment.lastVersion)), dropped \(dropped) bytes and every later segment; original set aside as \(path).damaged"
                    )
                    repaired = true
                    dropRest = true
                }
                segment.length = failure.offset
            } else if bytes.count < original.count {
                // Repair of a file longer than the clean stop recorded: what was recorded
                // is intact; the rest is cut off.
                let extra = original.count - bytes.count
                try setAside(io: io, path, bytes: original)
                try io.truncate(path, to: bytes.count)
                report.repairedBytes += extra
                report.notes.append(
                    "repair: \(path): \(extra) bytes after the \(bytes.count) the clean stop recorded; cut off, original set aside as \(path).damaged"
                )
                repaired = true
            } else if endsShort {
                // Repair of a file shorter than recorded, whose records are all valid: the
                // file is the valid prefix already; the recorded rest is lost.
                report.notes.append(
                    "repair: \(path) ends at byte \(bytes.count), short of what the clean stop recorded; kept it (through version \(segment.lastVersion)), every later segment set aside"
                )
                repaired = true
                dropRest = true
            }
            segments.append(segment)
        }

        // After a clean stop the list must be where the stop left it.
        if let recorded {
            let found = rebuilder.map { "\"\(listName ?? "")\" through \($0.sequencer.position)" } ?? "nothing"
            let exact = rebuilder?.sequencer.position == recorded.position && listName == recorded.name
            if !exact && !repaired {
                guard options.repair else {
                    throw .corrupt(
                        directory, offset: 0,
                        "recovered \(found) where the clean stop recorded \"\(recorded.name)\" through \(recorded.position) (start with --repair to keep what was recovered)"
                    )
                }
                repaired = true
            }
            if repaired {
                var lost = ""
                if let position = rebuilder?.sequencer.position, position.epoch == recorded.position.epoch,
                    position.version < recorded.position.version
                {
                    lost = ": \(recorded.position.version - position.version) acknowledged batches lost"
                }
                report.notes.append(
                    "repair: list \"\(recorded.name)\" was recorded through \(recorded.position) at the clean stop; recovered \(found)\(lost)"
                )
            }
        }

        if snapshotPath != nil {
            // Older snapshots are never read again (the log before the loaded one is
            // gone or going): a crash between a snapshot's rename and their deletion
            // leaves them. Deleted here so a clean stop never finds files it cannot
            // account for.
            for (generation, path) in snapshots where generation < snapshotGeneration && io.exists(path) {
                try io.remove(path)
                directoryChanged = true
            }
        }
        if directoryChanged { try io.syncDirectory(directory) }
        guard let listName, let rebuilder else {
            // Nothing usable (an empty directory, or only damaged files set aside).
            return nil
        }
        var files = RecoveredListFiles(
            name: listName, directory: directory,
            list: RecoveredList(name: listName, sequencer: rebuilder.sequencer, needsNewEpoch: repaired))
        files.segments = segments
        files.position = rebuilder.sequencer.position
        if let snapshotPath {
            files.snapshots = [SnapshotFile(generation: snapshotGeneration, path: snapshotPath, length: snapshotLength)]
        }
        files.nextGeneration = max(snapshotGeneration, segmentFiles.last?.0 ?? 0) + 1
        files.batchesSinceSnapshot = batchesAfterSnapshot
        files.bytesSinceSnapshot = bytesAfterSnapshot
        // Appends continue the last segment when it continues the recovered state; it is
        // opened by the first append (a daemon with many lists must not open them all).
        if repaired
            || segments.last.map({
                $0.epoch != rebuilder.sequencer.position.epoch || $0.lastVersion != rebuilder.sequencer.position.version
            }) ?? true
        {
            files.lastSegmentClosedForGood = true
        }
        if repaired {
            report.notes.append(
                "list \"\(listName)\": recovered through \(rebuilder.sequencer.position) after repair; a new epoch starts"
            )
        }
        return files
    }

    /// Keeps a copy of a damaged file for a human to look at.
    static func setAside(io: FileIO, _ path: String, bytes: [UInt8]) throws(StoreError) {
        let target = path + ".damaged"
        let fd = try io.openForAppend(target, create: true, truncate: true)
        defer { io.close(fd) }
        try io.write(fd, bytes, path: target)
        try io.sync(fd, path: target)
    }
}
