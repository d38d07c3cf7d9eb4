import FlowSyncCore
import FlowSyncCoreTestSupport
import Testing

@Suite(.timeLimit(.minutes(2))) struct HashAndDigestTests {
    /// Reference values from the `xxhash` Python package (an independent implementation).
    @Test(arguments: [
        ("", UInt64(0), UInt64(0xEF46_DB37_51D8_E999)),
        ("a", 0, 0xD24E_C4F1_A98C_6E5B),
        ("abc", 0, 0x44BC_2CF5_AD77_0999),
        ("hello world", 0, 0x45AB_6734_B21E_6968),
        ("", 1, 0xD5AF_BA13_36A3_BE4B),
        ("abc", 1, 0xBEA9_CA81_9932_8908),
    ])
    func xxh64MatchesReference(input: String, seed: UInt64, expected: UInt64) {
        #expect(XXH64.hash(input, seed: seed) == expected)
    }

    @Test func xxh64LongInputMatchesReference() {
        // Exercises the 32-byte stripe loop and every tail length.
        let bytes = (0..<100).map { UInt8($0) }
        #expect(XXH64.hash(bytes) == 0x6AC1_E580_3216_6597)
        #expect(XXH64.hash(bytes, seed: 1) == 0x3D19_A3A2_098A_7023)
    }

    /// Golden values from `Vectors/digest_reference.py`, an independent Python
    /// implementation of the digest as `docs/PROTOCOL.md` specifies it.
    @Test func digestMatchesReferenceImplementation() throws {
        #expect(Director().digest.rawValue == 0x086E_6DA8_42AE_4081)
        let d = try Director(sections: [
            Section(id: "s1", header: Array("H".utf8), rows: [Row(id: "a", kind: "cell", text: "{}"), Row(id: "b")]),
            Section(id: "s2", footer: Array("F".utf8)),
        ])
        #expect(d.digest.rawValue == 0x18D7_839C_EAF9_CBE2)
        #expect(Row(id: "x", kind: "cell", text: "{}").contentHash == 0xBFC4_16C7_207E_035B)
    }

    @Test func digestSeesOrderContentAndSupplementaries() throws {
        let base = try Director(sections: [Section(id: "s", rows: [Row(id: "a"), Row(id: "b")])])
        var reordered = base
        try reordered.move(rowAt: 0, to: 1, inSection: .id("s"))
        #expect(reordered.digest != base.digest)
        var edited = base
        try edited.replace(row: .id("a"), with: Row(id: "a", text: "new"))
        #expect(edited.digest != base.digest)
        var headed = base
        try headed.set(header: [1], forSection: .id("s"))
        #expect(headed.digest != base.digest)
        var emptyHeader = base
        try emptyHeader.set(header: [], forSection: .id("s"))
        #expect(emptyHeader.digest != base.digest, "an empty header is not the same as no header")
        var moved = try Director(sections: [
            Section(id: "s", rows: [Row(id: "a")]), Section(id: "t", rows: [Row(id: "b")]),
        ])
        let before = moved.digest
        try moved.move(row: .id("a"), toSection: .id("t"), at: 0)
        #expect(moved.digest != before)
        try moved.move(row: .id("a"), toSection: .id("s"), at: 0)
        #expect(moved.digest == before, "the digest depends on the state only, not on its history")
    }

    @Test func incrementalDigestEqualsRecomputationOverRandomEdits() {
        var generator = DirectorGenerator(seed: 0xD16E57)
        for _ in 0..<300 {
            var d = generator.director()
            for _ in 0..<5 {
                let group = generator.group(for: d)
                _ = try? d.apply(group)
                #expect(d.digest == StateDigest.compute(d.sections), "seed \(generator.random.seed)")
            }
        }
    }
}
