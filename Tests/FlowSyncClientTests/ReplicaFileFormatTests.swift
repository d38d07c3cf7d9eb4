import FlowSyncCore
import FlowSyncProtocol
import FlowSyncTestSupport
import Testing

@testable import FlowSyncClient

/// The persisted files' format: round trips of random lists and of every kind of
/// anchored operation, and hostile input — every truncation, random byte flips, and
/// garbage under a valid checksum — refused with an error, never a trap or a wrong value.
@Suite(.timeLimit(.minutes(2))) struct ReplicaFileFormatTests {
    /// Random pending writes: groups the generator makes against `state`, anchored
    /// there, some of them "sent" and some "acked".
    static func pendingWrites(_ generator: inout DirectorGenerator, on state: Director, count: Int) -> [PendingWrite] {
        var state = state
        var writes: [PendingWrite] = []
        for k in 0..<count {
            let ops = generator.group(for: state, maxOps: 5)
            var probe = state
            guard let anchored = try? probe.anchor(ops), (try? state.apply(ops)) != nil else { continue }
            var write = PendingWrite(seq: UInt64(100 + k), anchored: anchored)
            if k % 2 == 0 {
                write.sent = Mutate(
                    listName: "list/ü", clientID: "c", seq: write.seq, base: ListVersion(epoch: 9, version: UInt64(k)),
                    operations: ops)
            }
            if k % 3 == 0 { write.ackedAt = ListVersion(epoch: 9, version: UInt64(k + 1)) }
            writes.append(write)
        }
        return writes
    }

    @Test("replica files round-trip random lists", arguments: 0..<20)
    func replicaRoundTrip(seed: Int) throws {
        var generator = DirectorGenerator(seed: UInt64(seed))
        let director = try Director(sections: generator.director().sections, limits: ListReplica.limits)
        let replica = PersistedReplica(
            name: "list-\(seed)", position: ListVersion(epoch: UInt64(seed) &* 77, version: UInt64(seed)),
            confirmed: director)
        let decoded = try ReplicaFileFormat.decodeReplica(ReplicaFileFormat.encode(replica))
        #expect(decoded == replica)
        #expect(decoded.confirmed.digest == director.digest)
    }

    @Test("pending files round-trip writes of every operation kind", arguments: 0..<20)
    func pendingRoundTrip(seed: Int) throws {
        var generator = DirectorGenerator(seed: UInt64(seed) &+ 1_000)
        let writes = Self.pendingWrites(&generator, on: generator.director(), count: 30)
        let pending = PersistedPending(name: "list/ü", nextSeq: 12_345, writes: writes)
        #expect(try ReplicaFileFormat.decodePending(ReplicaFileFormat.encode(pending)) == pending)
    }

    @Test("every anchored operation kind survives the file")
    func everyKind() throws {
        let anchor = Anchor(after: ["a", "b"], before: ["c"])
        let row = Row(id: "r", kind: "k", text: "{}")
        let section = Section(id: "s", header: [1, 2], footer: nil, rows: [row])
        let all: [AnchoredOperation] = [
            .setSections([section]), .insertSections([section], at: anchor), .removeSections(["s", "t"]),
            .removeAllSections,
            .moveSection("s", to: anchor), .swapSections("s", "t"), .setHeader("s", [9]), .setHeader("s", nil),
            .setFooter("s", []),
            .setRows([row], in: "s"), .insertRows([row, Row(id: "q")], in: "s", at: Anchor(after: [], before: [])),
            .replaceRow("r", with: row), .removeRows(["r"]), .removeAllRows(in: "s"),
            .moveRow("r", toSection: "t", at: anchor),
            .swapRows("r", "q"),
        ]
        let pending = PersistedPending(name: "x", nextSeq: 2, writes: [PendingWrite(seq: 1, anchored: all)])
        #expect(try ReplicaFileFormat.decodePending(ReplicaFileFormat.encode(pending)) == pending)
    }

    @Test("every truncation and random damage is refused, never trusted")
    func hostileBytes() throws {
        var generator = DirectorGenerator(seed: 42)
        let director = try Director(sections: generator.director().sections, limits: ListReplica.limits)
        let files = [
            ReplicaFileFormat.encode(
                PersistedReplica(name: "l", position: ListVersion(epoch: 1, version: 2), confirmed: director)),
            ReplicaFileFormat.encode(
                PersistedPending(
                    name: "list/ü", nextSeq: 5, writes: Self.pendingWrites(&generator, on: director, count: 8))),
        ]
        var random = SeededRandom(seed: 7)
        for file in files {
            let decode = { (bytes: [UInt8]) -> Bool in
                if file.starts(with: ReplicaFileFormat.replicaMagic) {
                    return (try? ReplicaFileFormat.decodeReplica(bytes)) != nil
                }
                return (try? ReplicaFileFormat.decodePending(bytes)) != nil
            }
            #expect(decode(file))
            for length in 0..<file.count {
                #expect(!decode(Array(file[0..<length])), "a file cut at \(length) of \(file.count) bytes was accepted")
            }
            for _ in 0..<500 {
                var damaged = file
                let at = random.int(0..<damaged.count)
                damaged[at] ^= UInt8(random.int(1...255))
                #expect(!decode(damaged), "a flipped byte at \(at) was accepted")
            }
        }
    }

    @Test("garbage under a valid checksum is refused with an error")
    func garbageWithValidChecksum() {
        var random = SeededRandom(seed: 11)
        for trial in 0..<2_000 {
            let magic = trial % 2 == 0 ? ReplicaFileFormat.replicaMagic : ReplicaFileFormat.pendingMagic
            var body = magic + [ReplicaFileFormat.formatVersion]
            for _ in 0..<random.int(0..<64) { body.append(UInt8(random.int(0...255))) }
            let sum = XXH64.hash(body)
            let file = body + (0..<8).map { UInt8(truncatingIfNeeded: sum >> UInt64(56 - 8 * $0)) }
            // Decoding must end in a value or a ReplicaFileError; reaching here without a
            // trap is the point, and a replica must still match its digest.
            if let replica = try? ReplicaFileFormat.decodeReplica(file) {
                #expect(replica.confirmed.digest == StateDigest.compute(replica.confirmed.sections))
            }
            _ = try? ReplicaFileFormat.decodePending(file)
        }
    }

    @Test("restoring: a damaged replica is left out, intact writes still come back")
    func restoreLeavesDamageOut() throws {
        let director = try Director(sections: [Section(id: "s", rows: [Row(id: "r")])], limits: ListReplica.limits)
        var replica = ReplicaFileFormat.encode(
            PersistedReplica(name: "l", position: ListVersion(epoch: 1, version: 3), confirmed: director))
        let pending = ReplicaFileFormat.encode(
            PersistedPending(name: "l", nextSeq: 9, writes: [PendingWrite(seq: 8, anchored: [.removeRows(["r"])])]))
        replica[replica.count / 2] ^= 0x40
        let (restored, discarded) = ReplicaFileFormat.restore(list: "l", replica: replica, pending: pending)
        #expect(discarded.count == 1 && discarded[0].contains("replica file"))
        #expect(restored?.position == nil && restored?.pending.map(\.seq) == [8] && restored?.nextSeq == 9)
        // A file of another list (a hash collision, a copied directory) is not used.
        let other = ReplicaFileFormat.restore(list: "m", replica: nil, pending: pending)
        #expect(other.restored == nil && other.discarded.count == 1)
    }
}

