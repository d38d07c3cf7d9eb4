import FlowSyncCore
import FlowSyncGatewayCore
import FlowSyncProtocol
import Foundation
import Testing

/// The gateway's JSON both ways: rows, sections, operations, changesets, problems.
@Suite(.timeLimit(.minutes(2))) struct GatewayJSONTests {
    static let sections = [
        Section(
            id: "S1", header: Array(#"{"title":"Inbox"}"#.utf8), footer: [0xFF, 0x00, 0x01],
            rows: [
                Row(id: "r1", kind: "message", payload: Array(#"{"text":"héllo \"you\"\n"}"#.utf8)),
                Row(id: "r2", kind: "raw", payload: [0, 1, 2, 0xFE]),
                Row(id: "r3", kind: "", payload: []),
            ]),
        Section(id: "S2", rows: [Row(id: "r4", kind: "n", payload: Array("42".utf8))]),
    ]

    func parse(_ bytes: [UInt8]) throws -> Any {
        try JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])
    }

    @Test func sectionsRoundTripWithJSONAndBinaryPayloads() throws {
        var w = JSONWriter()
        ModelJSON.write(Self.sections, into: &w)
        let back = try ModelJSON.sections(from: try parse(w.bytes), at: "")
        #expect(back == Self.sections)
        // A JSON payload is embedded as a value, not as a string; other bytes as base64.
        #expect(w.text.contains(#""payload":{"text":"héllo \"you\"\n"}"#))
        #expect(w.text.contains(#""payloadBase64":"AAEC/g=="#))
        #expect(w.text.contains(#""footerBase64":"/wAB""#))
    }

    @Test func everyOperationRoundTrips() throws {
        let row = Row(id: "x", kind: "k", payload: Array(#"[1,2]"#.utf8))
        let ops: [FlowSyncCore.Operation] = [
            .setSections(Self.sections), .insertSections([Section(id: "S3")], at: 1),
            .removeSections([.id("S1"), .index(2)]),
            .removeAllSections, .moveSection(.id("S1"), to: 3), .swapSections(.index(0), .id("S2")),
            .setHeader(.id("S1"), Array(#""h""#.utf8)), .setHeader(.index(0), nil), .setFooter(.id("S2"), [9, 9]),
            .setRows([row], in: .id("S1")), .insertRows([row, Row(id: "y")], in: .index(1), at: 0),
            .replaceRow(.id("r1"), with: row), .removeRows([.id("r1"), .index(3, in: .id("S2"))]),
            .removeAllRows(in: .index(0)),
            .moveRow(.index(0, in: .index(1)), toSection: .id("S1"), at: 2),
            .swapRows(.id("a"), .index(1, in: .id("S1"))),
        ]
        var names = Set<String>()
        for op in ops {
            var w = JSONWriter()
            OperationJSON.write(op, into: &w)
            let value = try parse(w.bytes)
            names.insert((value as? [String: Any])?["op"] as? String ?? "?")
            #expect(try OperationJSON.operation(from: value, at: "/0") == op, "\(w.text)")
        }
        #expect(names == Set(OperationJSON.names), "every named operation is covered")
    }

    @Test func diffAndSnapshotBodiesAreJSONWithTheStagedChangeset() throws {
        let old = try Director(sections: [Section(id: "S1", rows: [Row(id: "a"), Row(id: "b")])])
        let new = try Director(sections: [
            Section(
                id: "S1", header: Array("1".utf8),
                rows: [Row(id: "b"), Row(id: "c", kind: "k", payload: Array("true".utf8))])
        ])
        let changeset = Changeset.diff(from: old, to: new)
        let diff = Diff(
            listName: "l", epoch: 3, fromVersion: 7, toVersion: 8, digest: new.digest, changeset: changeset,
            mutations: [MutationID(clientID: "c", seq: 2)])
        let object = try #require(try parse(ChangeJSON.diff(diff, type: "diff")) as? [String: Any])
        #expect(object["type"] as? String == "diff")
        #expect(
            object["epoch"] as? String == "3" && object["fromVersion"] as? Int == 7 && object["toVersion"] as? Int == 8)
        #expect((object["digest"] as? String)?.count == 16)
        let stages = try #require((object["changeset"] as? [String: Any])?["stages"] as? [[String: Any]])
        #expect(stages.count == changeset.stages.count)
        let text = String(decoding: ChangeJSON.diff(diff), as: UTF8.self)
        #expect(text.contains(#""rowDeletes":[[0,0]]"#))
        #expect(text.contains(#""row":{"id":"c","kind":"k","payload":true}"#))
        #expect(text.contains(#""mutations":[{"clientID":"c","seq":2}]"#))

        let snapshot = Snapshot(
            listName: "l", position: ListVersion(epoch: 3, version: 8), digest: new.digest, reason: .resumeTooOld,
            sections: new.sections)
        let s = try #require(try parse(ChangeJSON.snapshot(snapshot)) as? [String: Any])
        #expect(s["reason"] as? String == "resumeTooOld")
        #expect((s["position"] as? [String: Any])?["version"] as? Int == 8)
        #expect(
            (s["position"] as? [String: Any])?["epoch"] as? String == "3",
            "a u64 epoch is a string (JavaScript numbers are doubles)")
        #expect(try ModelJSON.sections(from: s["sections"] as Any, at: "/sections") == new.sections)
    }

    @Test func writerEscapesControlCharactersAndQuotes() throws {
        var w = JSONWriter()
        w.beginObject()
        w.member("k\"\\", "a\u{01}\t\r\n\"b")
        w.key("n")
        w.null()
        w.key("b")
        w.bool(false)
        w.endObject()
        let object = try #require(try parse(w.bytes) as? [String: Any])
        #expect(object["k\"\\"] as? String == "a\u{01}\t\r\n\"b")
        #expect(w.text == #"{"k\"\\":"a\u0001\t\r\n\"b","n":null,"b":false}"#)
    }

    @Test func problemDocumentsFollowRFC9457() throws {
        let own = Problem(RequestError(.tooManyOperations, "1001 operations"))
        let o = try #require(try parse(own.json) as? [String: Any])
        #expect(o["type"] as? String == "urn:flowsync:problem:too-many-operations")
        #expect(o["title"] as? String == "Too many operations")
        #expect(o["status"] as? Int == 413 && o["detail"] as? String == "1001 operations" && o["code"] == nil)
        // Every gateway refusal has a 4xx/5xx status and a title.
        for kind in RequestError.Kind.allCases {
            let p = Problem(RequestError(kind, "d"))
            #expect((400...599).contains(p.status) && !p.title.isEmpty, "\(kind)")
        }
        // Every daemon code maps to a 4xx/5xx with the code carried.
        for code in ErrorCode.allKnown {
            let p = Problem.daemon(code: code, message: "m")
            #expect((400...599).contains(p.status) && p.code == code.rawValue, "\(code)")
        }
        #expect(Problem.status(for: .staleBaseVersion) == 409)
        #expect(Problem.status(for: .unknownList) == 404)
    }

    /// Both catalogs of the gateway's own refusals reach the client through one mapping
    /// (`GatewayRefusal`): name, status and title in the problem, no daemon code, and a
    /// WebSocket close only for an oversized message (1009). Their names never collide.
    @Test func theGatewaysRefusalsShareOneMapping() {
        func check(_ refusal: some GatewayRefusal) {
            let p = refusal.problem
            #expect(p == Problem(refusal))
            #expect(p.name == refusal.name && p.status == refusal.status && p.detail == refusal.detail && p.code == nil)
            #expect((400...599).contains(p.status) && !p.title.isEmpty, "\(refusal.name)")
        }
        for kind in RequestError.Kind.allCases {
            check(RequestError(kind, "d"))
            #expect(RequestError(kind, "d").closeReason == nil)
        }
        for kind in WebSocketError.Kind.allCases {
            check(WebSocketError(kind, "d"))
            #expect(WebSocketError(kind, "d").closeReason == (kind == .messageTooLarge ? .messageTooLarge : nil))
        }
        #expect(WebSocketCloseReason.messageTooLarge.code == 1009)
        let names = RequestError.Kind.allCases.map(\.rawValue) + WebSocketError.Kind.allCases.map(\.rawValue)
        #expect(Set(names).count == names.count, "one name, one meaning: \(names)")
        #expect(WebSocketError(.tooManyWrites, "d").problem.status == 429)
    }
}
