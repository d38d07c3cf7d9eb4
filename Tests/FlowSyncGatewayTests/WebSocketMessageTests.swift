import FlowSyncCore
import FlowSyncGatewayCore
import Foundation
import Testing

/// The WebSocket's message decoder and encoder, without a socket: hostile inputs get their
/// exact problem, byte-level garbage never traps, and seeded random messages round-trip.
@Suite(.timeLimit(.minutes(2))) struct WebSocketMessageTests {
    let limits = GatewayLimits(maxOperations: 3)
    let webSocket = WebSocketLimits(maxMessageBytes: 4096)

    func decode(_ text: String) throws(WebSocketDecodingFailure) -> WebSocketClientMessage {
        try WebSocketClientMessage.decode(Array(text.utf8), limits: limits, webSocket: webSocket)
    }

    func failure(_ bytes: [UInt8]) -> WebSocketDecodingFailure? {
        do {
            _ = try WebSocketClientMessage.decode(bytes, limits: limits, webSocket: webSocket)
            return nil
        } catch {
            return error
        }
    }

    @Test func wellFormedMessagesDecode() throws {
        guard case .auth(let token) = try decode(#"{"type":"auth","token":"a.b.c"}"#) else { throw Fail() }
        #expect(token == "a.b.c")
        guard case .subscribe(let list, let after) = try decode(#"{"type":"subscribe","list":"team/1"}"#) else {
            throw Fail()
        }
        #expect(list == "team/1" && after == nil)
        guard
            case .subscribe(_, let resume) = try decode(
                #"{"type":"subscribe","list":"x","after":"18446744073709551615:7"}"#)
        else { throw Fail() }
        #expect(resume == ListVersion(epoch: .max, version: 7))
        guard case .unsubscribe(let gone) = try decode(#"{"type":"unsubscribe","list":"x"}"#) else { throw Fail() }
        #expect(gone == "x")
        guard
            case .mutate(let target, let id, let body) = try decode(
                #"{"type":"mutate","list":"x","id":"k-1","operations":[{"op":"removeAllSections"}],"base":{"epoch":"3","version":2}}"#
            )
        else { throw Fail() }
        #expect(target == "x" && id == "k-1" && body.operations == [.removeAllSections])
        #expect(body.base == ListVersion(epoch: 3, version: 2))
    }

    /// Each malformed message: its problem name, and the `list`/`id` echoed when readable.
    @Test func hostileMessagesGetTheirExactProblem() {
        let big = #"{"type":"subscribe","list":""# + String(repeating: "a", count: 5000) + #""}"#
        let cases: [(String, String, String?, String?)] = [
            ("", "malformed-json", nil, nil),
            ("{", "malformed-json", nil, nil),
            ("nul", "malformed-json", nil, nil),
            ("[]", "invalid-request", nil, nil),
            ("1", "malformed-json", nil, nil),
            (#""subscribe""#, "malformed-json", nil, nil),
            ("{}", "invalid-request", nil, nil),
            (#"{"type":1}"#, "invalid-request", nil, nil),
            (#"{"type":"launch","list":"x","id":"k"}"#, "unknown-type", "x", "k"),
            (#"{"type":"subscribe"}"#, "invalid-request", nil, nil),
            (#"{"type":"subscribe","list":""}"#, "invalid-request", "", nil),
            (#"{"type":"subscribe","list":7}"#, "invalid-request", nil, nil),
            (#"{"type":"subscribe","list":"x","after":"7"}"#, "invalid-position", "x", nil),
            (#"{"type":"subscribe","list":"x","after":"a:b"}"#, "invalid-position", "x", nil),
            (#"{"type":"subscribe","list":"x","after":3}"#, "invalid-request", "x", nil),
            (#"{"type":"auth"}"#, "invalid-request", nil, nil),
            (#"{"type":"mutate","list":"x","operations":[{"op":"removeAllSections"}]}"#, "invalid-request", "x", nil),
            (
                #"{"type":"mutate","list":"x","id":"has space","operations":[{"op":"removeAllSections"}]}"#,
                "invalid-idempotency-key", "x", "has space"
            ),
            (#"{"type":"mutate","list":"x","id":"k","operations":[]}"#, "invalid-request", "x", "k"),
            (#"{"type":"mutate","list":"x","id":"k","operations":[{"op":"fly"}]}"#, "invalid-request", "x", "k"),
            (
                #"{"type":"mutate","list":"x","id":"k","operations":[{"op":"removeAllSections"},{"op":"removeAllSections"},{"op":"removeAllSections"},{"op":"removeAllSections"}]}"#,
                "too-many-operations", "x", "k"
            ),
            (
                #"{"type":"mutate","list":"x","id":"k","operations":[{"op":"removeAllSections"}],"base":{"epoch":-1,"version":0}}"#,
                "invalid-request", "x", "k"
            ),
            (big, "message-too-large", nil, nil),
            (String(repeating: "[", count: 3000), "malformed-json", nil, nil),
        ]
        for (text, name, list, id) in cases {
            let refused = failure(Array(text.utf8))
            #expect(refused?.problem.name == name, "\(text.prefix(80)): \(String(describing: refused))")
            #expect(refused?.list == list && refused?.id == id, "\(text.prefix(80)): \(String(describing: refused))")
        }
        // Bytes that are not UTF-8 at all.
        #expect(failure([0xFF, 0xFE, 0x00, 0x7B])?.problem.name == "malformed-json")
    }

    /// Seeded garbage: random bytes, and valid messages flipped, truncated and spliced.
    /// Every one decodes or fails with a known problem; none traps.
    @Test func byteLevelGarbageNeverTraps() {
        let known: Set<String> = [
            "malformed-json", "invalid-request", "invalid-position", "invalid-idempotency-key", "too-many-operations",
            "unknown-type", "message-too-large",
        ]
        let seeds: [String] = [
            #"{"type":"subscribe","list":"x","after":"5:7"}"#,
            #"{"type":"mutate","list":"x","id":"k","operations":[{"op":"insertRows","section":"S","at":0,"rows":[{"id":"a","payload":{"t":[1,2]}}]}]}"#,
            #"{"type":"auth","token":"a.b.c"}"#, #"{"type":"unsubscribe","list":"y"}"#,
        ]
        for seed in UInt64(1)...UInt64(3_000) {
            var rng = SplitMix64(seed: seed)
            var bytes: [UInt8]
            if seed % 4 == 0 {
                bytes = (0..<Int(rng.next() % 200)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            } else {
                bytes = Array(seeds[Int(rng.next() % UInt64(seeds.count))].utf8)
                for _ in 0..<(1 + Int(rng.next() % 4)) {
                    guard !bytes.isEmpty else { break }
                    let at = Int(rng.next() % UInt64(bytes.count))
                    switch rng.next() % 3 {
                    case 0: bytes[at] = UInt8(truncatingIfNeeded: rng.next())
                    case 1: bytes.removeSubrange(at...)
                    default: bytes.insert(UInt8(truncatingIfNeeded: rng.next()), at: at)
                    }
                }
            }
            if let refused = failure(bytes) {
                #expect(known.contains(refused.problem.name), "seed \(seed): \(refused.problem.name)")
            }
        }
    }

    /// Seeded random messages written as a browser would (JSONSerialization) decode to
    /// what was written; server messages parse back to what was encoded.
    @Test func seededMessagesRoundTrip() throws {
        for seed in UInt64(1)...UInt64(1_000) {
            var rng = SplitMix64(seed: seed)
            let list = randomName(&rng)
            let epoch = rng.next()
            let version = rng.next() % 1_000_000
            switch rng.next() % 3 {
            case 0:
                var object: [String: Any] = ["type": "subscribe", "list": list]
                if rng.next() % 2 == 0 { object["after"] = "\(epoch):\(version)" }
                guard case .subscribe(let l, let a) = try decodeObject(object) else { throw Fail("seed \(seed)") }
                #expect(l == list, "seed \(seed)")
                #expect(
                    a == (object["after"] == nil ? nil : ListVersion(epoch: epoch, version: version)), "seed \(seed)")
            case 1:
                let id = "k\(rng.next())"
                let rowID = randomName(&rng)
                let n = Int(rng.next() % 1000)
                let object: [String: Any] = [
                    "type": "mutate", "list": list, "id": id,
                    "operations": [
                        [
                            "op": "insertRows", "section": "S", "at": n % 7,
                            "rows": [["id": rowID, "kind": "k", "payload": ["n": n]]],
                        ]
                    ],
                    "base": ["epoch": String(epoch), "version": version],
                ]
                guard case .mutate(let l, let i, let body) = try decodeObject(object) else {
                    throw Fail("seed \(seed)")
                }
                #expect(l == list && i == id, "seed \(seed)")
                #expect(body.base == ListVersion(epoch: epoch, version: version), "seed \(seed)")
                #expect(
                    body.operations == [
                        .insertRows(
                            [Row(id: rowID, kind: "k", payload: Array(#"{"n":\#(n)}"#.utf8))], in: .id("S"), at: n % 7)
                    ], "seed \(seed)")
            default:
                let committed = ListVersion(epoch: epoch, version: version)
                let ack = try parse(WebSocketServerMessage.ack(list: list, id: "i", committed: committed))
                #expect(ack["type"] as? String == "ack" && ack["list"] as? String == list, "seed \(seed)")
                let position = try #require(ack["committed"] as? [String: Any])
                #expect(position["epoch"] as? String == String(epoch), "seed \(seed): epochs travel as strings")
                #expect((position["version"] as? NSNumber)?.uint64Value == version, "seed \(seed)")
                let problem = Problem(RequestError(.invalidRequest, "x\u{0}\"\\ \(list)"))
                let error = try parse(WebSocketServerMessage.error(list: list, id: nil, problem: problem))
                #expect(error["list"] as? String == list && error["id"] == nil, "seed \(seed)")
                #expect((error["problem"] as? [String: Any])?["detail"] as? String == problem.detail, "seed \(seed)")
            }
        }
    }

    private func decodeObject(_ object: [String: Any]) throws -> WebSocketClientMessage {
        let data = try JSONSerialization.data(withJSONObject: object)
        return try WebSocketClientMessage.decode(
            Array(data), limits: limits, webSocket: WebSocketLimits(maxMessageBytes: 1 << 20))
    }

    private func parse(_ bytes: [UInt8]) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    }

    private func randomName(_ rng: inout SplitMix64) -> String {
        let alphabet = Array("abcXYZ09/-_ é€😀\"\\")
        return String((0..<(1 + Int(rng.next() % 12))).map { _ in alphabet[Int(rng.next() % UInt64(alphabet.count))] })
    }
}

struct Fail: Error, CustomStringConvertible {
    var description: String
    init(_ description: String = "unexpected message") { self.description = description }
}
