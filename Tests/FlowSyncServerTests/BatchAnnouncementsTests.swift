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
}
