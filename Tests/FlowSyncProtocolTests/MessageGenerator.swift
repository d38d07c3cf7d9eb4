import FlowSyncCore
import FlowSyncProtocol

/// Seeded random messages of every type, with every operation and changeset list,
/// including non-ASCII strings, empty and absent optionals, and extreme integers.
/// Everything stays within ``DecoderLimits/client`` so a round trip must succeed.
struct MessageGenerator {
    var random: SplitMix64

    init(seed: UInt64) {
        random = SplitMix64(seed: seed)
    }

    private static let alphabet: [String] = [
        "a", "b", "z", "Q", "0", "9", "-", "_", ".", " ", "é", "ß", "日", "本", "🙂", "\u{0}",
    ]

    mutating func string(max: Int = 12) -> String {
        String(
            (0..<random.int(0...max)).map { _ in Self.alphabet[random.int(0..<Self.alphabet.count)] }.joined().prefix(
                max))
    }

    mutating func bytes(max: Int = 40) -> [UInt8] {
        (0..<random.int(0...max)).map { _ in UInt8.random(in: 0...255, using: &random) }
    }

    mutating func optionalBytes() -> [UInt8]? { random.chance(0.3) ? nil : bytes(max: 8) }

    /// Small values mostly, with the varint boundaries and the extremes mixed in.
    mutating func u64() -> UInt64 {
        switch random.int(0..<6) {
        case 0:
            return [0, 1, 127, 128, 16_383, 16_384, UInt64(UInt32.max), UInt64.max, UInt64.max - 1, 1 << 63][
                random.int(0..<10)]
        case 1: return random.next()
        default: return UInt64(random.int(0..<1_000))
        }
    }

    mutating func u32() -> UInt32 {
        UInt32(truncatingIfNeeded: random.chance(0.2) ? UInt64(UInt32.max) : u64() % (1 << 32))
    }

    mutating func index() -> Int {
        random.chance(0.05) ? Int(Int32.max) : random.int(0..<300)
    }

    mutating func row() -> Row {
        Row(id: string(), kind: random.chance(0.5) ? "cell" : string(max: 6), payload: bytes())
    }

    mutating func section() -> Section {
        Section(
            id: string(), header: optionalBytes(), footer: optionalBytes(),
            rows: (0..<random.int(0...4)).map { _ in row() })
    }

    mutating func sectionRef() -> SectionRef { random.chance(0.5) ? .id(string()) : .index(index()) }

    mutating func rowRef() -> RowRef { random.chance(0.5) ? .id(string()) : .index(index(), in: sectionRef()) }

    mutating func path() -> RowPath { RowPath(section: index(), row: index()) }

    mutating func version() -> ListVersion { ListVersion(epoch: u64(), version: u64()) }

    mutating func operation() -> Operation {
        switch random.int(0..<15) {
        case 0: return .setSections((0..<random.int(0...3)).map { _ in section() })
        case 1: return .insertSections((0..<random.int(0...3)).map { _ in section() }, at: index())
        case 2: return .removeSections((0..<random.int(0...3)).map { _ in sectionRef() })
        case 3: return .removeAllSections
        case 4: return .moveSection(sectionRef(), to: index())
        case 5: return .swapSections(sectionRef(), sectionRef())
        case 6: return .setHeader(sectionRef(), optionalBytes())
        case 7: return .setFooter(sectionRef(), optionalBytes())
        case 8: return .setRows((0..<random.int(0...3)).map { _ in row() }, in: sectionRef())
        case 9: return .insertRows((0..<random.int(0...3)).map { _ in row() }, in: sectionRef(), at: index())
        case 10: return .replaceRow(rowRef(), with: row())
        case 11: return .removeRows((0..<random.int(0...3)).map { _ in rowRef() })
        case 12: return .removeAllRows(in: sectionRef())
        case 13: return .moveRow(rowRef(), toSection: sectionRef(), at: index())
        default: return .swapRows(rowRef(), rowRef())
        }
    }

    mutating func stage() -> ChangesetStage {
        var s = ChangesetStage()
        func some<T>(_ make: (inout MessageGenerator) -> T) -> [T] {
            random.chance(0.4) ? (0..<random.int(1...3)).map { _ in make(&self) } : []
        }
        s.sectionDeletes = some { $0.index() }
        s.sectionInserts = some { SectionInsert(index: $0.index(), section: $0.section()) }
        s.sectionMoves = some { SectionMove(from: $0.index(), to: $0.index()) }
        s.supplementaryUpdates = some {
            SupplementaryUpdate(
                section: $0.index(), element: $0.random.chance(0.5) ? .header : .footer, value: $0.optionalBytes())
        }
        s.rowDeletes = some { $0.path() }
        s.rowInserts = some { RowAtPath(path: $0.path(), row: $0.row()) }
        s.rowMoves = some { RowMove(from: $0.path(), to: $0.path()) }
        s.rowUpdates = some { RowAtPath(path: $0.path(), row: $0.row()) }
        return s
    }

