import FlowSyncCore
import FlowSyncLoad
import Testing

@Suite(.timeLimit(.minutes(2))) struct OperationGeneratorTests {
    /// The oracle: several writers' generated mutations, interleaved at random and each
    /// applied atomically at head (as the daemon does for base epoch 0), never fail —
    /// for every mix, so a healthy load run has no Reject.
    @Test(arguments: [
        OperationMix.default, .everything, .updatesOnly,
        try! OperationMix([.section: 50, .crossSectionMove: 50]),
        try! OperationMix([.remove: 90, .insert: 10]),
    ])
    func interleavedMutationsAlwaysApply(mix: OperationMix) throws {
        for seed in UInt64(1)...5 {
            let writers = 4
            let rows = 60
            let sections = 3
            var director = try Director(
                sections: OperationGenerator.initialSections(rows: rows, sections: sections, payloadBytes: 40))
            var generators = (0..<writers).map { w in
                OperationGenerator(
                    writerID: "w\(w)", sharedSections: OperationGenerator.sharedSectionIDs(sections),
                    ownedRows: OperationGenerator.initialOwnership(
                        rows: rows, sections: sections, writers: writers, writer: w),
                    mix: mix, payloadBytes: 40, seed: seed)
            }
            var random = SplitMix64(seed: seed)
            for step in 0..<400 {
                let w = Int(random.next() % UInt64(writers))
                let operations = generators[w].nextOperations(count: 1 + step % 4)
                do {
                    _ = try director.apply(operations)
                } catch {
                    Issue.record("seed \(seed), step \(step), writer \(w): \(operations) failed: \(error)")
                    return
                }
            }
            director.checkInvariants()
            #expect(director.digest == StateDigest.compute(director.sections))
        }
    }

    @Test func sameSeedSameOperations() {
        func run(_ seed: UInt64) -> [FlowSyncCore.Operation] {
            var g = OperationGenerator(
                writerID: "w0", sharedSections: ["s0", "s1"], ownedRows: [("i0", "s0")], mix: .everything,
                payloadBytes: 32, seed: seed)
            return g.nextOperations(count: 200)
        }
        #expect(run(7) == run(7))
        #expect(run(7) != run(8))
    }

    @Test func initialStateIsDealtRoundRobinAndOwnedOnce() {
        let sections = OperationGenerator.initialSections(rows: 10, sections: 3, payloadBytes: 20)
        #expect(sections.map(\.id) == ["s0", "s1", "s2"])
        #expect(sections.map(\.rows.count) == [4, 3, 3])
        #expect(sections[1].rows.map(\.id) == ["i1", "i4", "i7"])
        let owned = (0..<3).flatMap {
            OperationGenerator.initialOwnership(rows: 10, sections: 3, writers: 3, writer: $0)
        }
        #expect(owned.map(\.row).sorted() == (0..<10).map { "i\($0)" }.sorted())
        for (row, section) in owned {
            #expect(sections.first { $0.id == section }!.rows.contains { $0.id == row })
        }
    }

    @Test(arguments: [2, 3, 10, 37, 100, 1_000])
    func payloadsHaveTheRequestedSize(bytes: Int) {
        for serial in [0, 1, 12_345, 9_999_999] {
            #expect(OperationGenerator.payload(writer: "w12", serial: serial, bytes: bytes).count == bytes)
        }
    }

    @Test func updatesOnlyKeepsTheShape() throws {
        var director = try Director(
            sections: OperationGenerator.initialSections(rows: 50, sections: 2, payloadBytes: 30))
        let counts = director.rowCounts
        var g = OperationGenerator(
            writerID: "w0", sharedSections: ["s0", "s1"],
            ownedRows: OperationGenerator.initialOwnership(rows: 50, sections: 2, writers: 1, writer: 0),
            mix: .updatesOnly, payloadBytes: 30, seed: 3)
        for _ in 0..<100 {
            let ops = g.nextOperations(count: 10)
            #expect(ops.allSatisfy { if case .replaceRow = $0 { return true } else { return false } })
            _ = try director.apply(ops)
        }
        #expect(director.rowCounts == counts)
    }
}
