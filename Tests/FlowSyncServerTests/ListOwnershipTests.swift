import FlowSyncPostgres
import FlowSyncTestSupport
import Testing

@testable import FlowSyncServer

/// A list's ownership on a cluster node (issue #30), event by event and by a seeded
/// simulation against a model — without PostgreSQL, as `PipelineLedgerTests` test the
/// pipeline's ledger.
@Suite(.timeLimit(.minutes(2))) struct ListOwnershipTests {
    static func claim(term: Int64, head: Int64 = 0) -> ClusterLog.Ownership {
        ClusterLog.Ownership(term: term, epoch: 9, head: head)
    }

    @Test func aClaimOwnsAndCommitsOnlyAtItsTerm() {
        var list = ListOwnership()
        list.claimStarted()
        #expect(list.name == "claiming" && list.owned == nil && !list.isReplica)
        list.claimed(Self.claim(term: 3, head: 5), batches: 5, bytes: 50)
        let r1 = list.committed(term: 3, version: 6, bytes: 10)
        #expect(r1)
        let r2 = list.committed(term: 2, version: 7, bytes: 10)
        #expect(!r2, "a completion of an older term changes nothing")
        #expect(
            list.owned?.ownership.head == 6 && list.owned?.batchesSinceSnapshot == 6
                && list.owned?.bytesSinceSnapshot == 60)
        let r3 = list.fenced(term: 2)
        #expect(!r3, "a fence of another term is ignored")
        let r4 = list.fenced(term: 3)
        #expect(r4 && list.name == "fenced" && list.isSettled && list.owned == nil)
        let r5 = list.committed(term: 3, version: 7, bytes: 1)
        #expect(!r5, "nothing commits after the fence")
        list.claimStarted()
        list.loadFailed()
        #expect(list.name == "unowned" && list.isSettled)
    }

    @Test func aReplicaReadsOneRangeAtATimeAndAsksAgain() {
        var list = ListOwnership()
        list.claimStarted()
        list.following(epoch: 9, head: 4)
        #expect(list.isReplica && list.following?.head == 4)
        let r6 = list.fetchWanted()
        #expect(r6?.head == 4)
        let r7 = list.fetchWanted()
        #expect(r7 == nil, "one read in flight")
        let r8 = list.unloaded(unresolved: false)
        #expect(!r8, "not while reading")
        list.delivered(upTo: 7)
        list.delivered(upTo: 6)
        #expect(list.following?.head == 7, "the head never goes back")
        let r9 = list.fetchEnded()
        #expect(r9, "notified meanwhile: read once more")
        let r10 = list.fetchWanted()
        #expect(r10?.head == 7)
        let r11 = list.fetchEnded()
        #expect(!r11)
        let r12 = list.unloaded(unresolved: false)
        #expect(r12 && list.isSettled)
    }

    /// Rule 7 (issue #33, peer links): the owner a replica knows is a hint that moves
    /// with claims and pushes, survives reads and take-overs, and means nothing once the
    /// list is not followed.
    @Test func theOwnerAReplicaKnowsIsKeptWhileFollowingOnly() {
        var list = ListOwnership()
        list.ownerSeen("x")
        #expect(list.following == nil && list.isSettled, "not followed: nothing to keep")
        list.claimStarted()
        list.following(epoch: 9, head: 2, owner: "a")
        #expect(list.following?.owner == "a")
        _ = list.fetchWanted()
        list.ownerSeen("b")
        list.delivered(upTo: 4)
        _ = list.fetchEnded()
        #expect(list.following?.owner == "b" && list.following?.head == 4)
        let started = list.takeOverStarted()
        #expect(started)
        list.takeOverEnded(nil)
        #expect(list.following?.owner == "b", "a failed take-over keeps it")
        list.ownerSeen(nil)
        #expect(list.following?.owner == nil)
        var owned = ListOwnership()
        owned.claimStarted()
        owned.claimed(ClusterLog.Ownership(term: 1, epoch: 9, head: 0), batches: 0, bytes: 0)
        owned.ownerSeen("z")
        #expect(owned.owned != nil && owned.following == nil, "an owned list has no other owner")
    }

    @Test func aTakeOverKeepsFollowingAndEndsOwnedOrFollowing() {
        var list = ListOwnership()
        list.claimStarted()
        list.following(epoch: 9, head: 2)
        let r13 = list.takeOverStarted()
        #expect(r13)
        let r14 = list.takeOverStarted()
        #expect(!r14, "one take-over at a time")
        #expect(list.isReplica && list.name == "takingOver")
        let r15 = list.fetchWanted()
        #expect(r15 != nil, "it keeps following meanwhile")
        list.delivered(upTo: 3)
        _ = list.fetchEnded()
        let r16 = list.unloaded(unresolved: false)
        #expect(!r16, "not during a take-over")
        list.takeOverEnded(nil)
        #expect(list.name == "replica" && list.following?.head == 3)
        let r17 = list.takeOverStarted()
        #expect(r17)
        list.takeOverEnded(Self.claim(term: 8, head: 3))
        #expect(list.owned?.ownership.term == 8 && list.owned?.batchesSinceSnapshot == 0 && !list.isReplica)
    }

    @Test func snapshotCountsSurviveTheWriteAndBlockTheUnload() {
        var list = ListOwnership()
        list.claimStarted()
        list.claimed(Self.claim(term: 1), batches: 9, bytes: 900)
        #expect(list.snapshotDue(everyBatches: 10, everyBytes: 0) == false)
        list.committed(term: 1, version: 1, bytes: 100)
        #expect(
            list.snapshotDue(everyBatches: 10, everyBytes: 0) && list.snapshotDue(everyBatches: 0, everyBytes: 1_000))
        #expect(!list.snapshotDue(everyBatches: 0, everyBytes: 0), "0: never")
        let covered = list.snapshotStarted()
        #expect(!list.snapshotDue(everyBatches: 10, everyBytes: 0), "not twice at once")
        let r18 = list.unloaded(unresolved: false)
        #expect(!r18, "not while a snapshot is written")
        list.committed(term: 1, version: 2, bytes: 7)
        list.snapshotEnded(stored: covered)
        #expect(
            list.owned?.batchesSinceSnapshot == 1 && list.owned?.bytesSinceSnapshot == 7,
            "what was appended meanwhile stays counted")
        let r19 = list.unloaded(unresolved: true)
        #expect(!r19, "not with an append of unknown outcome")
        list.released()
        #expect(list.isSettled)
    }

    @Test func theTableForgetsSettledLists() {
        var table = ClusterLists()
        table.update("a") { $0.claimStarted() }
        table.update("a") { $0.claimed(Self.claim(term: 1), batches: 0, bytes: 0) }
        table.update("b") { $0.claimStarted() }
        table.update("b") { $0.following(epoch: 9, head: 0) }
        #expect(table.ownedNames == ["a"] && table.replicaNames == ["b"] && table.owned["a"]?.term == 1)
        table.update("a") { $0.fenced(term: 1) }
        #expect(table.owned.isEmpty && table["a"].name == "unowned")
        table.update("c") { $0.claimStarted() }
        table.update("c") { $0.claimed(Self.claim(term: 2), batches: 0, bytes: 0) }
        table.releaseAll()
        #expect(table.ownedNames.isEmpty && table.replicaNames == ["b"])
    }

    /// Issue #33, rule 6: a list whose preferred node appeared is handed over; nothing
    /// commits meanwhile, and it ends a replica at the head it had, owned again, or
    /// fenced.
    @Test func aHandOverEndsAReplicaAtItsHeadOwnedOrFenced() {
        var list = ListOwnership()
        list.claimStarted()
        list.claimed(Self.claim(term: 4, head: 7), batches: 0, bytes: 0)
        list.preferred("c")
        #expect(list.owned?.movingTo == "c")
        var table = ClusterLists()
        table.update("l") { $0 = list }
        #expect(table.moving.map(\.list) == ["l"] && table.moving.map(\.to) == ["c"])
        let started = list.handOverStarted()
        #expect(started?.ownership.term == 4 && list.isHandingOver && list.name == "handingOver")
        #expect(
            list.owned == nil && !list.isReplica && !list.isSettled, "nothing appends, takes the inbox or snapshots")
        let again = list.handOverStarted()
        #expect(again == nil, "one hand-over at a time")
        let counted = list.committed(term: 4, version: 8, bytes: 1)
        #expect(!counted, "nothing commits during a hand-over")
        let unloaded = list.unloaded(unresolved: false)
        #expect(!unloaded, "not unloaded during a hand-over")
        list.handOverEnded(.kept)
        #expect(
            list.owned?.ownership == Self.claim(term: 4, head: 7) && list.owned?.movingTo == nil,
            "kept: owned as before")
        _ = list.handOverStarted()
        list.handOverEnded(.released)
        #expect(
            list.isReplica && list.following == ListOwnership.Following(epoch: 9, head: 7),
            "released: a replica at its head")
        list.claimStarted()
        list.claimed(Self.claim(term: 6, head: 7), batches: 0, bytes: 0)
        _ = list.handOverStarted()
        list.handOverEnded(.fenced)
        #expect(list.name == "fenced" && list.isSettled)
        list.claimStarted()
        list.claimed(Self.claim(term: 7, head: 7), batches: 0, bytes: 0)
        _ = list.handOverStarted()
        list.released()
        #expect(list.name == "unowned", "a clean stop releases a list being handed over too")
    }

    /// Random events in random phases against a model of the phase, the term, the head
    /// and the read in flight; impossible events are not sent (they trap by design).
    @Test func seededEventsKeepThePromises() {
        let seed = UInt64.random(in: 0...UInt64.max)
        print("ListOwnershipTests seed: \(seed)")
        var random = SeededRandom(seed: seed)
        var list = ListOwnership()
        var term: Int64 = 0
        var nextTerm: Int64 = 1
        var head: Int64 = 0
        var fetching = false
        for step in 0..<20_000 {
            let before = list.name
            switch (before, random.next() % 8) {
            case (_, 0):
                list.claimStarted()
                fetching = false
            case ("claiming", 1), ("claiming", 2):
                term = nextTerm
                nextTerm += 1
                head = Int64(random.next() % 10)
                list.claimed(Self.claim(term: term, head: head), batches: 0, bytes: 0)
            case ("claiming", 3):
                head = Int64(random.next() % 10)
                list.following(epoch: 9, head: head)
            case ("claiming", _):
                list.loadFailed()
            case ("owned", 1), ("owned", 2):
                let staleTerm = random.next() % 4 == 0
                let counted = list.committed(term: staleTerm ? term - 1 : term, version: head + 1, bytes: 1)
                #expect(counted == !staleTerm, "seed \(seed), step \(step)")
                if counted { head += 1 }
            case ("owned", 3):
                let ended = list.fenced(term: random.next() % 3 == 0 ? term + 5 : term)
                #expect(ended == (list.name == "fenced"), "seed \(seed), step \(step)")
            case ("owned", 4):
                list.released()
            case ("owned", 5):
                list.preferred(random.next() % 2 == 0 ? "c" : nil)
            case ("owned", 6):
                let started = list.handOverStarted()
                #expect(started?.ownership.term == term && list.owned == nil, "seed \(seed), step \(step)")
            case ("handingOver", 0...3):
                let counted = list.committed(term: term, version: head + 1, bytes: 1)
                let fenced = list.fenced(term: term)
                #expect(!counted && !fenced, "seed \(seed), step \(step): nothing commits or fences meanwhile")
            case ("handingOver", 4):
                list.handOverEnded(.released)
                fetching = false
                #expect(list.following?.head == head, "seed \(seed), step \(step): a replica at its head")
            case ("handingOver", 5):
                list.handOverEnded(.kept)
            case ("handingOver", _):
                list.handOverEnded(.fenced)
            case ("owned", _), ("unowned", _), ("fenced", _):
                let unloaded = list.unloaded(unresolved: random.next() % 2 == 0)
                #expect(
                    unloaded || before == "owned",
                    "seed \(seed), step \(step): only an owned list with work in flight stays")
            case ("replica", 1), ("takingOver", 1):
                let read = list.fetchWanted()
                #expect((read == nil) == fetching, "seed \(seed), step \(step): one read at a time")
                fetching = true
            case ("replica", 2), ("takingOver", 2):
                if fetching { _ = list.fetchEnded() }
                fetching = false
            case ("replica", 3), ("takingOver", 3):
                head += Int64(random.next() % 3)
                list.delivered(upTo: head)
            case ("replica", 4):
                let r20 = list.takeOverStarted()
                #expect(r20)
            case ("takingOver", 4):
                if random.next() % 2 == 0 {
                    term = nextTerm
                    nextTerm += 1
                    list.takeOverEnded(Self.claim(term: term, head: head))
                    fetching = false
                } else {
                    list.takeOverEnded(nil)
                }
            case ("replica", 5):
                list.broken()
                fetching = false
            default:
                let unloaded = list.unloaded(unresolved: false)
                #expect(!unloaded || before == "replica", "seed \(seed), step \(step): \(before) unloaded")
                #expect(!(unloaded && fetching), "seed \(seed), step \(step): unloaded during a read")
            }
            // The model agrees with the machine after every event.
            if let owned = list.owned {
                guard owned.ownership.term == term, owned.ownership.head == head else {
                    Issue.record(
                        "seed \(seed), step \(step): owned at term \(owned.ownership.term) head \(owned.ownership.head), model \(term)/\(head)"
                    )
                    return
                }
            }
            if let following = list.following {
                guard following.head == head, following.fetching == fetching else {
                    Issue.record(
                        "seed \(seed), step \(step): following \(following), model head \(head) fetching \(fetching)")
                    return
                }
            }
            #expect(list.isSettled == ["unowned", "fenced"].contains(list.name))
        }
    }
}