    /// A changeset: synthetic (any combination, even empty stages) or real (the diff of a
    /// random edit of a random director).
    mutating func changeset() -> Changeset {
        if random.chance(0.5) {
            // A real diff: a random director against an edited copy of itself.
            var counter = 0
            func row(_ g: inout MessageGenerator) -> Row {
                counter += 1
                return Row(id: "r\(counter)", kind: "cell", payload: Array("{\"v\":\(g.random.int(0..<3))}".utf8))
            }
            let old = (0..<random.int(0...4)).map { s in
                Section(
                    id: "s\(s)", header: random.chance(0.5) ? [1] : nil,
                    rows: (0..<random.int(0...6)).map { _ in row(&self) })
            }
            var new = old.filter { _ in random.chance(0.8) }.shuffled(using: &random)
            for k in new.indices {
                var rows = new[k].rows.filter { _ in random.chance(0.8) }.shuffled(using: &random)
                rows += (0..<random.int(0...2)).map { _ in row(&self) }
                for j in rows.indices where random.chance(0.2) {
                    rows[j] = Row(id: rows[j].id, kind: "cell", payload: [9])
                }
                new[k] = Section(id: new[k].id, header: random.chance(0.5) ? [2] : new[k].header, rows: rows)
            }
            guard let a = try? Director(sections: old), let b = try? Director(sections: new) else { return Changeset() }
            return Changeset.diff(from: a, to: b)
        }
        var c = Changeset()
        c.stages = (0..<random.int(0...3)).map { _ in stage() }
        return c
    }

    mutating func reaction() -> ClientReaction {
        switch random.int(0..<5) {
        case 0: return .retry
        case 1: return .resync
        case 2: return .giveUp
        case 3: return .backoff(milliseconds: u32())
        default: return .refreshToken
        }
    }

    mutating func message() -> Message {
        message(of: MessageType.allCases[random.int(0..<MessageType.allCases.count)])
    }

    mutating func message(of type: MessageType) -> Message {
        switch type {
        case .hello:
            return .hello(
                Hello(
                    minVersion: UInt16(random.int(0...3)),
                    maxVersion: UInt16.random(in: 0...UInt16.max, using: &random),
                    clientName: string(), clientID: string(), authToken: random.chance(0.5) ? string(max: 40) : nil))
        case .welcome:
            return .welcome(
                Welcome(
                    version: UInt16(random.int(1...3)), serverName: string(),
                    limits: ServerLimits(
                        maxFrameBytes: u32(), maxInflatedBytes: u32(), maxOpsPerMutation: u32(),
                        maxListsPerConnection: u32(),
                        maxListNameBytes: u32(), maxIDBytes: u32(), maxPayloadBytes: u32()),
                    heartbeatMilliseconds: u32(), dictionary: bytes(max: 64)))
        case .subscribe:
            return .subscribe(
                Subscribe(
                    listName: string(), resumeFrom: random.chance(0.5) ? version() : nil,
                    digest: random.chance(0.5) ? StateDigest(rawValue: random.next()) : nil))
        case .unsubscribe:
            return .unsubscribe(Unsubscribe(listName: string()))
        case .snapshot:
            return .snapshot(
                Snapshot(
                    listName: string(), position: version(), digest: StateDigest(rawValue: random.next()),
                    reason: Snapshot.Reason.allCases[random.int(0..<4)],
                    sections: (0..<random.int(0...4)).map { _ in section() }))
        case .diff:
            return .diff(
                Diff(
                    listName: string(), epoch: u64(), fromVersion: u64(), toVersion: u64(),
                    digest: StateDigest(rawValue: random.next()), changeset: changeset(),
                    mutations: (0..<random.int(0...3)).map { _ in MutationID(clientID: string(), seq: u64()) }))
        case .mutate:
            return .mutate(
                Mutate(
                    listName: string(), clientID: string(), seq: u64(), base: version(),
                    operations: (0..<random.int(0...5)).map { _ in operation() }))
        case .ack:
            return .ack(Ack(listName: string(), seq: u64(), committed: version()))
        case .reject:
            return .reject(
                Reject(
                    listName: string(), seq: u64(),
                    code: ErrorCode(rawValue: UInt16.random(in: 0...UInt16.max, using: &random)),
                    message: string(max: 30)))
        case .error:
            let code =
                random.chance(0.7)
                ? ErrorCode.allKnown[random.int(0..<ErrorCode.allKnown.count)]
                : ErrorCode(rawValue: UInt16(random.int(0...9_999)))
            return .error(
                ErrorMessage(
                    code: code, message: string(max: 30), reaction: reaction(),
                    listName: random.chance(0.5) ? string() : nil, closesConnection: random.chance(0.5)))
        case .ping: return .ping(Ping(nonce: u64()))
        case .pong: return .pong(Pong(nonce: u64()))
        case .notice:
            return .notice(
                Notice(
                    kind: Notice.Kind.allCases[random.int(0..<2)], message: string(max: 30), delayMilliseconds: u32()))
        case .statsRequest:
            return .statsRequest(StatsRequest(requestID: u64(), listName: random.chance(0.5) ? string() : nil))
        case .refreshToken:
            return .refreshToken(RefreshToken(token: string(max: 60)))
        case .statsReply:
            return .statsReply(
                StatsReply(
                    requestID: u64(),
                    entries: (0..<random.int(0...5)).map { _ in
                        StatsReply.Entry(name: string(), value: Int64(bitPattern: u64()))
                    }))
        case .backupRequest:
            return .backupRequest(BackupRequest(requestID: u64(), directory: string(max: 60)))
        case .backupReply:
            return .backupReply(
                BackupReply(
                    requestID: u64(),
                    failure: random.chance(0.5) ? nil : ErrorCode(rawValue: UInt16(random.int(1...65_535))),
                    message: string(max: 60), lists: u64(), bytes: u64()))
        }
    }

    /// A random encoder configuration: raw, or compressed at any threshold, with or
    /// without the standard dictionary, at level 1 or 6.
    mutating func configuration() -> CompressionConfiguration {
        switch random.int(0..<4) {
        case 0: return .disabled
        case 1: return CompressionConfiguration(threshold: 0, level: 1, dictionary: nil)
        case 2: return CompressionConfiguration(threshold: random.int(0...200))
        default: return .default
        }
    }
}
