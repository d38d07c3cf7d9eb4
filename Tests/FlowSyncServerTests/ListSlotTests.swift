import FlowSyncCore
import FlowSyncTestSupport
import Testing

@testable import FlowSyncServer

/// A list's one entry in the server (issue #30), event by event and by a seeded
/// simulation against a model, without a socket or a store.
@Suite(.timeLimit(.minutes(2))) struct ListSlotTests {
    static let configuration = ServerConfiguration()

    static func host(_ name: String, declared: Bool = false) -> ListHost {
        ListHost(
            name: name, epoch: 7, limits: configuration.director, history: configuration.historyLimits,
            dedupe: configuration.dedupeLimits, declared: declared)
    }

    static func action(_ n: UInt64) -> ConnectionStateMachine.Action { .pong(nonce: n) }

    static func nonces(_ waiting: [(connection: Int, action: ConnectionStateMachine.Action)]) -> [UInt64] {
        waiting.map { if case .pong(let n) = $0.action { return n } else { return 0 } }
    }

    @Test func aLoadQueuesInOrderUpToItsLimitThenHostsAndReplays() {
        var table = ListTable()
        table.startLoading(ListLoad(name: "l", startedNanoseconds: 0))
        #expect(table.isLoading("l") && table.loadingCount == 1 && table["l"] == nil)
        for n in 1...3 {
            guard case .queued = table.slot("l")!.requestArrived(connection: n, Self.action(UInt64(n)), limit: 3) else {
                Issue.record("request \(n) not queued")
                return
            }
        }
        guard case .overloaded = table.slot("l")!.requestArrived(connection: 4, Self.action(4), limit: 3) else {
            Issue.record("the fourth request passed the limit")
            return
        }
        let host = Self.host("l")
        guard let (_, action) = table.loadFinished("l", .hosted(host)), case .replay(let waiting) = action else {
            Issue.record("no replay")
            return
        }
        #expect(Self.nonces(waiting) == [1, 2, 3], "in arrival order")
        #expect(table["l"] === host && table.hostedCount == 1 && table.loadingCount == 0)
        guard case .serve(let served) = table.slot("l")!.requestArrived(connection: 5, Self.action(5), limit: 3) else {
            Issue.record("a hosted list does not serve")
            return
        }
        #expect(served === host)
        let late = table.loadFinished("l", .absent).map { _ in true }
        #expect(late == nil, "a completion for a list no longer loading is ignored")
    }

    @Test func aDamagedListIsRefusedUntilARestartAndAnIOErrorFreesTheName() {
        var table = ListTable()
        table.startLoading(ListLoad(name: "bad", startedNanoseconds: 0))
        _ = table.slot("bad")!.requestArrived(connection: 1, Self.action(1), limit: 8)
        guard
            case .refuse(let waiting, _)? = table.loadFinished("bad", .damaged(.corrupt("f", offset: 0, "crc")))?.action
        else {
            Issue.record("damage does not refuse")
            return
        }
        #expect(waiting.count == 1 && table.refusedNames == ["bad"] && table.refusedCount == 1)
        guard case .refused = table.slot("bad")!.requestArrived(connection: 2, Self.action(2), limit: 8) else {
            Issue.record("a refused list served")
            return
        }
        table.startLoading(ListLoad(name: "io", startedNanoseconds: 0))
        guard case .refuse? = table.loadFinished("io", .failed(.unusable("down")))?.action else {
            Issue.record("an I/O error does not refuse the waiting requests")
            return
        }
        #expect(table.slot("io") == nil, "tried again at the next request")
        table.startLoading(ListLoad(name: "new", startedNanoseconds: 0))
        guard case .replay? = table.loadFinished("new", .absent)?.action else {
            Issue.record("an absent list does not replay")
            return
        }
        #expect(table.slot("new") == nil && table.loadingCount == 0)
    }

    @Test func eachDepartureIsOneMethodAndForgetsOnlyItsHost() {
        var table = ListTable()
        let declared = Self.host("d", declared: true)
        table.host(declared)
        let dropped = table.drop(declared)
        #expect(!dropped, "a declared list is never dropped")
        let lost = Self.host("x")
        table.host(lost)
        let lostFirst = table.lose(lost)
        #expect(lostFirst && table["x"] == nil)
        let newer = Self.host("x")
        table.host(newer)
        let lostAgain = table.lose(lost)
        #expect(!lostAgain, "a fenced completion of an older host leaves the newer one")
        #expect(table["x"] === newer && table.hostedCount == 2)
        let unloaded = table.unload(newer)
        #expect(unloaded && table.hostedCount == 1 && table.hostedNames == ["d"])
    }

    @Test func idleAsksOnlyTheEntryAndWhatOtherRoomsHold() {
        let now: UInt64 = 10_000
        func idle(_ change: (ListHost) -> Void = { _ in }, elsewhere: Bool = false) -> Bool {
            let list = Self.host("l")
            list.lastActive = 1_000
            change(list)
            return list.isIdle(now: now, idleFor: 5_000, busyElsewhere: elsewhere)
        }
        #expect(idle())
        #expect(!idle { $0.declared = true })
        #expect(!idle { $0.lastActive = 6_000 })
        #expect(!idle { $0.compaction = .due })
        #expect(!idle { $0.compaction = .running })
        #expect(!idle { $0.takingOver = true })
        #expect(!idle { $0.submit(MutationRequest(clientID: "c", seq: 1, base: $0.position, operations: []), tag: 1) })
        #expect(!idle(elsewhere: true))
    }

    @Test func aCompactionIsQueuedOnceAndNeverTwiceInFlight() {
        var table = ListTable()
        let a = Self.host("a"), b = Self.host("b")
        table.host(b)
        table.host(a)
        table.compactionDue(b)
        table.compactionDue(a)
        table.compactionDue(a)
        #expect(table.compactionsDue.count == 2)
        let due = table.takeDueCompactions()
        #expect(due.map(\.name) == ["a", "b"] && table.compactionsDue.isEmpty)
        a.compaction = .running
        table.compactionDue(a)
        #expect(table.compactionsDue.isEmpty, "one in flight per list")
        // A list that left meanwhile is skipped.
        table.compactionDue(b)
        table.unload(b)
        let none = table.takeDueCompactions()
        #expect(none.isEmpty)
    }

    /// Random arrivals, loads and departures over a few names, against a model of each
    /// name's phase; the counts and phases agree after every step.
    @Test func seededSimulationKeepsOneEntryPerList() {
        let seed = UInt64.random(in: 0...UInt64.max)
        print("ListSlotTests seed: \(seed)")
        var random = SeededRandom(seed: seed)
        enum Phase: Equatable { case loading(queued: Int), refused, hosted }
        var model: [String: Phase] = [:]
        var table = ListTable()
        let names = ["a", "b", "c", "d"]
        let limit = 4
        for step in 0..<5_000 {
            let name = names[Int(random.next() % UInt64(names.count))]
            switch (model[name], random.next() % 6) {
            case (nil, 0), (nil, 1):
                table.startLoading(ListLoad(name: name, startedNanoseconds: 0))
                model[name] = .loading(queued: 0)
            case (nil, 2):
                table.host(Self.host(name))
                model[name] = .hosted
            case (nil, _):
                let late = table.loadFinished(name, .absent).map { _ in true }
                #expect(late == nil)
            case (.loading(let queued), 0), (.loading(let queued), 1):
                let arrival = table.slot(name)!.requestArrived(
                    connection: step, Self.action(UInt64(step)), limit: limit)
                switch arrival {
                case .queued:
                    #expect(queued < limit)
                    model[name] = .loading(queued: queued + 1)
                case .overloaded: #expect(queued == limit)
                default: Issue.record("seed \(seed): a loading list answered \(arrival)")
                }
            case (.loading(let queued), let k):
                let result: ListSlot.LoadResult =
                    k == 2
                    ? .hosted(Self.host(name))
                    : k == 3 ? .absent : k == 4 ? .damaged(.unusable("bad")) : .failed(.unusable("io"))
                let finished = table.loadFinished(name, result)
                switch finished?.action {
                case .replay(let waiting)?: #expect(waiting.count == queued)
                case .refuse(let waiting, _)?: #expect(waiting.count == queued)
                case nil: Issue.record("seed \(seed): a load finished without its slot")
                }
                model[name] = k == 2 ? .hosted : k == 4 ? .refused : nil
            case (.refused, _):
                guard case .refused = table.slot(name)!.requestArrived(connection: step, Self.action(0), limit: limit)
                else {
                    Issue.record("seed \(seed): a refused list served")
                    return
                }
            case (.hosted, let k):
                let host = table[name]!
                if k < 2 {
                    guard
                        case .serve(let served) = table.slot(name)!.requestArrived(
                            connection: step, Self.action(0), limit: limit), served === host
                    else {
                        Issue.record("seed \(seed): a hosted list did not serve")
                        return
                    }
                } else if k == 2 {
                    let dropped = table.drop(host)
                    #expect(dropped, "an empty undeclared list is disposable")
                    model[name] = nil
                } else if k == 3 {
                    let unloaded = table.unload(host)
                    #expect(unloaded)
                    model[name] = nil
                } else if k == 4 {
                    let other = table.lose(Self.host(name))
                    #expect(!other, "seed \(seed): another host of the name was lost")
                } else {
                    let lost = table.lose(host)
                    #expect(lost)
                    model[name] = nil
                }
            }
            let hosted = model.values.filter { $0 == .hosted }.count
            let refused = model.values.filter { $0 == .refused }.count
            let loading = model.count - hosted - refused
            guard table.hostedCount == hosted, table.refusedCount == refused, table.loadingCount == loading,
                Set(table.hostedNames) == Set(model.filter { $0.value == .hosted }.keys)
            else {
                Issue.record(
                    "seed \(seed), step \(step): counts \(table.hostedCount)/\(table.refusedCount)/\(table.loadingCount), model \(model)"
                )
                return
            }
        }
    }
}
