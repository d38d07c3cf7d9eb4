import FlowSyncCore
import FlowSyncTestSupport
import FlowSyncUI
import Testing

/// Decode once per row version, failures included, within a bounded size: checked
/// against a reference that decodes every time, over seeded random access patterns.
@Suite(.timeLimit(.minutes(1))) struct ModelCacheTests {
    struct Boom: Error {}

    @Test func aRowIsDecodedOncePerVersion() throws {
        let cache = ModelCache(capacity: 8)
        var calls = 0
        let decode: (Row) throws -> Any = { row in
            calls += 1
            return String(decoding: row.payload, as: UTF8.self)
        }
        let v1 = Row(id: "a", kind: "k", text: "one")
        for _ in 0..<5 { #expect(try cache.value(for: v1, decode: decode).get() as? String == "one") }
        #expect(calls == 1 && cache.decodes == 1)
        let v2 = Row(id: "a", kind: "k", text: "two")
        #expect(try cache.value(for: v2, decode: decode).get() as? String == "two")
        #expect(calls == 2)
        // Another kind with the same payload is another version.
        _ = cache.value(for: Row(id: "a", kind: "other", text: "two"), decode: decode)
        #expect(calls == 3)
    }

    @Test func aFailureIsCachedLikeASuccess() {
        let cache = ModelCache(capacity: 8)
        var calls = 0
        let row = Row(id: "bad", kind: "k", text: "x")
        for _ in 0..<3 {
            let result = cache.value(for: row) { _ in
                calls += 1
                throw Boom()
            }
            guard case .failure(let failure) = result else {
                Issue.record("decoded")
                return
            }
            #expect(failure.rowID == "bad" && failure.kind == "k")
        }
        #expect(calls == 1)
        #expect(cache.lastLookupDecoded == false)
    }

    @Test(arguments: [1, 2, 3, 4, 5] as [UInt64])
    func randomAccessMatchesAReferenceAndStaysBounded(seed: UInt64) {
        var random = SeededRandom(seed: seed)
        let capacity = random.int(1...16)
        let cache = ModelCache(capacity: capacity)
        var versions: [String: Int] = [:]
        let ids = (0..<random.int(1...60)).map { "r\($0)" }
        for step in 0..<4_000 {
            let id = ids[random.int(0..<ids.count)]
            if random.chance(0.1) { versions[id, default: 0] += 1 }
            let version = versions[id, default: 0]
            let row = Row(id: id, kind: "k", text: "\(id)@\(version)")
            let expected = "\(id)@\(version)"
            let fails = version % 7 == 3
            let result = cache.value(for: row) { row in
                if fails { throw Boom() }
                return String(decoding: row.payload, as: UTF8.self)
            }
            switch result {
            case .success(let value):
                #expect(!fails && value as? String == expected, "seed \(seed) step \(step)")
            case .failure:
                #expect(fails, "seed \(seed) step \(step)")
            }
            #expect(cache.count <= 2 * capacity, "seed \(seed): \(cache.count) entries over 2 × \(capacity)")
        }
        // A hot set that fits is decoded once per version.
        let hot = (0..<capacity).map { Row(id: "hot\($0)", kind: "k", text: "h") }
        let before = cache.decodes
        for _ in 0..<10 { for row in hot { _ = cache.value(for: row) { _ in "h" } } }
        #expect(cache.decodes - before <= hot.count, "seed \(seed)")
    }
}
