import FlowSyncCore
import FlowSyncCoreTestSupport
import Testing

@Suite(.timeLimit(.minutes(2))) struct SequencerTests {
    func request(_ client: String, _ seq: UInt64, base: ListVersion, _ ops: [Operation]) -> MutationRequest {
        MutationRequest(clientID: client, seq: seq, base: base, operations: ops)
    }

    @Test func oneTurnIsOneBatch() throws {
        var s = Sequencer(position: ListVersion(epoch: 7, version: 0))
        let v0 = s.position
        s.submit(request("a", 1, base: v0, [.insertSections([Section(id: "S")], at: 0)]), tag: 1)
        // At head (epoch 0): applies after "a" in the same turn.
        s.submit(
            request(
                "b", 1, base: ListVersion(epoch: 0, version: 0), [.insertRows([Row(id: "x")], in: .id("S"), at: 0)]),
            tag: 2)
        s.submit(request("c", 1, base: v0, [.removeRows([.id("missing")])]), tag: 3)
        let sealed = s.seal()
        #expect(s.position == ListVersion(epoch: 7, version: 1))
        #expect(sealed.outcomes.map(\.tag) == [1, 2, 3])
        #expect((try? sealed.outcomes[0].result.get()) == ListVersion(epoch: 7, version: 1))
        #expect((try? sealed.outcomes[1].result.get()) == ListVersion(epoch: 7, version: 1))
        guard case .failure(.invalid(let e)) = sealed.outcomes[2].result else {
            Issue.record("expected invalid")
            return
        }
        #expect(e.reason == .unknownRow)
        let commit = try #require(sealed.commit)
        #expect(commit.from.version == 0 && commit.to.version == 1)
        #expect(commit.mutations.map(\.description) == ["a#1", "b#1"])
        #expect(commit.digest == s.director.digest)
        #expect(UIKitBatchSimulator.check(commit.changeset, from: Director(), to: s.director) == nil)
    }

    /// References mean what they meant at the base: a row inserted into a section that
    /// did not exist at the writer's base is refused, even if another mutation of the
    /// same turn creates it first (writers keep one mutation in flight, docs/ORDERING.md).
    @Test func referencesAreInterpretedAtTheBase() {
        var s = Sequencer(position: ListVersion(epoch: 7, version: 0))
        let v0 = s.position
        s.submit(request("a", 1, base: v0, [.insertSections([Section(id: "S")], at: 0)]), tag: 1)
        s.submit(request("b", 1, base: v0, [.insertRows([Row(id: "x")], in: .id("S"), at: 0)]), tag: 2)
        let sealed = s.seal()
        guard case .failure(.invalid(let e)) = sealed.outcomes[1].result else {
            Issue.record("\(sealed.outcomes[1].result)")
            return
        }
        #expect(e.reason == .unknownSection)
        #expect(s.director.rowCount == 0)
    }

    @Test func allRefusedMeansNoNewVersion() {
        var s = Sequencer(position: ListVersion(epoch: 1, version: 0))
        s.submit(request("a", 1, base: s.position, [.removeRows([.id("nope")])]), tag: 0)
        let sealed = s.seal()
        #expect(sealed.commit == nil)
        #expect(s.position.version == 0)
        #expect(s.history.isEmpty)
    }

    @Test func baseChecks() {
        var s = Sequencer(position: ListVersion(epoch: 1, version: 0))
        for k in 0..<3 {
            s.submit(
                request("a", UInt64(k), base: s.position, [.insertSections([Section(id: "s\(k)")], at: 0)]), tag: 0)
            _ = s.seal()
        }
        s.submit(request("x", 1, base: ListVersion(epoch: 2, version: 3), [.removeAllSections]), tag: 0)
        s.submit(request("x", 2, base: ListVersion(epoch: 1, version: 9), [.removeAllSections]), tag: 0)
        s.submit(request("x", 3, base: ListVersion(epoch: 1, version: 1), [.removeAllSections]), tag: 0)
        let outcomes = s.seal().outcomes
        guard case .failure(.staleBase) = outcomes[0].result else {
            Issue.record("other epoch: \(outcomes[0].result)")
            return
        }
        guard case .failure(.futureBase) = outcomes[1].result else {
            Issue.record("future: \(outcomes[1].result)")
            return
        }
        // A base behind the current version but within history is rebased and applied.
        #expect((try? outcomes[2].result.get()) == ListVersion(epoch: 1, version: 4), "behind: \(outcomes[2].result)")
        #expect(s.director.sections.isEmpty)
    }

    /// A subscriber at any kept version gets exactly what it missed, composed.
    @Test func catchUpComposesTheMissedBatches() {
        var generator = DirectorGenerator(seed: 4242)
        var s = Sequencer(position: ListVersion(epoch: 3, version: 0))
        var states: [Director] = [s.director]
        for k in 0..<60 {
            s.submit(request("w", UInt64(k), base: s.position, generator.group(for: s.director)), tag: 0)
            if s.seal().commit != nil { states.append(s.director) }
        }
        #expect(s.position.version == UInt64(states.count - 1))
        for (version, past) in states.enumerated() {
            let from = ListVersion(epoch: 3, version: UInt64(version))
            #expect(s.state(at: from) == past, "state at \(version)")
            switch s.catchUp(from: from) {
            case .upToDate: #expect(from == s.position)
            case .changeset(let c):
                #expect(UIKitBatchSimulator.check(c, from: past, to: s.director) == nil, "from \(version)")
            case .snapshot(let reason): Issue.record("snapshot (\(reason)) for a kept version \(version)")
            }
        }
        guard case .snapshot(.epochChanged) = s.catchUp(from: ListVersion(epoch: 2, version: 1)) else {
            Issue.record("epoch")
            return
        }
        guard case .snapshot(.unknownPosition) = s.catchUp(from: ListVersion(epoch: 3, version: 999)) else {
            Issue.record("future")
            return
        }
    }

    @Test func historyIsBoundedByCountAndBytes() {
        var s = Sequencer(
            position: ListVersion(epoch: 1, version: 0), historyLimits: .init(maxBatches: 5, maxBytes: 1 << 30))
        for k in 0..<12 {
            s.submit(
                request("w", UInt64(k), base: s.position, [.insertSections([Section(id: "s\(k)")], at: 0)]), tag: 0)
            _ = s.seal()
        }
        #expect(s.history.count == 5)
        #expect(s.oldestResumable.version == 7)
        guard case .snapshot(.tooOld) = s.catchUp(from: ListVersion(epoch: 1, version: 6)) else {
            Issue.record("too old")
            return
        }
        guard case .changeset = s.catchUp(from: ListVersion(epoch: 1, version: 7)) else {
            Issue.record("oldest kept")
            return
        }

        var small = Sequencer(
            position: ListVersion(epoch: 1, version: 0), historyLimits: .init(maxBatches: 100, maxBytes: 2_000))
        for k in 0..<20 {
            small.submit(
                request(
                    "w", UInt64(k), base: small.position,
                    [
                        .insertSections([Section(id: "s\(k)", header: [UInt8](repeating: 1, count: 500))], at: 0),
                        .removeSections([.index(0)]),
                    ]), tag: 0)
            _ = small.seal()
        }
        #expect(small.history.reduce(0) { $0 + $1.bytes } <= 2_000)
        #expect(small.history.count >= 1)
    }
}

@Suite(.timeLimit(.minutes(2))) struct SequencerHeadTests {
    @Test func epochZeroMeansAtHead() {
        var s = Sequencer(position: ListVersion(epoch: 9, version: 0))
        s.submit(
            MutationRequest(
                clientID: "a", seq: 1, base: ListVersion(epoch: 9, version: 0),
                operations: [.insertSections([Section(id: "s")], at: 0)]), tag: 0)
        _ = s.seal()
        s.submit(
            MutationRequest(
                clientID: "cli", seq: 1, base: ListVersion(epoch: 0, version: 0),
                operations: [.insertRows([Row(id: "r")], in: .id("s"), at: 0)]), tag: 0)
        let sealed = s.seal()
        #expect((try? sealed.outcomes[0].result.get()) == ListVersion(epoch: 9, version: 2))
    }
}
