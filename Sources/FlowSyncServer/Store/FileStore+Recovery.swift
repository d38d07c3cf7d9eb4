import FlowSyncCore
import FlowSyncProtocol

extension FileStore {
    /// Recovery at start, per list (docs/STORAGE.md, "Recovery"):
    /// 1. the newest snapshot that passes its checksum (a damaged newer one is
    ///    corruption: refused, or set aside under `repair`);
    /// 2. the log segments in order, records after the snapshot's version replayed
    ///    (each checked: checksum, contiguous version, list name, and the digest after
    ///    applying it);
    /// 3. a bad record at the end of the last segment with nothing valid after it is a
    ///    **torn tail** (a write the crash interrupted): truncated, and the bytes logged;
    /// 4. a bad record anywhere else is **corruption**: the store refuses (an error that
    ///    names file and offset) unless `repair`, which keeps the valid prefix, sets the
    ///    damaged files aside as `*.damaged` and asks for a new epoch.
    public func recover(_ options: RecoveryOptions) throws(StoreError) -> RecoveryReport {
        try takeLock()
        var report = RecoveryReport()
        // A run that did not stop cleanly under a policy other than `always` may have
        // acknowledged batches that never reached the disk: every list starts a new epoch.
        var lossy = false
        if io.exists(runningMarker) {
            let text = String(decoding: try io.readFile(runningMarker), as: UTF8.self)
            if !text.contains("fsync=always") {
                lossy = true
                report.notes.append("the previous run stopped uncleanly with \(text.trimmingCharacters(in: .whitespacesAndNewlines)): acknowledged batches may be lost, every list starts a new epoch")
            }
        }
        for entry in try io.listDirectory(listsDirectory).sorted() {
            let path = listsDirectory + "/" + entry
            if var list = try recoverList(at: path, options: options, report: &report) {
                if lossy { list.needsNewEpoch = true }
                report.lists.append(list)
            }
        }
        try writeRunningMarker()
        return report
    }

    private enum RecordFailure: Error {
        /// Checksum or length (or the kind byte of a record that fails its checksum):
        /// could be a torn write.
        case damaged(String)
        /// Well-formed but does not fit: corruption for sure.
        case misfit(String)
    }