/// The cadence of replica writes and the pending-file rules, decision by decision.
@Suite(.timeLimit(.minutes(2))) struct ReplicaPersistenceTests {
    @Test("the schedule writes after N batches, after T ms, and on flush")
    func schedule() {
        var schedule = PersistenceSchedule(everyBatches: 3, everyMilliseconds: 1_000)
        #expect(!schedule.isDirty && !schedule.isDue(now: 0))
        schedule.advanced(batches: 1, now: 10)
        schedule.advanced(batches: 1, now: 20)
        #expect(schedule.isDirty && !schedule.isDue(now: 20))
        schedule.advanced(batches: 1, now: 30)
        #expect(schedule.isDue(now: 30))
        schedule.wrote()
        schedule.advanced(batches: 1, now: 100)
        #expect(!schedule.isDue(now: 1_099) && schedule.isDue(now: 1_100))
        schedule.wrote()
        #expect(!schedule.isDue(now: 5_000) && !schedule.isDirty)
        schedule.advanced(batches: 10, now: 5_001)
        #expect(schedule.isDue(now: 5_001))
    }

    static func session() -> ClientSession {
        ClientSession(
            settings: .init(
                clientID: "me", clientName: "t", token: nil, reconnect: .default, pingIntervalMilliseconds: 0,
                handshakeTimeoutMilliseconds: 10_000, firstSeq: 1, randomSeed: 1))
    }

    @Test("an edit rewrites the pending file; a commit keeps the write there until a replica holds it")
    func committedWritesStayUntilAReplicaHoldsThem() throws {
        var session = Self.session()
        var persistence = ReplicaPersistence(options: PersistenceOptions(directory: "/unused", writeEveryBatches: 2))
        _ = session.start(now: 0)
        _ = session.connected(now: 0)
        _ = session.subscribe("l")
        _ = session.received(
            .welcome(
                Welcome(version: 1, serverName: "s", limits: ServerLimits(), heartbeatMilliseconds: 0, dictionary: [])),
            now: 0)
        let epoch = ListVersion(epoch: 5, version: 0)
        _ = session.received(
            .snapshot(
                Snapshot(
                    listName: "l", position: epoch, digest: StateDigest.compute([]), reason: .freshSubscribe,
                    sections: [])), now: 0)
        // The first snapshot is one batch: nothing written yet (cadence 2), no writes.
        #expect(persistence.observe(session, now: 0).isEmpty)

        let (seq, actions) = try session.submit([.insertSections([Section(id: "a")], at: 0)], to: "l")
        for case .complete(let list, let s, let result) in actions { persistence.completed(list: list, seq: s, result) }
        guard case .writePending(let pending)? = persistence.observe(session, now: 1).first else {
            Issue.record("no pending write")
            return
        }
        #expect(pending.writes.map(\.seq) == [seq] && pending.writes[0].sent != nil && pending.nextSeq == seq + 1)

        // The server commits it at 5:1 (a Diff naming it): the write leaves the session's
        // queue; the replica is due (second batch) and the pending file written with it
        // still names the write, with its commit version.
        var director = Director(limits: ListReplica.limits)
        let changeset = try director.apply([.insertSections([Section(id: "a")], at: 0)])
        let diff = Diff(
            listName: "l", epoch: 5, fromVersion: 0, toVersion: 1, digest: director.digest, changeset: changeset,
            mutations: [MutationID(clientID: "me", seq: seq)])
        for case .complete(let list, let s, let result) in session.received(.diff(diff), now: 2) {
            persistence.completed(list: list, seq: s, result)
        }
        #expect(session.lists["l"]!.pending.isEmpty)
        let due = persistence.observe(session, now: 2)
        guard due.count == 2, case .writePending(let now) = due[0],
            case .writeReplica(let replica, let withReplica) = due[1]
        else {
            Issue.record("expected a pending write and a replica write, got \(due)")
            return
        }
        #expect(now.writes.map(\.seq) == [seq] && now.writes[0].ackedAt == ListVersion(epoch: 5, version: 1))
        #expect(replica.position == ListVersion(epoch: 5, version: 1) && replica.confirmed == director)
        #expect(
            withReplica.writes.map(\.seq) == [seq] && withReplica.writes[0].ackedAt == ListVersion(epoch: 5, version: 1)
        )

        // Until that replica is durable nothing changes; then the write leaves the file.
        #expect(persistence.observe(session, now: 3).isEmpty)
        persistence.replicaWritten(list: "l", at: replica.position)
        guard case .writePending(let after)? = persistence.observe(session, now: 4).first else {
            Issue.record("no rewrite")
            return
        }
        #expect(after.writes.isEmpty)
    }

    @Test("a restored list is shown at once from disk, resumes from its position and resends its write unchanged")
    func restoredListResumes() throws {
        let confirmed = try Director(sections: [Section(id: "a", rows: [Row(id: "r1")])], limits: ListReplica.limits)
        var probe = confirmed
        let ops: [FlowSyncCore.Operation] = [.insertRows([Row(id: "r2")], in: .id("a"), at: 1)]
        let sent = Mutate(
            listName: "l", clientID: "me", seq: 40, base: ListVersion(epoch: 5, version: 7), operations: ops)
        let restored = RestoredList(
            confirmed: confirmed, position: ListVersion(epoch: 5, version: 7),
            pending: [PendingWrite(seq: 40, anchored: try probe.anchor(ops), sent: sent)], nextSeq: 41)
        var session = Self.session()
        _ = session.start(now: 0)
        let shown = session.subscribe("l", restoring: restored)
        guard case .deliver(_, let cause, _, let view, let version, let pending)? = shown.first else {
            Issue.record("nothing shown")
            return
        }
        #expect(cause == .initial && version == ListVersion(epoch: 5, version: 7) && pending == 1)
        #expect(view.rowCount == 2 && session.lists["l"]!.isRestored)
        _ = session.connected(now: 1)
        let welcome = session.received(
            .welcome(
                Welcome(version: 1, serverName: "s", limits: ServerLimits(), heartbeatMilliseconds: 0, dictionary: [])),
            now: 1)
        let sends = welcome.compactMap { action -> Message? in
            if case .send(let m) = action { return m } else { return nil }
        }
        #expect(
            sends.contains(
                .subscribe(
                    Subscribe(listName: "l", resumeFrom: ListVersion(epoch: 5, version: 7), digest: confirmed.digest))))
        #expect(sends.contains(.mutate(sent)))
        // New writes never reuse a stored seq.
        let (seq, _) = try session.submit([.removeRows([.id("r1")])], to: "l")
        #expect(seq == 41)
    }
}
