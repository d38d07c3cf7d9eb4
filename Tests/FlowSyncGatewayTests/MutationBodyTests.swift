import FlowSyncCore
import FlowSyncGatewayCore
import Foundation
import Testing

/// The mutation body fed hostile input: every refusal is a `RequestError` with the JSON
/// pointer of the bad value, never a crash.
@Suite(.timeLimit(.minutes(2))) struct MutationBodyTests {
    let limits = GatewayLimits(maxOperations: 3)

    func refusal(_ text: String) -> RequestError? {
        do {
            _ = try MutationBody.parse(Array(text.utf8), limits: limits)
            return nil
        } catch {
            return error
        }
    }

    @Test func aWellFormedBodyWithAndWithoutBase() throws {
        let body = try MutationBody.parse(
            Array(
                #"{"operations":[{"op":"insertRows","section":"S","at":0,"rows":[{"id":"a","payload":{"t":1}}]}],"base":{"epoch":2,"version":9}}"#
                    .utf8),
            limits: limits)
        #expect(body.base == ListVersion(epoch: 2, version: 9))
        let stringEpoch = try MutationBody.parse(
            Array(
                #"{"operations":[{"op":"removeAllSections"}],"base":{"epoch":"18446744073709551615","version":0}}"#.utf8
            ), limits: limits)
        #expect(stringEpoch.base == ListVersion(epoch: .max, version: 0))
        #expect(body.operations == [.insertRows([Row(id: "a", payload: Array(#"{"t":1}"#.utf8))], in: .id("S"), at: 0)])
        let atHead = try MutationBody.parse(Array(#"{"operations":[{"op":"removeAllSections"}]}"#.utf8), limits: limits)
        #expect(atHead.base == nil && atHead.wireBase == ListVersion(epoch: 0, version: 0))
    }

    @Test func malformedAndMisshapenBodiesGetTheirExactError() {
        let cases: [(String, RequestError.Kind, String)] = [
            ("", .malformedJSON, "not JSON"),
            ("{", .malformedJSON, "not JSON"),
            ("{\"operations\":[]} trailing", .malformedJSON, "not JSON"),
            ("[]", .invalidRequest, "the body: expected an object"),
            ("{}", .invalidRequest, "/operations: expected an array"),
            (#"{"operations":{}}"#, .invalidRequest, "/operations: expected an array"),
            (#"{"operations":[]}"#, .invalidRequest, "at least one operation"),
            (#"{"operations":[1]}"#, .invalidRequest, "/operations/0: expected an object"),
            (#"{"operations":[{}]}"#, .invalidRequest, "/operations/0/op: expected a string"),
            (#"{"operations":[{"op":"explode"}]}"#, .invalidRequest, "unknown operation \"explode\""),
            (
                #"{"operations":[{"op":"moveSection","section":"S","to":-1}]}"#, .invalidRequest,
                "/operations/0/to: expected a non-negative integer"
            ),
            (#"{"operations":[{"op":"moveSection","section":"S","to":1.5}]}"#, .invalidRequest, "/operations/0/to"),
            (#"{"operations":[{"op":"moveSection","section":"S","to":true}]}"#, .invalidRequest, "/operations/0/to"),
            (#"{"operations":[{"op":"moveSection","section":"S","to":1e300}]}"#, .invalidRequest, "/operations/0/to"),
            (
                #"{"operations":[{"op":"moveSection","section":"","to":1}]}"#, .invalidRequest,
                "/operations/0/section: must not be empty"
            ),
            (
                #"{"operations":[{"op":"moveSection","section":7,"to":1}]}"#, .invalidRequest,
                "/operations/0/section: expected a section ID"
            ),
            (
                #"{"operations":[{"op":"removeRows","rows":[{"index":0}]}]}"#, .invalidRequest,
                "/operations/0/rows/0/section"
            ),
            (
                #"{"operations":[{"op":"setRows","section":"S","rows":[{"id":"a","payloadBase64":"***"}]}]}"#,
                .invalidRequest, "payloadBase64: not base64"
            ),
            (
                #"{"operations":[{"op":"setRows","section":"S","rows":[{"kind":"k"}]}]}"#, .invalidRequest,
                "/operations/0/rows/0/id"
            ),
            (
                #"{"operations":[{"op":"removeAllSections"}],"base":{"epoch":-1,"version":0}}"#, .invalidRequest,
                "/base/epoch"
            ),
            (
                #"{"operations":[{"op":"removeAllSections"}],"base":"1:2"}"#, .invalidRequest,
                "/base: expected an object"
            ),
            (
                #"{"operations":[{"op":"removeAllSections"}],"base":{"epoch":"x1","version":0}}"#, .invalidRequest,
                "/base/epoch: expected a decimal string"
            ),
            (
                #"{"operations":[{"op":"removeAllSections"}],"base":{"epoch":true,"version":0}}"#, .invalidRequest,
                "/base/epoch"
            ),
            (
                #"{"operations":[{"op":"removeAllSections"}],"base":{"epoch":1,"version":2.5}}"#, .invalidRequest,
                "/base/version"
            ),
            (
                #"{"operations":[{"op":"removeAllSections"},{"op":"removeAllSections"},{"op":"removeAllSections"},{"op":"removeAllSections"}]}"#,
                .tooManyOperations, "4 operations, at most 3"
            ),
        ]
        for (text, kind, detail) in cases {
            let error = refusal(text)
            #expect(error?.kind == kind, "\(text)")
            #expect(error?.detail.contains(detail) == true, "\(text): \(String(describing: error))")
        }
    }

    @Test func deepNestingAndHugeNumbersAreRefusedNotCrashed() {
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        #expect(refusal(deep) != nil)
        #expect(
            refusal(#"{"operations":[{"op":"moveSection","section":"S","to":184467440737095516160000}]}"#)?.kind
                == .invalidRequest)
        #expect(refusal("{\"operations\":\"\u{0}\"}") != nil)
    }

    /// Seeded mutations of a valid body (byte flips, truncations, insertions): every
    /// outcome is a parsed body or a RequestError; none traps.
    @Test func seededCorruptionsNeverTrap() {
        let valid = Array(
            #"{"operations":[{"op":"insertRows","section":{"index":0},"at":0,"rows":[{"id":"a","kind":"k","payload":[1,{"x":null}]}]},{"op":"moveRow","row":"a","toSection":"S","at":1}],"base":{"epoch":1,"version":2}}"#
                .utf8)
        var random = SplitMix64(seed: 31)
        let alphabet = Array(#"{}[]":,0123456789-.eE truefalsnul\"#.utf8)
        var parsed = 0
        var refused = 0
        for _ in 0..<3_000 {
            var bytes = valid
            for _ in 0...(random.next() % 4) {
                let at = Int(random.next() % UInt64(bytes.count))
                switch random.next() % 3 {
                case 0: bytes[at] = alphabet[Int(random.next() % UInt64(alphabet.count))]
                case 1: bytes.remove(at: at)
                default: bytes.insert(alphabet[Int(random.next() % UInt64(alphabet.count))], at: at)
                }
                if bytes.isEmpty { break }
            }
            do {
                _ = try MutationBody.parse(bytes, limits: GatewayLimits())
                parsed += 1
            } catch {
                refused += 1
            }
        }
        #expect(parsed + refused == 3_000 && refused > 1_000)
    }

    @Test func positionsParseStrictly() throws {
        #expect(try ListPosition.parse("3:17") == ListVersion(epoch: 3, version: 17))
        #expect(ListPosition.text(ListVersion(epoch: 3, version: 17)) == "3:17")
        for bad in ["", ":", "3", "3:", ":4", "3:4:5", "-1:2", "a:b", "3:18446744073709551616", " 3:4"] {
            #expect(throws: RequestError.self, "\(bad)") { try ListPosition.parse(bad) }
        }
    }
}

/// `Idempotency-Key` → `(clientID, seq)`: a pure function of key and scope.
@Suite(.timeLimit(.minutes(2))) struct IdempotencyKeyTests {
    @Test func sameKeySameScopeSameIDAcrossCalls() throws {
        let a = try IdempotencyKey.mutationID(key: "order-42-shipped", scope: "backend")
        let b = try IdempotencyKey.mutationID(key: "order-42-shipped", scope: "backend")
        #expect(a == b && a.seq == 1)
        #expect(a.clientID.hasPrefix("idem-") && a.clientID.count == 5 + 32)
        // Pinned, so a gateway upgrade that changed the mapping would be noticed: a retry
        // across such an upgrade would commit twice.
        #expect(a.clientID == "idem-778926b76320ed71d66dbf21991e83d8")
        #expect(try IdempotencyKey.mutationID(key: "order-42-shipped", scope: "other") != a)
        #expect(try IdempotencyKey.mutationID(key: "order-42-shippe", scope: "backend") != a)
        // Scope and key are separated: ("ab", "c") is not ("a", "bc").
        #expect(
            try IdempotencyKey.mutationID(key: "c", scope: "ab")
                != (try IdempotencyKey.mutationID(key: "bc", scope: "a")))
    }

    @Test func keysAreVisibleASCIIUpTo255Bytes() throws {
        _ = try IdempotencyKey.mutationID(key: String(repeating: "k", count: 255), scope: "")
        for bad in ["", String(repeating: "k", count: 256), "has space", "tab\t", "é", "nul\u{0}"] {
            #expect(throws: RequestError.self, "\(bad.prefix(10))") {
                try IdempotencyKey.mutationID(key: bad, scope: "")
            }
        }
    }

    @Test func theScopeIsTheTokensSubject() {
        func b64(_ s: String) -> String {
            Data(s.utf8).base64EncodedString().replacingOccurrences(of: "=", with: "").replacingOccurrences(
                of: "+", with: "-"
            )
            .replacingOccurrences(of: "/", with: "_")
        }
        let token = "\(b64(#"{"alg":"HS256"}"#)).\(b64(#"{"sub":"svc-orders","x":"??>"}"#)).sig"
        #expect(IdempotencyKey.subject(ofBearerToken: token) == "svc-orders")
        #expect(IdempotencyKey.subject(ofBearerToken: nil) == "")
        #expect(IdempotencyKey.subject(ofBearerToken: "not.a-jwt") == "")
        #expect(IdempotencyKey.subject(ofBearerToken: "a.!!!.c") == "")
        #expect(IdempotencyKey.subject(ofBearerToken: "\(b64("{}")).\(b64(#"{"sub":7}"#)).s") == "")
    }
}