    private func recoverList(at directory: String, options: RecoveryOptions, report: inout RecoveryReport) throws(StoreError) -> RecoveredList? {
        var snapshots: [(UInt64, String)] = []
        var segmentFiles: [(UInt64, String)] = []
        for name in try io.listDirectory(directory) {
            let path = directory + "/" + name
            if name.hasSuffix(".tmp") {
                // An interrupted snapshot write: never renamed, so never used.
                try io.remove(path)
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

        // 1. The newest valid snapshot.
        for (generation, path) in snapshots {
            let bytes = try io.readFile(path)
            do throws(StoreFormat.HeaderProblem) {
                let snapshot = try StoreFormat.decodeSnapshot(bytes)
                do {
                    rebuilder = try ListRebuilder(snapshot: snapshot, options: options)
                } catch {
                    throw StoreFormat.HeaderProblem.damaged(error.description)
                }
                listName = snapshot.listName
                snapshotGeneration = generation
                snapshotPath = path
                break
            } catch {
                let (reason, offset) = error.reasonAndOffset
                guard options.repair else { throw .corrupt(path, offset: offset, reason + " (start with --repair to use what is still valid)") }
                try setAside(path, bytes: bytes)
                try io.remove(path)
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
            try setAside(path, bytes: bytes)
            try io.remove(path)
            report.notes.append(note)
            report.repairedBytes += bytes.count
            repaired = true
            dropRest = true
        }
        for (index, (generation, path)) in segmentFiles.enumerated() {
            if dropRest {
                try setAside(path, bytes: try io.readFile(path))
                try io.remove(path)
                report.notes.append("repair: set aside \(path) (after the damage)")
                continue
            }
            let isLast = index == segmentFiles.count - 1
            let bytes = try io.readFile(path)
            let header: StoreFormat.SegmentHeader
            let headerLength: Int
            do throws(StoreFormat.HeaderProblem) {
                (header, headerLength) = try StoreFormat.decodeSegmentHeader(bytes)
            } catch {
                if case .short = error, isLast {
                    // Created, but the crash came before its header was on disk: no
                    // record can be in it.
                    try io.remove(path)
                    report.truncatedBytes += bytes.count
                    report.notes.append("torn tail: removed \(path) (\(bytes.count) bytes, an incomplete segment header)")
                    continue
                }
                var (reason, offset) = error.reasonAndOffset
                if case .short = error { reason = "segment header truncated (\(bytes.count) bytes)" }
                guard options.repair else { throw .corrupt(path, offset: offset, reason + " (start with --repair to keep the valid prefix)") }
                try dropSegment(path, bytes: bytes, "repair: \(path): \(reason); set aside with everything after it")
                continue
            }
            if let name = listName, name != header.listName {
                throw .corrupt(path, offset: 0, "segment of list \"\(header.listName)\" in the directory of \"\(name)\"")
            }
            listName = header.listName
            if let current = rebuilder, header.epoch != current.sequencer.position.epoch {
                if snapshotPath != nil && generation < snapshotGeneration {
                    // From before a new epoch began (its snapshot is newer): obsolete.
                    try io.remove(path)
                    continue
                }
                guard options.repair else { throw .corrupt(path, offset: 0, "segment of epoch \(header.epoch) after epoch \(current.sequencer.position.epoch) (start with --repair)") }
                try dropSegment(path, bytes: bytes, "repair: \(path) belongs to another epoch; set aside with everything after it")
                continue
            }
            if rebuilder == nil {
                if header.firstVersion != 1 {
                    guard options.repair else { throw .corrupt(path, offset: 0, "the log starts at version \(header.firstVersion) and no snapshot covers what is before it (start with --repair)") }
                    try dropSegment(path, bytes: bytes, "repair: \(path) starts at version \(header.firstVersion) with no snapshot before it; set aside with everything after it")
                    continue
                }
                rebuilder = ListRebuilder(epoch: header.epoch, options: options)
            }

            var segment = Segment(generation: generation, path: path, epoch: header.epoch, firstVersion: header.firstVersion, lastVersion: header.firstVersion - 1)
            var offset = headerLength
            var expected = header.firstVersion
            let decoder = FrameDecoder(limits: StoreFormat.decoderLimits, dictionary: .standard)
            var failure: (offset: Int, problem: RecordFailure)?
            bytes.withUnsafeBytes { raw in
                while offset < raw.count {
                    guard let length = StoreFormat.validRecord(in: raw, at: offset) else {
                        if StoreFormat.validRecord(in: raw, at: offset, anyKind: true) != nil {
                            // Its checksum holds, so it was written that way: not a torn write.
                            failure = (offset, .misfit("record kind \(raw[offset + StoreFormat.recordHeaderBytes]) is reserved (format 1 stores kind 1, a batch, only)"))
                        } else {
                            failure = (offset, .damaged(raw.count - offset < StoreFormat.recordHeaderBytes ? "incomplete record header" : "record fails its length or checksum"))
                        }
                        return
                    }
                    let body = UnsafeRawBufferPointer(rebasing: raw[(offset + StoreFormat.recordHeaderBytes + 1)..<(offset + StoreFormat.recordHeaderBytes + length)])
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
                    guard diff.listName == header.listName, diff.epoch == header.epoch, diff.toVersion == expected, diff.fromVersion + 1 == expected else {
                        failure = (offset, .misfit("record \(diff.listName) \(diff.from)→\(diff.to) where \(header.listName) version \(expected) was expected"))
                        return
                    }
                    if expected > rebuilder!.sequencer.position.version {
                        do {
                            try rebuilder!.replay(Sequencer.Commit(from: diff.from, to: diff.to, changeset: diff.changeset, digest: diff.digest, mutations: diff.mutations))
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
                if case .damaged = failure.problem, isLast {
                    isTorn = bytes.withUnsafeBytes { raw in
                        !((failure.offset + 1)..<raw.count).contains { StoreFormat.validRecord(in: raw, at: $0) != nil }
                    }
                } else {
                    isTorn = false
                }
                let dropped = bytes.count - failure.offset
                let reason: String
                switch failure.problem {
                case .damaged(let r), .misfit(let r): reason = r
                }
                if isTorn {
                    try io.truncate(path, to: failure.offset)
                    report.truncatedBytes += dropped
                    report.notes.append("torn tail: truncated \(path) at byte \(failure.offset), dropping \(dropped) bytes (\(reason))")
                } else {
                    guard options.repair else {
                        throw .corrupt(path, offset: failure.offset, reason + "; \(dropped) bytes from there on (start with --repair to keep the valid prefix)")
                    }
                    try setAside(path, bytes: bytes)
                    try io.truncate(path, to: failure.offset)
                    report.repairedBytes += dropped
                    report.notes.append("repair: \(path): \(reason) at byte \(failure.offset); kept \(failure.offset) bytes (through version \(segment.lastVersion)), dropped \(dropped) bytes and every later segment; original set aside as \(path).damaged")
                    repaired = true
                    dropRest = true
                }
            }
            segments.append(segment)
        }

        guard let listName, let rebuilder else {
            // Nothing usable (an empty directory, or only damaged files set aside).
            return nil
        }
        let files = ListFiles(name: listName, directory: directory)
        files.segments = segments
        if let snapshotPath { files.snapshots = [(snapshotGeneration, snapshotPath)] }
        files.nextGeneration = max(snapshotGeneration, segmentFiles.last?.0 ?? 0) + 1
        files.batchesSinceSnapshot = batchesAfterSnapshot
        files.bytesSinceSnapshot = bytesAfterSnapshot
        // Appends continue the last segment when it continues the recovered state; it is
        // opened by the first append (a daemon with many lists must not open them all).
        if repaired || segments.last.map({ $0.epoch != rebuilder.sequencer.position.epoch || $0.lastVersion != rebuilder.sequencer.position.version }) ?? true {
            files.lastSegmentClosedForGood = true
        }
        lists[listName] = files
        if repaired { report.notes.append("list \"\(listName)\": recovered through \(rebuilder.sequencer.position) after repair; a new epoch starts") }
        return RecoveredList(name: listName, sequencer: rebuilder.sequencer, needsNewEpoch: repaired)
    }

    /// Keeps a copy of a damaged file for a human to look at.
    private func setAside(_ path: String, bytes: [UInt8]) throws(StoreError) {
        let target = path + ".damaged"
        let fd = try io.openForAppend(target, create: true, truncate: true)
        defer { io.close(fd) }
        try io.write(fd, bytes, path: target)
        try io.sync(fd, path: target)
    }
}
