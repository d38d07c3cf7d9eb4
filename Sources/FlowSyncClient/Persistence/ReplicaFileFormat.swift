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
            && zip(a.writes, b.writes).allSatisfy {
                $0.seq == $1.seq && $0.anchored == $1.anchored && $0.sent == $1.sent && $0.ackedAt == $1.ackedAt
            }
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
        let encoder = FrameEncoder(
            configuration: CompressionConfiguration(threshold: 64, level: 1, dictionary: .standard))
        let frame = encoder.encode(
            .snapshot(
                Snapshot(
                    listName: replica.name, position: replica.position, digest: replica.confirmed.digest,
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
            director.digest == snapshot.digest
        else {
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
                    mutate.seq == seq, mutate.listName == name
                else {
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
    static func restore(
        list name: String, replica: [UInt8]?, pending: [UInt8]?
    ) -> (restored: RestoredList?, discarded: [String]) {
        var discarded: [String] = []
        /// The decoded file, when there is one, it is intact and it holds list `name`.
        func use<T>(
            _ bytes: [UInt8]?, _ what: String, _ decode: ([UInt8]) throws(ReplicaFileError) -> T,
            name listName: (T) -> String
        ) -> T? {
            guard let bytes else { return nil }
            do throws(ReplicaFileError) {
                let decoded = try decode(bytes)
                guard listName(decoded) == name else {
                    throw ReplicaFileError(message: "it holds list \"\(listName(decoded))\"")
                }
                return decoded
            } catch {
                discarded.append("\(what): \(error)")
                return nil
            }
        }
        let replica = use(replica, "replica file", decodeReplica, name: \.name)
        let pending = use(pending, "pending-writes file", decodePending, name: \.name)
        guard replica != nil || pending != nil else { return (nil, discarded) }
        let restored = RestoredList(
            confirmed: replica?.confirmed ?? Director(limits: ListReplica.limits), position: replica?.position,
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
