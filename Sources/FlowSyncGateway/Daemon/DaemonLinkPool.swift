import FlowSyncClient
import FlowSyncGatewayCore
import NIOCore
import NIOPosix

/// The gateway's pool of ready daemon links for the request/response routes (GET a list,
/// an un-keyed POST), keyed by the credential passed through (the bearer token, or
/// none). Every decision (which link, whether to open, wait, close or expire one) is
/// ``LinkPoolStateMachine``'s; this shell opens and closes ``DaemonLink``s, keeps the
/// waiting requests' continuations, reads the clock and runs the timers.
///
/// Rules of the shell:
/// 1. The machine and the continuations change together under one lock; the actions
///    are carried out after it is released (opening and closing a link never runs under
///    it).
/// 2. A request that checks a link out checks it in exactly once: ``withLink(token:_:)``
///    does it on every path, and says `.failed` unless the body says the link is clean.
/// 3. A link handed over is checked for `isOpen` first: one that closed in between is
///    checked in as failed and the request asks again (at most a few times).
/// 4. A link's own close (the daemon restarted) reaches the machine through the pool's
///    close handler, which a request's handler does not replace.
///
/// Lifetime: the idle sweep runs every half idle period (at least 100 ms) from init;
/// ``shutDown()`` closes idle links, fails waiters and stops the sweep.
final class DaemonLinkPool: Sendable {
    typealias Machine = LinkPoolStateMachine<String?, DaemonLink>

    /// What the body of ``withLink(token:_:)`` says of the link after using it.
    typealias Outcome = Machine.Outcome

    private enum Grant {
        case use(id: Int, link: DaemonLink)
        case open(id: Int)
        case fail
    }

    private struct State {
        var machine: Machine
        var waiting: [Int: CheckedContinuation<Grant, Never>] = [:]
        var nextRequest = 1
    }

    let endpoints: [Endpoint]
    let timeoutMilliseconds: Int
    private let state: Locked<State>
    private let sweep = Locked<RepeatedTask?>(nil)

    init(endpoints: [Endpoint], limits: LinkPoolLimits, timeoutMilliseconds: Int) {
        self.endpoints = endpoints
        self.timeoutMilliseconds = timeoutMilliseconds
        self.state = Locked(State(machine: Machine(limits: limits)))
        let period = Int64(max(100, limits.idleMilliseconds / 2))
        let task = MultiThreadedEventLoopGroup.singleton.next().scheduleRepeatedTask(
            initialDelay: .milliseconds(period), delay: .milliseconds(period)
        ) { [weak self] _ in
            guard let self else { return }
            self.perform(self.state.withLock { $0.machine.expireIdle(now: Self.now()) })
        }
        sweep.withLock { $0 = task }
    }

    deinit {
        sweep.withLock { $0?.cancel() }
    }

    /// Milliseconds on a monotonic clock.
    static func now() -> UInt64 { NIODeadline.now().uptimeNanoseconds / 1_000_000 }

    /// Links held now (opening, busy or idle), idle links, and waiting requests.
    var counts: (links: Int, idle: Int, waiting: Int) {
        state.withLock { ($0.machine.linkCount, $0.machine.idleCount, $0.machine.waiterCount) }
    }

    /// Runs `body` with a ready link of `token`'s, from the pool or newly opened, and
    /// checks it in with the outcome `body` returns (rule 2).
    /// - Throws: ``LinkError`` when no link could be had: the daemon refused or could not
    ///   be reached, or none was free within the daemon timeout.
    func withLink<T>(
        token: String?, _ body: (DaemonLink) async -> (T, Outcome)
    ) async throws(LinkError) -> T {
        let (id, link) = try await checkout(token: token)
        let (result, outcome) = await body(link)
        checkin(id, link: link, outcome: outcome)
        return result
    }

    /// Checks in link `id` (after ``withLink(token:_:)``'s body handed it on, e.g. to a
    /// task that drains it first).
    func checkin(_ id: Int, link: DaemonLink, outcome: Outcome) {
        link.setMessageHandler(nil)
        link.removeCloseHandler()
        let outcome: Outcome = link.isOpen ? outcome : .failed
        perform(state.withLock { $0.machine.checkin(id, link: link, outcome: outcome, now: Self.now()) })
    }

    /// A ready link for `token` and its number in the pool.
    func checkout(token: String?) async throws(LinkError) -> (id: Int, link: DaemonLink) {
        for _ in 0..<4 {
            switch await grant(token: token) {
            case .fail:
                throw .timeout("no daemon link free within \(timeoutMilliseconds) ms")
            case .use(let id, let link):
                guard link.isOpen else {
                    checkin(id, link: link, outcome: .failed)  // rule 3
                    continue
                }
                return (id, link)
            case .open(let id):
                let link: DaemonLink
                do {
                    link = try await DaemonLink.open(
                        DaemonLink.Options(
                            endpoints: endpoints, token: token, clientID: GatewayRoutes.randomClientID(),
                            timeoutMilliseconds: timeoutMilliseconds),
                        eventLoop: MultiThreadedEventLoopGroup.singleton.next())
                } catch {
                    perform(state.withLock { $0.machine.openFailed(id) })
                    throw error
                }
                state.withLock { $0.machine.opened(id) }
                link.setPoolCloseHandler { [weak self] in
                    guard let self else { return }
                    self.perform(self.state.withLock { $0.machine.linkClosed(id) })
                }
                return (id, link)
            }
        }
        throw .unavailable("the daemon closed every pooled link handed over")
    }

    /// Closes idle links and fails waiters; links checked in later are closed.
    func shutDown() {
        sweep.withLock {
            $0?.cancel()
            $0 = nil
        }
        perform(state.withLock { $0.machine.shutDown() })
    }

    private func grant(token: String?) async -> Grant {
        let timeout = Int64(timeoutMilliseconds)
        return await withCheckedContinuation { (continuation: CheckedContinuation<Grant, Never>) in
            let (request, actions) = state.withLock { state -> (Int, [Machine.Action]) in
                let request = state.nextRequest
                state.nextRequest += 1
                state.waiting[request] = continuation
                return (request, state.machine.checkout(request: request, credential: token, now: Self.now()))
            }
            let waits = actions.isEmpty
            perform(actions)
            if waits {
                MultiThreadedEventLoopGroup.singleton.next().scheduleTask(in: .milliseconds(timeout)) { [self] in
                    perform(state.withLock { $0.machine.waitExpired(request) })
                }
            }
        }
    }

    /// Carries out the machine's actions (rule 1: called without the lock).
    private func perform(_ actions: [Machine.Action]) {
        for action in actions {
            switch action {
            case .use(let request, let id, let link):
                resume(request, with: .use(id: id, link: link))
            case .open(let request, let id):
                resume(request, with: .open(id: id))
            case .fail(let request):
                resume(request, with: .fail)
            case .close(let link):
                link.close()
            }
        }
    }

    private func resume(_ request: Int, with grant: Grant) {
        let continuation = state.withLock { $0.waiting.removeValue(forKey: request) }
        guard let continuation else {
            preconditionFailure("Internal inconsistency in DaemonLinkPool: request \(request) granted twice")
        }
        continuation.resume(returning: grant)
    }
}
