import FlowSyncCore
import FlowSyncGatewayCore
import Testing

/// The daemon-link pool, event by event, with no socket and no clock: credentials are
/// tokens (nil: none), links are names the test gives when the machine asks to open one.
@Suite(.timeLimit(.minutes(2))) struct LinkPoolStateMachineTests {
    typealias Machine = LinkPoolStateMachine<String?, String>

    /// What the actions said, in a comparable form.
    enum Did: Equatable {
        case use(Int, link: String)
        case open(Int, id: Int)
        case close(String)
        case fail(Int)
    }

    static func did(_ actions: [Machine.Action]) -> [Did] {
        actions.map {
            switch $0 {
            case .use(let request, _, let link): return .use(request, link: link)
            case .open(let request, let id): return .open(request, id: id)
            case .close(let link): return .close(link)
            case .fail(let request): return .fail(request)
            }
        }
    }

    static func openedID(_ actions: [Machine.Action]) -> Int? {
        for case .open(_, let id) in actions { return id }
        return nil
    }

    static func usedID(_ actions: [Machine.Action]) -> Int? {
        for case .use(_, let id, _) in actions { return id }
        return nil
    }

    @Test func aCheckedInLinkIsReusedByTheSameCredentialOnly() {
        var m = Machine(limits: LinkPoolLimits(maxPerCredential: 4, maxTotal: 8, idleMilliseconds: 1_000))
        let first = m.checkout(request: 1, credential: "A", now: 0)
        #expect(Self.did(first) == [.open(1, id: 1)])
        m.opened(1)
        #expect(m.checkin(1, link: "a1", outcome: .clean, now: 10).isEmpty)
        #expect(m.idleCount == 1)
        // Another credential does not get A's link (rule 1).
        #expect(Self.did(m.checkout(request: 2, credential: "B", now: 20)) == [.open(2, id: 2)])
        #expect(Self.did(m.checkout(request: 3, credential: nil, now: 20)) == [.open(3, id: 3)])
        // A does.
        #expect(Self.did(m.checkout(request: 4, credential: "A", now: 30)) == [.use(4, link: "a1")])
        #expect(m.linkCount == 3 && m.idleCount == 0)
        m.checkInvariants()
    }

    @Test func theMostRecentlyUsedIdleLinkIsTakenSoTheOthersExpire() {
        var m = Machine(limits: LinkPoolLimits(maxPerCredential: 4, maxTotal: 8, idleMilliseconds: 1_000))
        _ = m.checkout(request: 1, credential: "A", now: 0)
        _ = m.checkout(request: 2, credential: "A", now: 0)
        m.opened(1)
        m.opened(2)
        _ = m.checkin(1, link: "old", outcome: .clean, now: 100)
        _ = m.checkin(2, link: "new", outcome: .clean, now: 200)
        #expect(Self.did(m.checkout(request: 3, credential: "A", now: 300)) == [.use(3, link: "new")])
        _ = m.checkin(2, link: "new", outcome: .clean, now: 400)
        // At 1,100 "old" has been idle 1,000 ms; "new" 700 ms.
        #expect(Self.did(m.expireIdle(now: 1_100)) == [.close("old")])
        #expect(m.linkCount == 1)
        #expect(Self.did(m.expireIdle(now: 1_399)) == [])
        #expect(Self.did(m.expireIdle(now: 1_400)) == [.close("new")])
        #expect(m.linkCount == 0)
        m.checkInvariants()
    }

    @Test func aFailedLinkIsClosedAndNeverReused() {
        var m = Machine()
        _ = m.checkout(request: 1, credential: "A", now: 0)
        m.opened(1)
        #expect(Self.did(m.checkin(1, link: "a1", outcome: .failed, now: 5)) == [.close("a1")])
        #expect(m.linkCount == 0)
        #expect(Self.did(m.checkout(request: 2, credential: "A", now: 6)) == [.open(2, id: 2)])
        m.checkInvariants()
    }

    @Test func anIdleLinkThatClosesIsForgottenAndABusyOneIsLeftToItsRequest() {
        var m = Machine()
        _ = m.checkout(request: 1, credential: "A", now: 0)
        _ = m.checkout(request: 2, credential: "A", now: 0)
        m.opened(1)
        m.opened(2)
        _ = m.checkin(1, link: "a1", outcome: .clean, now: 1)
        #expect(Self.did(m.linkClosed(1)) == [.close("a1")])
        #expect(Self.did(m.linkClosed(2)) == [])  // busy: request 2 checks it in as failed
        #expect(Self.did(m.linkClosed(99)) == [])
        #expect(m.linkCount == 1)
        #expect(Self.did(m.checkin(2, link: "a2", outcome: .failed, now: 2)) == [.close("a2")])
        #expect(m.linkCount == 0)
        m.checkInvariants()
    }

    @Test func thePerCredentialLimitMakesRequestsWaitForACheckin() {
        var m = Machine(limits: LinkPoolLimits(maxPerCredential: 2, maxTotal: 8, idleMilliseconds: 1_000))
        _ = m.checkout(request: 1, credential: "A", now: 0)
        _ = m.checkout(request: 2, credential: "A", now: 0)
        m.opened(1)
        m.opened(2)
        #expect(m.checkout(request: 3, credential: "A", now: 0).isEmpty)
        #expect(m.checkout(request: 4, credential: "A", now: 0).isEmpty)
        // Other credentials are not held back by A's limit.
        #expect(Self.did(m.checkout(request: 5, credential: "B", now: 0)) == [.open(5, id: 3)])
        #expect(m.waiterCount == 2 && m.linkCount(for: "A") == 2)
        m.checkInvariants()
        // A checked-in link goes straight to the oldest waiter of A (rule 5).
        #expect(Self.did(m.checkin(2, link: "a2", outcome: .clean, now: 10)) == [.use(3, link: "a2")])
        // A failed one frees a slot: the next waiter opens a new link.
        #expect(Self.did(m.checkin(1, link: "a1", outcome: .failed, now: 11)) == [.close("a1"), .open(4, id: 4)])
        #expect(m.waiterCount == 0)
        m.checkInvariants()
    }

    @Test func theTotalLimitClosesAnotherCredentialsIdleLinkOrWaits() {
        var m = Machine(limits: LinkPoolLimits(maxPerCredential: 4, maxTotal: 2, idleMilliseconds: 1_000))
        _ = m.checkout(request: 1, credential: "A", now: 0)
        _ = m.checkout(request: 2, credential: "B", now: 0)
        m.opened(1)
        m.opened(2)
        _ = m.checkin(1, link: "a1", outcome: .clean, now: 5)
        // Full: C takes A's idle slot (the least recently used idle link).
        #expect(Self.did(m.checkout(request: 3, credential: "C", now: 6)) == [.close("a1"), .open(3, id: 3)])
        m.opened(3)
        // Full and nothing idle: D waits.
        #expect(m.checkout(request: 4, credential: "D", now: 7).isEmpty)
        m.checkInvariants()
        // B's checked-in link is the only idle one: D closes it and opens its own.
        #expect(Self.did(m.checkin(2, link: "b1", outcome: .clean, now: 8)) == [.close("b1"), .open(4, id: 4)])
        #expect(m.linkCount == 2 && m.waiterCount == 0)
        m.checkInvariants()
    }

    @Test func anOpenThatFailsFreesItsSlotForAWaiter() {
        var m = Machine(limits: LinkPoolLimits(maxPerCredential: 1, maxTotal: 8, idleMilliseconds: 1_000))
        let opening = m.checkout(request: 1, credential: "A", now: 0)
        // Rule 3: the link counts while it is being opened.
        #expect(m.checkout(request: 2, credential: "A", now: 0).isEmpty)
        #expect(Self.did(m.openFailed(Self.openedID(opening)!)) == [.open(2, id: 2)])
        m.checkInvariants()
    }

    @Test func aWaiterWhoseDeadlinePassesFailsOnceAndIsNotServedLater() {
        var m = Machine(limits: LinkPoolLimits(maxPerCredential: 1, maxTotal: 8, idleMilliseconds: 1_000))
        _ = m.checkout(request: 1, credential: "A", now: 0)
        m.opened(1)
        #expect(m.checkout(request: 2, credential: "A", now: 0).isEmpty)
        #expect(Self.did(m.waitExpired(2)) == [.fail(2)])
        #expect(Self.did(m.waitExpired(2)) == [])
        #expect(Self.did(m.checkin(1, link: "a1", outcome: .clean, now: 3)) == [])
        #expect(m.idleCount == 1)
        // An expiry that comes after the waiter was served does nothing.
        #expect(m.checkout(request: 3, credential: "A", now: 4).count == 1)
        #expect(Self.did(m.waitExpired(3)) == [])
        m.checkInvariants()
    }

    @Test func shutDownClosesIdleLinksFailsWaitersAndClosesLaterCheckins() {
        var m = Machine(limits: LinkPoolLimits(maxPerCredential: 1, maxTotal: 8, idleMilliseconds: 1_000))
        _ = m.checkout(request: 1, credential: "A", now: 0)
        _ = m.checkout(request: 2, credential: "B", now: 0)
        m.opened(1)
        m.opened(2)
        _ = m.checkin(2, link: "b1", outcome: .clean, now: 1)
        #expect(m.checkout(request: 3, credential: "A", now: 1).isEmpty)
        #expect(Self.did(m.shutDown()) == [.fail(3), .close("b1")])
        #expect(Self.did(m.checkin(1, link: "a1", outcome: .clean, now: 2)) == [.close("a1")])
        #expect(Self.did(m.checkout(request: 4, credential: "A", now: 3)) == [.fail(4)])
        #expect(m.linkCount == 0)
    }

    /// Seeded random events against the invariants and a ledger of who holds what:
    /// a link is never held by two requests, never crosses credentials, limits hold, and
    /// every request ends served or failed exactly once.
    @Test(arguments: [1, 2, 3, 42, 1_234])
    func randomEventsKeepTheLimitsAndNeverShareALink(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        let limits = LinkPoolLimits(maxPerCredential: 3, maxTotal: 5, idleMilliseconds: 50)
        var m = Machine(limits: limits)
        let credentials: [String?] = [nil, "A", "B", "C"]
        var credentialOf: [Int: String?] = [:]  // request → credential
        var waiting = Set<Int>()
        var opening: [Int: Int] = [:]  // link id → request
        var holding: [Int: (id: Int, link: String)] = [:]  // request → link
        var linkCredential: [String: String?] = [:]
        var closed = Set<String>()
        var nextRequest = 1
        var nextLink = 1
        var now: UInt64 = 0

        func carryOut(_ actions: [Machine.Action]) {
            for action in actions {
                switch action {
                case .use(let request, let id, let link):
                    #expect(waiting.contains(request), "seed \(seed): a link went to a request that was not waiting")
                    #expect(!closed.contains(link), "seed \(seed): a closed link was handed out")
                    #expect(linkCredential[link] == credentialOf[request], "seed \(seed): a link crossed credentials")
                    #expect(!holding.values.contains { $0.link == link }, "seed \(seed): a link held twice")
                    waiting.remove(request)
                    holding[request] = (id, link)
                case .open(let request, let id):
                    waiting.remove(request)
                    opening[id] = request
                case .close(let link):
                    #expect(closed.insert(link).inserted, "seed \(seed): closed twice")
                    #expect(!holding.values.contains { $0.link == link }, "seed \(seed): a held link was closed")
                case .fail(let request):
                    #expect(waiting.remove(request) != nil, "seed \(seed): a request failed that was not waiting")
                }
            }
        }

        for _ in 0..<5_000 {
            now += random.next() % 20
            switch random.next() % 7 {
            case 0, 1:
                let request = nextRequest
                nextRequest += 1
                let credential = credentials[Int(random.next() % 4)]
                credentialOf[request] = credential
                waiting.insert(request)
                carryOut(m.checkout(request: request, credential: credential, now: now))
            case 2:
                guard let (id, request) = opening.min(by: { $0.key < $1.key }) else { continue }
                opening[id] = nil
                if random.next() % 5 == 0 {
                    carryOut(m.openFailed(id))
                } else {
                    m.opened(id)
                    let link = "L\(nextLink)"
                    nextLink += 1
                    linkCredential[link] = credentialOf[request]!
                    holding[request] = (id, link)
                }
            case 3, 4:
                guard let (request, held) = holding.min(by: { $0.key < $1.key }) else { continue }
                holding[request] = nil
                carryOut(
                    m.checkin(held.id, link: held.link, outcome: random.next() % 4 == 0 ? .failed : .clean, now: now))
            case 5:
                guard let request = waiting.sorted().randomElement(using: &random) else { continue }
                carryOut(m.waitExpired(request))
            default:
                carryOut(m.expireIdle(now: now))
            }
            m.checkInvariants()
            #expect(m.linkCount <= limits.maxTotal)
            #expect(m.waiterCount == waiting.count, "seed \(seed): waiters drifted")
        }
    }
}
