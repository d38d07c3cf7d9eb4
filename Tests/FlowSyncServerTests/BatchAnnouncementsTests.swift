import FlowSyncCoreTestSupport
import Testing

@testable import FlowSyncServer

/// Announcing committed batches to the followers (issue #33, item 5), without
/// PostgreSQL: only what committed, one statement in flight, the newest version per
/// list, nothing dropped by a lost session.
@Suite(.timeLimit(.minutes(2))) struct BatchAnnouncementsTests {
    typealias A = BatchAnnouncements.Announcement

    @Test func anIdleNodeAnnouncesAtOnceAndABusyOneCoalesces() {
        var machine = BatchAnnouncements()
        #expect(machine.committed(list: "a", version: 1) == .none, "no session yet")
        #expect(machine.sessionReady() == .announce(id: 1, [A(list: "a", version: 1)]))
        #expect(machine.committed(list: "b", version: 4) == .none, "one in flight")
        #expect(machine.committed(list: "a", version: 2) == .none)
        #expect(machine.committed(list: "a", version: 3) == .none)
        #expect(machine.committed(list: "b", version: 3) == .none, "an older version adds nothing")
        #expect(
            machine.announced(1, lost: false) == .announce(id: 2, [A(list: "a", version: 3), A(list: "b", version: 4)]))
        #expect(machine.announced(2, lost: false) == .none)
        #expect(!machine.isAnnouncing && machine.waitingCount == 0)
        #expect(
            machine.committed(list: "c", version: 9) == .announce(id: 3, [A(list: "c", version: 9)]),
            "idle again: at once")
    }

    @Test func theNewestVersionKeepsItsFrame() {
        var machine = BatchAnnouncements()
        _ = machine.sessionReady()
        #expect(
            machine.committed(list: "a", version: 1, frame: [1])
                == .announce(id: 1, [A(list: "a", version: 1, frame: [1])]))
        #expect(machine.committed(list: "a", version: 2, frame: [2]) == .none)
        #expect(machine.committed(list: "a", version: 3, frame: [3]) == .none)
        #expect(
            machine.announced(1, lost: false) == .announce(id: 2, [A(list: "a", version: 3, frame: [3])]),
            "followers at 2 apply it, others read")
        machine.sessionLost()
        #expect(
            machine.sessionReady() == .announce(id: 3, [A(list: "a", version: 3, frame: [3])]),
            "the frame survives a lost session")
    }

    @Test func aLostSessionKeepsEverythingForTheNextOne() {
        var machine = BatchAnnouncements()
        _ = machine.sessionReady()
        #expect(machine.committed(list: "a", version: 1) == .announce(id: 1, [A(list: "a", version: 1)]))
        #expect(machine.committed(list: "b", version: 1) == .none)
        machine.sessionLost()
        #expect(machine.committed(list: "a", version: 2) == .none, "no session")
        #expect(machine.announced(1, lost: true) == .none, "the lost session's answer changes nothing")
        #expect(machine.sessionReady() == .announce(id: 2, [A(list: "a", version: 2), A(list: "b", version: 1)]))
        // The statement fails with its session before the store hears of the loss.
        #expect(machine.announced(2, lost: true) == .none, "not sent again on a dead session")
        #expect(machine.committed(list: "c", version: 1) == .none)
        machine.sessionLost()
        #expect(
            machine.sessionReady()
                == .announce(id: 3, [A(list: "a", version: 2), A(list: "b", version: 1), A(list: "c", version: 1)]))
        #expect(machine.announced(2, lost: false) == .none, "a stale id changes nothing")
        #expect(machine.isAnnouncing)
    }

    /// Seeded random runs: at most one announcement in flight; every committed version
    /// is covered by a later successful announcement of its list (at the same or a newer
    /// version) once the run settles; nothing is announced that did not commit.
    @Test func seededRunsAnnounceEveryCommittedVersionAndNothingElse() {
        let seed = UInt64.random(in: 0...UInt64.max)
        var random = SeededRandom(seed: seed)
        for _ in 0..<300 {
            var machine = BatchAnnouncements()
            var heads: [String: Int64] = [:]
            var announcedUpTo: [String: Int64] = [:]
            var inFlight: (id: UInt64, batch: [A])?
            var connected = false
            func take(_ action: BatchAnnouncements.Action) {
                guard case .announce(let id, let batch) = action else { return }
                #expect(inFlight == nil && connected, "seed \(seed): one in flight, only on a session")
                for a in batch { #expect(a.version <= heads[a.list] ?? 0, "seed \(seed): announced beyond the commit") }
                inFlight = (id, batch)
            }
            for _ in 0..<200 {
                switch random.next() % 10 {
                case 0..<5:
                    let list = "l\(random.next() % 6)"
                    let version = (heads[list] ?? 0) + 1
                    heads[list] = version
                    take(machine.committed(list: list, version: version))
                case 5..<8:
                    guard let sent = inFlight else { continue }
                    inFlight = nil
                    let lost = random.next() % 4 == 0
                    if !lost {
                        for a in sent.batch { announcedUpTo[a.list] = max(announcedUpTo[a.list] ?? 0, a.version) }
                    }
                    if lost { connected = false }
                    take(machine.announced(sent.id, lost: lost))
                case 8:
                    if connected {
                        connected = false
                        inFlight = nil
                        machine.sessionLost()
                    }
                default:
                    if !connected {
                        connected = true
                        take(machine.sessionReady())
                    }
                }
            }
            // Settle: a session, every announcement answered.
            if !connected {
                connected = true
                take(machine.sessionReady())
            }
            var rounds = 0
            while let sent = inFlight, rounds < 100 {
                rounds += 1
                inFlight = nil
                for a in sent.batch { announcedUpTo[a.list] = max(announcedUpTo[a.list] ?? 0, a.version) }
                take(machine.announced(sent.id, lost: false))
            }
            #expect(announcedUpTo == heads, "seed \(seed): every list announced up to its head")
        }
    }

    // MARK: Rules 5–7: PostgreSQL only while a follower may lack a link

    @Test func whileEveryLiveNodeIsLinkedACommitIsNotAnnounced() {
        var machine = BatchAnnouncements()
        _ = machine.sessionReady()
        #expect(
            machine.committed(list: "a", version: 1) == .announce(id: 1, [A(list: "a", version: 1)]),
            "unknown: announced")
        _ = machine.announced(1, lost: false)
        #expect(
            machine.linksChanged(everyLiveNodeLinked: true) { ["a": 1] } == .none, "gaining coverage announces nothing")
        #expect(machine.committed(list: "a", version: 2, frame: [2]) == .none)
        #expect(machine.committed(list: "b", version: 1, frame: [1]) == .none)
        #expect(machine.skipped == 2 && machine.waitingCount == 0)
        // Losing it announces every owned head, without frames (rule 6).
        #expect(
            machine.linksChanged(everyLiveNodeLinked: false) { ["a": 2, "b": 1] }
                == .announce(id: 2, [A(list: "a", version: 2), A(list: "b", version: 1)]))
        #expect(machine.linksChanged(everyLiveNodeLinked: false) { ["a": 9] } == .none, "only at the change")
        #expect(machine.committed(list: "a", version: 3) == .none, "one in flight")
        #expect(machine.announced(2, lost: false) == .announce(id: 3, [A(list: "a", version: 3)]))
    }

    @Test func aHeadIsAnnouncedWhateverTheLinks() {
        var machine = BatchAnnouncements()
        _ = machine.sessionReady()
        _ = machine.linksChanged(everyLiveNodeLinked: true) { [:] }
        #expect(machine.announceHead(list: "a", version: 7) == .announce(id: 1, [A(list: "a", version: 7)]))
        #expect(machine.announceHead(list: "a", version: 6) == .none)
        #expect(machine.committed(list: "a", version: 8, frame: [8]) == .none, "pushed, not announced")
        _ = machine.announced(1, lost: false)
        #expect(machine.waitingCount == 0, "version 6 is covered by 7")
    }

    /// A seeded simulation of one owner, three followers and their links, with the
    /// machine as the owner's decision and ``PushedBatches`` as the followers': links
    /// come up and break at random (a break loses what is on the wire, and each end
    /// notices it at its own time), follows race commits, and lists go quiet at the end.
    /// Every follower reaches every committed version of every list, and while every
    /// link is up (as the owner sees it) no commit is announced through PostgreSQL.
    @Test func seededLinkedRunsReachEveryVersionAndSparePostgresWhileLinked() {
        let seed = UInt64.random(in: 0...UInt64.max)
        var random = SeededRandom(seed: seed)
        enum Link: Equatable { case down, up, broken(ownerNoticed: Bool, followerNoticed: Bool) }
        let names = ["a", "b", "c", "d"]
        var totalSkipped = 0
        for _ in 0..<500 {
            var machine = BatchAnnouncements()
            var log: [String: Int64] = [:]
            var links = Array(repeating: Link.down, count: 3)
            var follows = Array(repeating: Set<String>(), count: 3)
            var heads = Array(repeating: [String: Int64](), count: 3)
            var toOwner = Array(repeating: [String](), count: 3)
            var toFollower = Array(repeating: [(list: String, version: Int64)](), count: 3)
            func ownerSees(_ f: Int) -> Bool {
                switch links[f] {
                case .up: return true
                case .broken(let noticed, _): return !noticed
                case .down: return false
                }
            }
            func catchUp(_ f: Int) { for name in names { heads[f][name] = log[name] ?? 0 } }
            // PostgreSQL: reliable; a follower behind an announced version reads the log.
            func postgres(_ action: BatchAnnouncements.Action) {
                guard case .announce(let id, let batch) = action else { return }
                for f in 0..<3 {
                    for a in batch where (heads[f][a.list] ?? 0) < a.version { heads[f][a.list] = log[a.list] ?? 0 }
                }
                postgres(machine.announced(id, lost: false))
            }
            func coverage() {
                let linked = (0..<3).allSatisfy(ownerSees)
                postgres(machine.linksChanged(everyLiveNodeLinked: linked) { log })
            }
            postgres(machine.sessionReady())
            coverage()
            for step in 0..<400 {
                let f = Int(random.next() % 3)
                // The last 100 steps: quiet lists (no commits; links neither break nor come up).
                switch random.next() % 12 {
                case 0..<4 where step < 300:
                    let name = names[Int(random.next() % 4)]
                    let version = (log[name] ?? 0) + 1
                    log[name] = version
                    for g in 0..<3 where ownerSees(g) && follows[g].contains(name) {
                        if links[g] == .up { toFollower[g].append((name, version)) }  // else lost on the wire
                    }
                    let linked = (0..<3).allSatisfy(ownerSees)
                    let action = machine.committed(list: name, version: version, frame: [1])
                    #expect(!linked || action == .none, "seed \(seed): announced through PostgreSQL while linked")
                    postgres(action)
                case 4..<7:
                    guard links[f] == .up, !toFollower[f].isEmpty else { continue }
                    let push = toFollower[f].removeFirst()
                    let head = heads[f][push.list] ?? 0
                    switch PushedBatches.step(epoch: 1, version: push.version, replicaEpoch: 1, head: head) {
                    case .apply: heads[f][push.list] = push.version
                    case .readLog: heads[f][push.list] = log[push.list] ?? 0
                    case .drop: break
                    }
                case 7..<9:
                    guard links[f] == .up, !toOwner[f].isEmpty else { continue }
                    let name = toOwner[f].removeFirst()
                    follows[f].insert(name)
                    postgres(machine.announceHead(list: name, version: log[name] ?? 0))
                case 9:
                    // A break: what is on the wire is lost. Not in the quiet phase: a
                    // break would make both ends read, hiding a follow that raced a commit.
                    guard links[f] == .up, step < 300 else { continue }
                    links[f] = .broken(ownerNoticed: false, followerNoticed: false)
                    toOwner[f] = []
                    toFollower[f] = []
                case 10:
                    // One end notices the break.
                    guard case .broken(let owner, let follower) = links[f] else { continue }
                    if !owner && (follower || random.next() % 2 == 0) {
                        links[f] = .broken(ownerNoticed: true, followerNoticed: follower)
                        follows[f] = []
                        coverage()
                    } else if !follower {
                        links[f] = .broken(ownerNoticed: owner, followerNoticed: true)
                        catchUp(f)
                    }
                    if links[f] == .broken(ownerNoticed: true, followerNoticed: true) { links[f] = .down }
                default:
                    // A link comes up: both ends ready; the follower sends its follows
                    // and reads every list it follows from the owner. Not in the quiet
                    // phase: a link that comes back would hide a lost push.
                    guard links[f] == .down, step < 300 else { continue }
                    links[f] = .up
                    coverage()
                    toOwner[f] = names
                    catchUp(f)
                }
            }
            // Settle, lists quiet: every break noticed by both ends (the links stay
            // down); every frame on the wire delivered.
            for f in 0..<3 {
                if case .broken(let owner, let follower) = links[f] {
                    if !follower { catchUp(f) }
                    links[f] = .down
                    if !owner {
                        follows[f] = []
                        coverage()
                    }
                }
                for name in toOwner[f] {
                    follows[f].insert(name)
                    postgres(machine.announceHead(list: name, version: log[name] ?? 0))
                }
                toOwner[f] = []
                for push in toFollower[f] {
                    let head = heads[f][push.list] ?? 0
                    switch PushedBatches.step(epoch: 1, version: push.version, replicaEpoch: 1, head: head) {
                    case .apply: heads[f][push.list] = push.version
                    case .readLog: heads[f][push.list] = log[push.list] ?? 0
                    case .drop: break
                    }
                }
                toFollower[f] = []
            }
            for f in 0..<3 {
                for name in names {
                    #expect(
                        heads[f][name] ?? 0 == log[name] ?? 0,
                        "seed \(seed): follower \(f) is at \(heads[f][name] ?? 0) of \(name), the log at \(log[name] ?? 0)"
                    )
                }
            }
            totalSkipped += machine.skipped
        }
        #expect(totalSkipped > 0, "seed \(seed): some runs had every link up")
    }
}
