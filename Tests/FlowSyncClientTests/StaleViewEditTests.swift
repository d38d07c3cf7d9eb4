import FlowSyncCore
import FlowSyncProtocol
import FlowSyncTestSupport
import Testing

@testable import FlowSyncClient

/// Edits the app built on a view that changed before they were submitted (a batch
/// landed between the read and the write): they must mean what they meant on the view
/// the app read, as the server treats a stale base — never hit whatever now sits at
/// their indices.
@Suite(.timeLimit(.minutes(2))) struct StaleViewEditTests {
    typealias H = ClientSessionTests.Harness

    /// Ready and live on s = [a, b]; returns the confirmed state at version 1.
    static func live(_ h: inout H) -> Director {
        h.ready()
        h.receive(ClientSessionTests.snapshot(ClientSessionTests.base, version: 1))
        return try! Director(sections: ClientSessionTests.base)
    }

    static func rows(_ director: Director) -> [String] { director.sections[0].rows.map(\.id) }

    @Test func removeAtAnIndexRemovesTheRowTheAppSawThere() throws {
        var h = H()
        let confirmed = Self.live(&h)
        let seen = h.replica.view  // the app reads [a, b] ...
        // ... a remote insert at the top lands ...
        let (diff, _) = ClientSessionTests.diff(
            from: confirmed, version: 1, [.insertRows([Row(id: "x")], in: .id("s"), at: 0)])
        h.receive(diff)
        #expect(Self.rows(h.replica.view) == ["x", "a", "b"])
        // ... then the app removes row 0, which it saw as "a".
        let (_, actions) = try h.session.submit(
            [.removeRows([.index(0, in: .index(0))])], to: ClientSessionTests.list, basedOn: seen)
        h.take(actions)
        #expect(
            Self.rows(h.replica.view) == ["x", "b"], "the row the app saw at 0 is gone, not the one that moved there")
        #expect(h.lastMutate?.operations == [.removeRows([.id("a")])], "sent as the row the app meant")
    }

    @Test func addAtTheEndStaysAtTheEnd() throws {
        var h = H()
        let confirmed = Self.live(&h)
        let seen = h.replica.view
        let (diff, _) = ClientSessionTests.diff(
            from: confirmed, version: 1, [.insertRows([Row(id: "x"), Row(id: "y")], in: .id("s"), at: 2)])
        h.receive(diff)
        // "at 2" was the end of what the app saw; it is the end still.
        let (_, actions) = try h.session.submit(
            [.insertRows([Row(id: "c")], in: .id("s"), at: 2)], to: ClientSessionTests.list, basedOn: seen)
        h.take(actions)
        #expect(Self.rows(h.replica.view) == ["a", "b", "x", "y", "c"])
    }

    @Test func editOfARowThatIsGoneSinceIsRefusedAndChangesNothing() throws {
        var h = H()
        let confirmed = Self.live(&h)
        let seen = h.replica.view
        let (diff, _) = ClientSessionTests.diff(from: confirmed, version: 1, [.removeRows([.id("a")])])
        h.receive(diff)
        let before = h.replica.view
        #expect(throws: FlowSyncError.self) {
            _ = try h.session.submit(
                [.replaceRow(.index(0, in: .index(0)), with: Row(id: "a", text: "edited"))],
                to: ClientSessionTests.list, basedOn: seen)
        }
        #expect(h.replica.view == before && h.replica.pending.isEmpty)
    }

    @Test func unchangedViewTakesTheDirectPath() throws {
        var h = H()
        _ = Self.live(&h)
        let seen = h.replica.view
        let (_, actions) = try h.session.submit(
            [.insertRows([Row(id: "c")], in: .id("s"), at: 1)], to: ClientSessionTests.list, basedOn: seen)
        h.take(actions)
        #expect(Self.rows(h.replica.view) == ["a", "c", "b"])
    }

    /// Seeded: a random valid edit built on a view, a random remote batch landing
    /// before it is submitted; the result must equal the edit rebased by identity
    /// (the oracle: anchor in the old view, resolve in the new — what the server does).
    @Test func seededStaleEditsMatchTheRebaseOracle() throws {
        var checked = 0
        for seed in 0..<2_000 {
            // Two writers' generators: their new IDs never collide.
            var generator = DirectorGenerator(seed: UInt64(seed) &+ 77, idPrefix: "L")
            var others = DirectorGenerator(seed: UInt64(seed) &* 31 &+ 5, idPrefix: "R")
            var h = H()
            h.ready()
            let start = generator.director()
            h.receive(
                .snapshot(
                    Snapshot(
                        listName: ClientSessionTests.list,
                        position: ListVersion(epoch: ClientSessionTests.epoch, version: 1),
                        digest: start.digest, reason: .freshSubscribe, sections: start.sections)))
            let seen = h.replica.view
            let local = generator.group(for: seen, maxOps: 3)
            var probe = seen
            guard (try? probe.apply(local)) != nil else { continue }
            let remote = others.group(for: seen, maxOps: 2)
            var next = seen
            guard let changeset = try? next.apply(remote) else { continue }
            h.receive(
                .diff(
                    Diff(
                        listName: ClientSessionTests.list, epoch: ClientSessionTests.epoch, fromVersion: 1,
                        toVersion: 2,
                        digest: next.digest, changeset: changeset, mutations: [])))
            // The oracle.
            var anchorIn = seen
            let anchored = try anchorIn.anchor(local)
            var expected = next
            let oracle = try? expected.applyResolving(anchored)
            let outcome = try? h.session.submit(local, to: ClientSessionTests.list, basedOn: seen)
            if oracle == nil {
                #expect(outcome == nil, "seed \(seed): the oracle conflicts, the replica accepted it")
                #expect(h.replica.view == next, "seed \(seed): a refused edit changed the view")
            } else {
                #expect(outcome != nil, "seed \(seed): refused, the oracle applies it")
                #expect(h.replica.view == expected, "seed \(seed): the view differs from the rebased edit")
            }
            checked += 1
        }
        #expect(checked > 1_000, "only \(checked) cases")
    }
}
