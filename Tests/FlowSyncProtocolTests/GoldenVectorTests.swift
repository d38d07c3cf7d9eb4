import FlowSyncCore
import FlowSyncProtocol
import Foundation
import Testing

/// Golden frames in `Vectors/frames.json`: each message is encoded and compared with the
/// file's hex byte for byte, and each hex frame is decoded and compared with the
/// message. The file also carries each frame's decoded meaning for implementers in
/// other languages; the test regenerates the whole file in memory and requires it to be
/// identical, so the file cannot drift from the code.
///
/// To regenerate after an intended format change: `FLOWSYNC_WRITE_VECTORS=1 swift test
/// --filter GoldenVectorTests`, then review the diff (every change is a protocol change).
@Suite(.serialized, .timeLimit(.minutes(3))) struct GoldenVectorTests {
    struct Vector {
        let name: String
        let note: String
        let compression: String
        let configuration: CompressionConfiguration
        let message: Message
    }

    static let raw = ("none", CompressionConfiguration.disabled)
    static let standard = ("zlib, standard dictionary", CompressionConfiguration.default)
    static let plain = ("zlib, no dictionary", CompressionConfiguration(threshold: 64, level: 6, dictionary: nil))

    static func vector(_ name: String, _ note: String, _ c: (String, CompressionConfiguration), _ m: Message) -> Vector
    {
        Vector(name: name, note: note, compression: c.0, configuration: c.1, message: m)
    }

    static let payload = Array(
        #"{"id":"item-42","title":"Quarterly report ready","subtitle":"Finance · 3 attachments","author":{"id":"u-7","name":"Ada"},"createdAt":"2025-06-01T12:00:00Z","read":false,"likes":17}"#
            .utf8)

    static let vectors: [Vector] = [
        vector(
            "hello", "client's first frame, with a token", raw,
            .hello(Hello(clientName: "ios-demo/1.0", clientID: "c-7f3a", authToken: "tok"))),
        vector(
            "hello-no-token", "a version range 1…3 and no token", raw,
            .hello(Hello(minVersion: 1, maxVersion: 3, clientName: "cli", clientID: "cli-1"))),
        vector(
            "welcome-no-dictionary", "server's answer; no preset dictionary (compressed frames use none)", raw,
            .welcome(
                Welcome(
                    version: 1, serverName: "flowsyncd/0.1", limits: ServerLimits(), heartbeatMilliseconds: 15_000,
                    dictionary: []))),
        vector(
            "welcome-standard-dictionary",
            "server's answer announcing the standard dictionary (its 2,028 bytes are the last 2,028 bytes of this frame); Welcome is never compressed",
            raw,
            .welcome(
                Welcome(
                    version: 1, serverName: "flowsyncd/0.1", limits: ServerLimits(), heartbeatMilliseconds: 15_000,
                    dictionary: CompressionDictionary.standard.bytes))),
        vector(
            "subscribe-fresh", "no resume position, no digest: the server answers with a Snapshot", raw,
            .subscribe(Subscribe(listName: "inbox"))),
        vector(
            "subscribe-resume", "resume from epoch 3 version 300 (varints of two bytes) with the replica's digest", raw,
            .subscribe(
                Subscribe(
                    listName: "inbox", resumeFrom: ListVersion(epoch: 3, version: 300),
                    digest: StateDigest(rawValue: 0x0123_4567_89AB_CDEF)))),
        vector("unsubscribe", "", raw, .unsubscribe(Unsubscribe(listName: "inbox"))),
        vector(
            "snapshot-small",
            "two sections, a header, an empty kind and payload; digest is the real digest of these sections", raw,
            .snapshot(
                Snapshot(
                    listName: "inbox", position: ListVersion(epoch: 1, version: 5),
                    digest: try! Director(sections: snapshotSections).digest,
                    reason: .freshSubscribe, sections: snapshotSections))),
        vector(
            "snapshot-compressed", "20 similar rows; deflated with the standard dictionary", standard,
            .snapshot(
                Snapshot(
                    listName: "feed", position: ListVersion(epoch: 2, version: 9),
                    digest: try! Director(sections: feedSections).digest,
                    reason: .resumeTooOld, sections: feedSections))),
        vector(
            "diff-one-row-raw", "one row inserted at [0, 0] with a 200-byte JSON payload, sent raw", raw,
            .diff(oneRowDiff)),
        vector(
            "diff-one-row-compressed", "the same diff deflated with the standard dictionary", standard,
            .diff(oneRowDiff)),
        vector(
            "diff-one-row-compressed-no-dictionary", "the same diff deflated without a dictionary", plain,
            .diff(oneRowDiff)),
        vector(
            "diff-staged", "a real diff in three stages (update; deletes; inserts and moves), with two mutations", raw,
            .diff(stagedDiff)),
        vector(
            "diff-empty-current", "an empty diff with from == to: a resuming subscriber is current", raw,
            .diff(
                Diff(
                    listName: "inbox", epoch: 3, fromVersion: 300, toVersion: 300,
                    digest: StateDigest(rawValue: 0x0123_4567_89AB_CDEF), changeset: Changeset()))),
        vector(
            "mutate-every-op",
            "one operation of each of the 15 kinds (the group would not apply; the wire does not care)", raw,
            .mutate(everyOpMutate)),
        vector(
            "mutate-every-op-compressed", "the same mutation deflated without a dictionary", plain,
            .mutate(everyOpMutate)),
        vector("ack", "", raw, .ack(Ack(listName: "inbox", seq: 12, committed: ListVersion(epoch: 1, version: 6)))),
        vector(
            "reject", "", raw,
            .reject(Reject(listName: "inbox", seq: 13, code: .unknownRow, message: "op 0: unknown row: r9"))),
        vector(
            "error-connection", "connection-level error; the server closes after it", raw,
            .error(
                ErrorMessage(code: .frameTooLarge, message: "frame length 9000000 exceeds the limit of 4194304 bytes"))),
        vector(
            "error-list-backoff", "list-scoped error with an explicit back-off; the connection stays open", raw,
            .error(
                ErrorMessage(
                    code: .overloaded, message: "busy", reaction: .backoff(milliseconds: 2_500), listName: "inbox",
                    closesConnection: false))),
        vector("ping", "", raw, .ping(Ping(nonce: 1_234_567_890))),
        vector("pong", "", raw, .pong(Pong(nonce: 1_234_567_890))),
        vector(
            "notice-draining", "", raw, .notice(Notice(kind: .draining, message: "deploy", delayMilliseconds: 30_000))),
        vector("stats-request", "", raw, .statsRequest(StatsRequest(requestID: 1, listName: "inbox"))),
        vector(
            "refresh-token", "in-band token refresh on a ready connection (issue #10)", raw,
            .refreshToken(RefreshToken(token: "eyJhbGciOiJIUzI1NiJ9.e30.sig"))),
        vector(
            "stats-reply", "values are signed 64-bit big-endian", raw,
            .statsReply(
                StatsReply(
                    requestID: 1,
                    entries: [
                        .init(name: "connections", value: 3), .init(name: "list.version", value: 6),
                        .init(name: "delta", value: -1),
                    ]))),
        // Coverage added after an independent client was written from the spec: a
        // section-level diff with a known before-state, the other snapshot reasons,
        // notice kinds and error reactions.
        vector(
            "diff-sections-from-snapshot-small",
            "applies to the state of vector snapshot-small (version 5 → 6): a section deleted, one inserted with its rows, one moved, a row moved across sections, a header and a footer changed; digest is the real digest of the result",
            raw,
            .diff(sectionsDiff)),
        vector(
            "snapshot-epoch-changed", "reason 2: the resume position was of another epoch", raw,
            .snapshot(
                Snapshot(
                    listName: "inbox", position: ListVersion(epoch: 9, version: 1),
                    digest: try! Director(sections: snapshotSections).digest,
                    reason: .epochChanged, sections: snapshotSections))),
        vector(
            "snapshot-resync-requested", "reason 3: the Subscribe's digest did not match the server's at that position",
            raw,
            .snapshot(
                Snapshot(
                    listName: "inbox", position: ListVersion(epoch: 1, version: 5),
                    digest: try! Director(sections: snapshotSections).digest,
                    reason: .resyncRequested, sections: snapshotSections))),
        vector(
            "notice-shutting-down", "", raw,
            .notice(Notice(kind: .shuttingDown, message: "server is shutting down", delayMilliseconds: 0))),
        vector(
            "stats-request-server-wide", "no list name: server-wide statistics only", raw,
            .statsRequest(StatsRequest(requestID: 2, listName: nil))),
        vector(
            "error-retry", "", raw, .error(ErrorMessage(code: .internalError, message: "try again", reaction: .retry))),
        vector(
            "error-resync", "", raw,
            .error(
                ErrorMessage(
                    code: .staleBaseVersion, message: "resync", reaction: .resync, listName: "inbox",
                    closesConnection: false))),
        vector(
            "error-refresh-token", "", raw,
            .error(ErrorMessage(code: .tokenExpired, message: "token expired", reaction: .refreshToken))),
        // The backup request and its two kinds of answer (issue #21).
        vector(
            "backup-request", "an admin request: write a backup into a new directory on the server's machine", raw,
            .backupRequest(BackupRequest(requestID: 3, directory: "/var/backups/flowsync/1"))),
        vector(
            "backup-reply-written", "code 0: the backup is complete and durable", raw,
            .backupReply(
                BackupReply(
                    requestID: 3, failure: nil, message: "backup of 2 lists written to /var/backups/flowsync/1 in 4 ms",
                    lists: 2, bytes: 1_234))),
        vector(
            "backup-reply-refused", "code 5004 backup-refused; lists and bytes are 0", raw,
            .backupReply(
                BackupReply(
                    requestID: 4, failure: .backupRefused,
                    message:
                        "the backup directory /tmp exists and is not empty (3 entries): a backup goes into a new directory"
                ))),
    ]

    /// From the state of `snapshotSections` to a new one, through every section-level
    /// change kind (the changeset is the reference diff of the two states).
    static let sectionsDiff: Diff = {
        let old = try! Director(sections: snapshotSections)
        let new = try! Director(sections: [
            Section(id: "new", header: Array("New".utf8), rows: [Row(id: "n1", kind: "cell", text: "{\"t\":3}")]),
            Section(id: "today", header: Array("Now".utf8), footer: Array("end".utf8), rows: [Row(id: "b")]),
            Section(id: "archive", rows: [Row(id: "a", kind: "cell", text: "{\"t\":1}")]),
        ])
        return Diff(
            listName: "inbox", epoch: 1, fromVersion: 5, toVersion: 6, digest: new.digest,
            changeset: Changeset.diff(from: old, to: new), mutations: [MutationID(clientID: "c-3", seq: 7)])
    }()

    static let snapshotSections = [
        Section(
            id: "today", header: Array("Today".utf8),
            rows: [Row(id: "a", kind: "cell", text: "{\"t\":1}"), Row(id: "b")]),
        Section(id: "later", footer: []),
    ]

    static let feedSections = [
        Section(
            id: "s",
            rows: (0..<20).map {
                Row(
                    id: "row-\($0)", kind: "cell",
                    text: "{\"id\":\"row-\($0)\",\"title\":\"Item \($0)\",\"read\":false}")
            })
    ]

    static let oneRowDiff: Diff = {
        var stage = ChangesetStage()
        stage.rowInserts = [
            RowAtPath(path: RowPath(section: 0, row: 0), row: Row(id: "item-42", kind: "message", payload: payload))
        ]
        return Diff(
            listName: "inbox", epoch: 1, fromVersion: 41, toVersion: 42,
            digest: StateDigest(rawValue: 0xDEAD_BEEF_0000_0001),
            changeset: Changeset(stages: [stage]), mutations: [MutationID(clientID: "c-7f3a", seq: 12)])
    }()

    static let stagedDiff: Diff = {
        var old = try! Director(sections: [
            Section(id: "s1", rows: [Row(id: "a", text: "1"), Row(id: "b", text: "2"), Row(id: "c", text: "3")]),
            Section(id: "s2", rows: [Row(id: "d", text: "4")]),
        ])
        let changeset = try! old.apply([
            .replaceRow(.id("a"), with: Row(id: "a", text: "1!")),
            .removeRows([.id("b")]),
            .moveRow(.id("d"), toSection: .id("s1"), at: 0),
            .insertRows([Row(id: "e", text: "5")], in: .id("s2"), at: 0),
        ])
        return Diff(
            listName: "inbox", epoch: 1, fromVersion: 6, toVersion: 7, digest: old.digest, changeset: changeset,
            mutations: [MutationID(clientID: "c-1", seq: 1), MutationID(clientID: "c-2", seq: 40)])
    }()

    static let everyOpMutate = Mutate(
        listName: "inbox", clientID: "c-7f3a", seq: 13, base: ListVersion(epoch: 1, version: 42),
        operations: [
            .setSections([Section(id: "s", rows: [Row(id: "r", kind: "k", text: "p")])]),
            .insertSections([Section(id: "t", header: [0x48])], at: 1),
            .removeSections([.id("t"), .index(2)]),
            .removeAllSections,
            .moveSection(.index(0), to: 1),
            .swapSections(.id("s"), .index(1)),
            .setHeader(.id("s"), Array("H".utf8)),
            .setFooter(.index(0), nil),
            .setRows([Row(id: "r1")], in: .id("s")),
            .insertRows([Row(id: "r2", kind: "cell", text: "{}")], in: .index(0), at: 0),
            .replaceRow(.index(0, in: .id("s")), with: Row(id: "r2", text: "new")),
            .removeRows([.id("r1"), .index(3, in: .index(0))]),
            .removeAllRows(in: .id("s")),
            .moveRow(.id("r2"), toSection: .index(1), at: 0),
            .swapRows(.id("r1"), .index(0, in: .id("s"))),
        ])

    static var vectorsURL: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Vectors/frames.json")
    }

    static func frame(of v: Vector) -> [UInt8] { FrameEncoder(configuration: v.configuration).encode(v.message) }

    /// The whole file, as the code produces it.
    static func renderFile() -> String {
        let entries: [JSON] = vectors.map { v in
            let bytes = frame(of: v)
            return .object([
                ("name", .string(v.name)),
                ("note", .string(v.note)),
                ("compression", .string(v.compression)),
                ("frameBytes", .int(bytes.count)),
                ("frame", .string(hex(bytes))),
                ("meaning", MeaningRenderer.message(v.message)),
            ])
        }
        let file = JSON.object([
            (
                "about",
                .string(
                    "FlowSync protocol v1 golden frames. 'frame' is the complete frame in hex (length prefix, type, flags, body). Compressed frames name their dictionary in the zlib header; the standard dictionary's bytes are the tail of 'welcome-standard-dictionary'. See docs/PROTOCOL.md."
                )
            ),
            ("standardDictionaryAdler32", .int(CompressionDictionary.standard.id)),
            ("vectors", .array(entries)),
        ])
        return file.render() + "\n"
    }

    @Test func fileMatchesTheCode() throws {
        let expected = Self.renderFile()
        if ProcessInfo.processInfo.environment["FLOWSYNC_WRITE_VECTORS"] == "1" {
            try expected.write(to: Self.vectorsURL, atomically: true, encoding: .utf8)
        }
        let actual = try String(contentsOf: Self.vectorsURL, encoding: .utf8)
        #expect(
            actual == expected,
            "Vectors/frames.json differs from the encoder's output; regenerate only for an intended protocol change")
    }

    /// Both directions, byte for byte, from the file's own hex.
    @Test func everyVectorDecodesAndEncodesExactly() throws {
        let data = try Data(contentsOf: Self.vectorsURL)
        let root = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let entries = try #require(root["vectors"] as? [[String: Any]])
        #expect(entries.count == Self.vectors.count)
        var compressedCount = 0
        for v in Self.vectors {
            let entry = try #require(
                entries.first { $0["name"] as? String == v.name }, "\(v.name) missing from the file")
            let fileBytes = bytes(hex: try #require(entry["frame"] as? String))
            // Encode: the code's bytes are the file's bytes.
            let encoder = FrameEncoder(configuration: v.configuration)
            #expect(encoder.encode(v.message) == fileBytes, "\(v.name): encoding differs")
            #expect(encoder.lastFrameWasCompressed == (v.compression != "none"), "\(v.name): compression expectation")
            if fileBytes[5] & 1 == 1 { compressedCount += 1 }
            // Decode: the file's bytes are the message, whatever the split.
            #expect(decodeAll(fileBytes) == .success([v.message]), "\(v.name): decoding differs")
            #expect(
                decodeAll(fileBytes, chunks: Array(repeating: 1, count: fileBytes.count)) == .success([v.message]),
                "\(v.name): byte by byte")
        }
        #expect(compressedCount >= 4)
    }
}
