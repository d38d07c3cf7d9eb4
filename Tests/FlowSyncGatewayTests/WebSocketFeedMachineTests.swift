import FlowSyncCore
import FlowSyncGatewayCore
import FlowSyncProtocol
import FlowSyncTestSupport
import Testing

/// The shared WebSocket feed's machine, with no socket: event by event, then a seeded
/// simulation of a daemon, its link and many members over thousands of random sequences.
@Suite(.timeLimit(.minutes(3))) struct WebSocketFeedMachineTests {
    typealias Machine = WebSocketFeedMachine<Int>

    static func v(_ version: UInt64) -> ListVersion { ListVersion(epoch: 7, version: version) }

    /// A one-section list at `version` with `rows` rows, as the daemon would send it.
    static func state(rows: Int) -> Director {
        var director = Director()
        _ = try! director.apply([.insertSections([Section(id: "S")], at: 0)])
        for i in 0..<rows {
            _ = try! director.apply([.insertRows([Row(id: "r\(i)")], in: .id("S"), at: i)])
        }
        return director
    }

    static func snapshot(_ director: Director, at version: UInt64) -> Snapshot {
        Snapshot(
            listName: "l", position: v(version), digest: director.digest, reason: .freshSubscribe,
            sections: director.sections)
    }

    /// The Diff that adds row `r<rows>` to `state(rows:)`, from `version`.
    static func diff(addingTo rows: Int, from version: UInt64) -> Diff {
        var director = state(rows: rows)
        let changeset = try! director.apply([.insertRows([Row(id: "r\(rows)")], in: .id("S"), at: rows)])
        return Diff(
            listName: "l", epoch: 7, fromVersion: version, toVersion: version + 1, digest: director.digest,
            changeset: changeset)
    }

    static func joined(_ answer: Machine.JoinAnswer) -> [Machine.Action] {
        guard case .joined(let actions) = answer else {
            Issue.record("the feed had ended")
            return []
        }
        return actions
    }

    /// The members and message of a single `deliver`.
    static func delivery(_ actions: [Machine.Action]) -> (Machine.Message, [Int])? {
        guard actions.count == 1, case .deliver(let message, let members) = actions[0] else { return nil }
        return (message, members)
    }

    @Test func theFirstJoinSubscribesAndJoinersWaitForTheSnapshot() {
        var m = Machine(list: "l")
        let first = Self.joined(m.join(1))
        guard case .subscribe = first.first, first.count == 1 else {
            Issue.record("\(first)")
            return
        }
        #expect(Self.joined(m.join(2)).isEmpty)
        let actions = m.receivedSnapshot(Self.snapshot(Self.state(rows: 2), at: 3))
        guard let (message, members) = Self.delivery(actions), case .snapshot(let s) = message else {
            Issue.record("\(actions)")
            return
        }
        #expect(members == [1, 2] && s.position == Self.v(3) && s.reason == .freshSubscribe)
        #expect(m.position == Self.v(3) && m.memberCount == 2)
        m.checkInvariants()
    }

    @Test func aLateJoinerGetsASnapshotOfTheReplicaAtTheFeedsPositionThenTheSameDiffs() {
        var m = Machine(list: "l")
        _ = m.join(1)
        _ = m.receivedSnapshot(Self.snapshot(Self.state(rows: 1), at: 1))
        _ = m.receivedDiff(Self.diff(addingTo: 1, from: 1))
        guard let (message, members) = Self.delivery(Self.joined(m.join(2))), case .snapshot(let s) = message else {
            Issue.record("no snapshot")
            return
        }
        #expect(members == [2] && s.position == Self.v(2) && s.reason == .freshSubscribe)
        #expect(s.digest == Self.state(rows: 2).digest && s.sections == Self.state(rows: 2).sections)
        guard let (next, to) = Self.delivery(m.receivedDiff(Self.diff(addingTo: 2, from: 2))),
            case .diff(let d) = next
        else {
            Issue.record("no diff")
            return
        }
        #expect(to == [1, 2] && d.to == Self.v(3))
    }

    @Test func aGapOrADigestMismatchResubscribesAndEveryoneGetsTheNewSnapshotAsAResync() {
        var m = Machine(list: "l")
        _ = m.join(1)
        _ = m.receivedSnapshot(Self.snapshot(Self.state(rows: 1), at: 1))
        var wrong = Self.diff(addingTo: 1, from: 1)
        wrong.digest = Self.state(rows: 5).digest
        guard case .resubscribe = m.receivedDiff(wrong).first else {
            Issue.record("a mismatch is passed on")
            return
        }
        // The old subscription's diffs are ignored until the new snapshot; a joiner waits.
        #expect(m.receivedDiff(Self.diff(addingTo: 2, from: 2)).isEmpty)
        #expect(Self.joined(m.join(2)).isEmpty)
        let actions = m.receivedSnapshot(Self.snapshot(Self.state(rows: 3), at: 3))
        guard actions.count == 2, case .deliver(.snapshot(let resync), [1]) = actions[0],
            case .deliver(.snapshot(let fresh), [2]) = actions[1]
        else {
            Issue.record("\(actions)")
            return
        }
        #expect(resync.reason == .resyncRequested && fresh.reason == .freshSubscribe)
        // A gap: a diff that does not start at the feed's position.
        guard case .resubscribe = m.receivedDiff(Self.diff(addingTo: 4, from: 4)).first else {
            Issue.record("a gap is passed on")
            return
        }
    }

    @Test func theLastLeavingEndsTheFeedAndLeftMembersGetNothing() {
        var m = Machine(list: "l")
        _ = m.join(1)
        _ = m.join(2)
        _ = m.receivedSnapshot(Self.snapshot(Self.state(rows: 0), at: 1))
        #expect(m.leave(1).isEmpty)
        guard let (_, members) = Self.delivery(m.receivedDiff(Self.diff(addingTo: 0, from: 1))) else {
            Issue.record("no diff")
            return
        }
        #expect(members == [2])
        guard case .end = m.leave(2).first else {
            Issue.record("the last leaving does not end the feed")
            return
        }
        #expect(m.hasEnded)
        guard case .feedEnded = m.join(3) else {
            Issue.record("an ended feed took a member")
            return
        }
        #expect(m.receivedDiff(Self.diff(addingTo: 1, from: 2)).isEmpty)
    }

    @Test func everyoneLeavingBeforeTheSnapshotEndsTheFeed() {
        var m = Machine(list: "l")
        _ = m.join(1)
        guard case .end = m.leave(1).first else {
            Issue.record("not ended")
            return
        }
        #expect(m.receivedSnapshot(Self.snapshot(Self.state(rows: 0), at: 1)).isEmpty)
    }

    @Test func aRefusalOrALostLinkIsEveryonesAndEndsTheFeed() {
        var m = Machine(list: "l")
        _ = m.join(1)
        _ = m.join(2)
        let problem = Problem.daemon(code: .forbidden, message: "no")
        let refused = m.subscriptionRefused(problem)
        guard refused.count == 2, case .refuse(let p, let members) = refused[0], case .end = refused[1] else {
            Issue.record("\(refused)")
            return
        }
        #expect(p == problem && members == [1, 2])
        var n = Machine(list: "l")
        _ = n.join(1)
        _ = n.receivedSnapshot(Self.snapshot(Self.state(rows: 0), at: 1))
        _ = n.join(2)
        let lost = n.linkLost()
        guard case .linkLost(let everyone) = lost.first else {
            Issue.record("\(lost)")
            return
        }
        #expect(everyone == [1, 2] && n.hasEnded && n.linkLost().isEmpty)
    }

    @Test func aSnapshotThatDoesNotMatchItsDigestIsALostLink() {
        var m = Machine(list: "l")
        _ = m.join(1)
        var bad = Self.snapshot(Self.state(rows: 2), at: 1)
        bad.digest = Self.state(rows: 1).digest
        let actions = m.receivedSnapshot(bad)
        guard case .linkLost([1]) = actions.first else {
            Issue.record("\(actions)")
            return
        }
        #expect(m.hasEnded)
    }

    // MARK: The seeded property test

    /// What one member has seen.
    struct MemberView {
        var replica: Director?
        var position: ListVersion?
        var gone = false
    }

    /// One random run: a daemon (the truth), its in-order link to the feed, the shell
    /// carrying out the actions, and members checking each message as a browser would.
    struct Simulation {
        var random: SeededRandom
        var generator: DirectorGenerator
        var truth: Director
        var head: UInt64 = 1
        /// The state at the last position the daemon sent on the current subscription.
        var sent: (Director, UInt64)?
        var inFlight: [Machine.Message] = []
        var machine: Machine?
        var members: [Int: MemberView] = [:]
        var nextMember = 1
        var feedsMade = 0
        /// The first broken promise, if any (the run stops there).
        var failure: String?

        mutating func check(_ condition: Bool, _ message: @autoclosure () -> String) {
            if !condition && failure == nil { failure = message() }
        }

        init(seed: UInt64) {
            random = SeededRandom(seed: seed)
            generator = DirectorGenerator(seed: seed ^ 0x5EED)
            truth = generator.director()
        }

        var current: [Int] { members.filter { !$0.value.gone }.map(\.key).sorted() }

        mutating func daemonSubscribed(reason: Snapshot.Reason = .freshSubscribe) {
            inFlight.append(
                .snapshot(
                    Snapshot(
                        listName: "l", position: WebSocketFeedMachineTests.v(head), digest: truth.digest,
                        reason: reason, sections: truth.sections)))
            sent = (truth, head)
        }

        mutating func carryOut(_ actions: [Machine.Action]) {
            for action in actions {
                switch action {
                case .subscribe:
                    check(sent == nil, "subscribed twice")
                    daemonSubscribed()
                case .resubscribe:
                    check(sent != nil, "resubscribed without a link")
                    daemonSubscribed()
                case .deliver(let message, let to):
                    for id in to { receive(message, by: id) }
                case .refuse(_, let to), .linkLost(let to):
                    for id in to {
                        check(members[id]?.gone == false, "member \(id) told after leaving")
                        members[id]?.gone = true
                    }
                case .end:
                    machine = nil
                    sent = nil
                    inFlight = []
                }
            }
        }

        mutating func receive(_ message: Machine.Message, by id: Int) {
            guard var view = members[id], !view.gone else {
                check(false, "member \(id) received a message after leaving (or never joined)")
                return
            }
            switch message {
            case .snapshot(let snapshot):
                guard let replica = try? Director(sections: snapshot.sections, limits: Machine.replicaLimits) else {
                    check(false, "a snapshot that is no list")
                    return
                }
                check(replica.digest == snapshot.digest, "a snapshot that does not match its digest")
                if let position = view.position {
                    check(snapshot.reason != .freshSubscribe, "member \(id): a second snapshot called fresh")
                    check(snapshot.position.version >= position.version, "member \(id): a snapshot going back")
                } else {
                    check(snapshot.reason == .freshSubscribe, "member \(id): a first snapshot not called fresh")
                }
                view.replica = replica
                view.position = snapshot.position
            case .diff(let diff):
                guard view.replica != nil, let position = view.position else {
                    check(false, "member \(id) received a diff before its snapshot")
                    return
                }
                check(diff.from == position, "member \(id): a diff from \(diff.from) at \(position)")
                check(diff.to.version > diff.from.version, "member \(id): a diff that goes nowhere")
                // Applied to the only reference (no copy of the replica per member and Diff).
                var replica = view.replica!
                view.replica = nil
                members[id] = nil
                check((try? diff.changeset.apply(to: &replica)) != nil, "member \(id): a diff that does not apply")
                check(replica.digest == diff.digest, "member \(id): a diff's result differs from its digest")
                view.replica = replica
                view.position = diff.to
            }
            members[id] = view
        }

        /// The daemon commits a random batch; what it sends depends on `how`.
        enum Send { case each, coalesce, lose, corrupt }

        mutating func commit(_ how: Send) {
            let before = truth
            let changeset: Changeset
            do {
                changeset = try truth.apply(generator.group(for: truth, maxOps: 3))
            } catch {
                return
            }
            head += 1
            guard let (base, from) = sent else { return }
            switch how {
            case .each:
                let diffChangeset = from == head - 1 ? changeset : Changeset.diff(from: base, to: truth)
                inFlight.append(.diff(diff(from: from, changeset: diffChangeset)))
                sent = (truth, head)
            case .coalesce:
                // A slow link's catch-up: sends nothing now, and one Diff for all later.
                _ = before
            case .lose:
                // A gap: the batch is never sent; the next Diff starts after it.
                sent = (truth, head)
            case .corrupt:
                var bad = diff(from: from, changeset: Changeset.diff(from: base, to: truth))
                bad.digest = before.digest
                if bad.digest == truth.digest { return }
                inFlight.append(.diff(bad))
                sent = (truth, head)
            }
        }

        func diff(from: UInt64, changeset: Changeset) -> Diff {
            Diff(
                listName: "l", epoch: 7, fromVersion: from, toVersion: head, digest: truth.digest,
                changeset: changeset)
        }

        mutating func step() {
            let roll = random.int(0..<100)
            switch roll {
            case 0..<12:
                let id = nextMember
                nextMember += 1
                members[id] = MemberView()
                if machine == nil {
                    machine = Machine(list: "l")
                    feedsMade += 1
                }
                guard case .joined(let actions) = machine!.join(id) else {
                    check(false, "a feed the shell holds refused a join")
                    return
                }
                carryOut(actions)
            case 12..<20:
                guard let id = current.randomElement(using: &random) else { return }
                members[id]?.gone = true
                if machine != nil { carryOut(machine!.leave(id)) }
            case 20..<45:
                commit(random.chance(0.9) ? .each : (random.chance(0.5) ? .coalesce : .lose))
            case 45..<47:
                commit(.corrupt)
            case 47..<48:
                if sent != nil { daemonSubscribed(reason: .resyncRequested) }  // the daemon's own resync
            case 48..<49:
                if machine != nil, sent != nil { carryOut(machine!.linkLost()) }
            case 49..<50:
                if machine != nil, random.chance(0.3) {
                    carryOut(machine!.subscriptionRefused(Problem.daemon(code: .forbidden, message: "no")))
                }
            default:
                deliverOne()
            }
            machine?.checkInvariants()
        }

        mutating func deliverOne() {
            guard machine != nil, !inFlight.isEmpty else { return }
            switch inFlight.removeFirst() {
            case .snapshot(let snapshot): carryOut(machine!.receivedSnapshot(snapshot))
            case .diff(let diff): carryOut(machine!.receivedDiff(diff))
            }
        }

        /// Lets the link drain (after one more batch and a catch-up), then checks every member is at
        /// the daemon's head with the daemon's state.
        mutating func settle() {
            // One more batch, so a lost one shows as a gap (a live daemon keeps writing).
            let start = head
            for _ in 0..<20 where sent != nil && head == start { commit(.each) }
            if let (base, from) = sent, from != head {
                inFlight.append(.diff(diff(from: from, changeset: Changeset.diff(from: base, to: truth))))
                sent = (truth, head)
            }
            var guardSteps = 0
            while machine != nil, !inFlight.isEmpty {
                deliverOne()
                guardSteps += 1
                if guardSteps > 10_000 {
                    check(false, "the feed never settles")
                    return
                }
            }
            guard let machine, !machine.hasEnded else { return }
            check(machine.position == WebSocketFeedMachineTests.v(head), "the feed is not at the head")
            for id in current {
                let view = members[id]!
                check(view.position == WebSocketFeedMachineTests.v(head), "member \(id) is behind")
                check(view.replica?.digest == truth.digest, "member \(id)'s state differs from the daemon's")
            }
        }
    }

    @Test func thousandsOfRandomSequencesKeepEveryMembersStreamWhole() {
        let sequences = 2_000
        var feeds = 0
        var deliveries = 0
        for seed in 1...UInt64(sequences) {
            var simulation = Simulation(seed: seed)
            let steps = simulation.random.int(20...160)
            for _ in 0..<steps where simulation.failure == nil { simulation.step() }
            if simulation.failure == nil { simulation.settle() }
            if let failure = simulation.failure {
                Issue.record("seed \(seed): \(failure)")
                return
            }
            feeds += simulation.feedsMade
            deliveries += simulation.members.values.compactMap(\.position).count
        }
        #expect(feeds > sequences, "the runs made feeds (\(feeds))")
        #expect(deliveries > sequences, "members received snapshots (\(deliveries))")
    }
}
