import FlowSyncClient
import FlowSyncCore
import FlowSyncGatewayCore
import FlowSyncProtocol
import Foundation
import Logging
import NIOPosix

/// The I/O shell of one (hook, list) pair around the pure ``WebhookListMachine``: it
/// subscribes through a ``DaemonLink``, POSTs through ``WebhookPoster``, sleeps for
/// retries and saves the cursor, only ever because the machine said so.
///
/// Threading: one task (``run()``) owns the machine and reads one event stream; a POST, a
/// retry timer and a (re)subscription run as tasks of their own and answer with an event.
/// So a slow receiver never stalls the reading of the daemon's batches, and the machine's
/// bounded queue, not the event stream, is where batches wait: the stream only ever holds
/// what arrived since the last turn of the loop.
///
/// Stopping drains: ``stop()`` lets the POST in flight finish (bounded by the hook's
/// timeout) and saves its cursor before ``run()`` returns, so a graceful restart neither
/// redelivers nor skips. A crash redelivers the delivery it left unanswered — the same
/// body under the same key, saved before it was POSTed — and then resumes after it
/// (``WebhookListMachine`` rule 2; docs/GATEWAY.md, "Delivery guarantees").
///
/// Link generations: every subscription gets a number, and events of an older link (its
/// close, a late frame) are dropped, so an ended subscription can never start a second one.
final class WebhookListDelivery: Sendable {
    enum Event: Sendable {
        case message(Message, generation: Int)
        case linkClosed(generation: Int)
        case delivered
        case failed
        case retryDue
        /// Stop once the delivery in flight (if any) has its answer and its cursor is saved.
        case stop
    }

    /// Counters and gauges of this pair (`GET /v1/webhooks`).
    struct Status: Sendable {
        var cursor: ListVersion?
        var queued = 0
        var overflows = 0
        var delivered = 0
        var failedAttempts = 0
        var subscriptions = 0
        /// Task handles the delivery holds now (its POST, retry timer and subscription
        /// slots): at most 3 however many it started. Not in the JSON; a test reads it.
        var heldTasks = 0
    }

    let hook: WebhookConfiguration
    let list: String
    private let endpoints: [Endpoint]
    private let store: any WebhookCursorStore
    private let logger: Logger
    private let events: AsyncStream<Event>
    private let input: AsyncStream<Event>.Continuation
    private let link = Locked<(generation: Int, link: DaemonLink?)>((0, nil))
    private let statusBox = Locked(Status())

    init(hook: WebhookConfiguration, list: String, endpoints: [Endpoint], store: any WebhookCursorStore, logger: Logger)
    {
        self.hook = hook
        self.list = list
        self.endpoints = endpoints
        self.store = store
        self.logger = logger
        (events, input) = AsyncStream<Event>.makeStream()
    }

    var status: Status { statusBox.withLock { $0 } }

    /// The daemon the subscription's link is on now; nil between links. (Which node a
    /// failover must take away to test the resume: `WebhookFailoverTests`.)
    var daemonEndpoint: Endpoint? { link.withLock { $0.link?.endpoint } }

    /// Delivers until cancelled.
    func run() async {
        let progress: WebhookProgress?
        do {
            progress = try store.load(hook: hook.name, list: list)
        } catch {
            logger.error(
                "webhook cursor unreadable; not delivering",
                metadata: ["flowsync.hook": "\(hook.name)", "flowsync.list": "\(list)", "error": "\(error)"])
            return
        }
        statusBox.withLock { $0.cursor = progress?.cursor }
        var machine = WebhookListMachine(
            list: list, progress: progress, maxQueued: hook.maxQueued,
            backoff: WebhookBackoff(
                baseMilliseconds: hook.backoffBaseMilliseconds, capMilliseconds: hook.backoffCapMilliseconds,
                seed: UInt64.random(in: 0...UInt64.max)),
            refusalBackoff: .subscriptionRefusal(seed: UInt64.random(in: 0...UInt64.max)))
        let poster = WebhookPoster(hook: hook)
        var tasks = SideTasks()
        defer {
            tasks.cancelAll()
            // A new generation first: a link still being opened (DaemonLink.open does not
            // heed cancellation) then finds itself superseded and closes, instead of
            // subscribing after the stop.
            link.withLock { $0.generation += 1 }
            closeLink()
        }
        var stopping = false
        var posting = false
        let first = machine.start()
        if case .deliver = first { posting = true }
        perform(first, poster: poster, tasks: &tasks)
        for await event in events {
            let action: WebhookListMachine.Action
            switch event {
            case .stop:
                stopping = true
                if !posting { return }
                continue
            case .message, .linkClosed, .retryDue:
                if stopping { continue }  // draining: only the POST in flight matters
            case .delivered, .failed:
                break
            }
            switch event {
            case .stop:
                continue
            case .message(let message, let generation):
                guard generation == currentGeneration else { continue }
                switch message {
                case .diff(let diff) where diff.listName == list:
                    // An empty one (already current) too: it confirms the subscription (rule 6).
                    action = machine.received(WebhookBatch(diff: diff))
                case .snapshot(let snapshot) where snapshot.listName == list:
                    action = machine.received(WebhookBatch(snapshot: snapshot))
                case .error(let error) where error.listName == list || error.listName == nil:
                    logger.warning(
                        "webhook subscription refused",
                        metadata: [
                            "flowsync.hook": "\(hook.name)", "flowsync.list": "\(list)",
                            "error": "\(error.code.name): \(error.message)",
                        ])
                    // The machine ends the link and says how long to wait (its rule 6).
                    action = machine.subscriptionRefused()
                default:
                    continue
                }
            case .linkClosed(let generation):
                guard generation == currentGeneration else { continue }
                link.withLock { $0.link = nil }
                action = machine.upstreamClosed()
            case .delivered:
                posting = false
                let delivered = statusBox.withLock {
                    $0.delivered += 1
                    return $0.delivered
                }
                if delivered == Self.exitAfterDeliveries {
                    // Test hook: die like a SIGKILL between a 2xx and its save.
                    _exit(137)
                }
                action = machine.deliverySucceeded()
            case .failed:
                posting = false
                statusBox.withLock { $0.failedAttempts += 1 }
                if stopping { return }
                action = machine.deliveryFailed()
            case .retryDue:
                action = machine.retryDue()
            }
            if stopping {
                // Only the cursor of what was just delivered; nothing new starts (a
                // delivery the machine would start next is not saved as in flight).
                if case .save(let progress, _) = action {
                    perform(.save(WebhookProgress(cursor: progress.cursor), then: .none), poster: poster, tasks: &tasks)
                }
                return
            }
            if case .deliver = action { posting = true }
            if case .save(_, then: .deliver) = action { posting = true }
            perform(action, poster: poster, tasks: &tasks)
            let (queued, overflows, held) = (machine.queued, machine.overflows, tasks.handles.count)
            statusBox.withLock {
                $0.queued = queued
                $0.overflows = overflows
                $0.heldTasks = held
            }
        }
    }

    private var currentGeneration: Int { link.withLock { $0.generation } }

    /// A test hook (docs/GATEWAY.md, "Delivery guarantees"): with
    /// `FLOWSYNC_GATEWAY_TEST_EXIT_AFTER_DELIVERIES=N` in its environment, the process exits
    /// at once (status 137, as a SIGKILL) when a (hook, list) pair hears its N-th 2xx,
    /// before anything is saved — the crash window a signal hits only by luck. Unset in
    /// production; read once.
    static let exitAfterDeliveries: Int? = ProcessInfo.processInfo.environment[
        "FLOWSYNC_GATEWAY_TEST_EXIT_AFTER_DELIVERIES"
    ].flatMap { Int($0) }

    /// Carries out `action`.
    private func perform(_ action: WebhookListMachine.Action, poster: WebhookPoster, tasks: inout SideTasks) {
        switch action {
        case .none:
            break
        case .deliver(let batch, let attempt):
            let input = self.input
            tasks.post = Task {
                let ok = await poster.post(batch, attempt: attempt)
                input.yield(ok ? .delivered : .failed)
            }
        case .save(let progress, let then):
            do {
                try store.save(progress, hook: hook.name, list: list)
                statusBox.withLock { $0.cursor = progress.cursor }
            } catch {
                // Not recorded: a restart resumes from the progress saved before, which
                // redelivers (at least once) and may coalesce (docs/GATEWAY.md).
                logger.error(
                    "webhook progress not saved",
                    metadata: ["flowsync.hook": "\(hook.name)", "flowsync.list": "\(list)", "error": "\(error)"])
            }
            perform(then, poster: poster, tasks: &tasks)
        case .retry(let milliseconds):
            let input = self.input
            tasks.retryTimer = Task {
                try? await Task.sleep(for: .milliseconds(Int64(milliseconds)))
                input.yield(.retryDue)
            }
        case .unsubscribe:
            // Ending the subscription is closing its link: the link carries nothing else.
            closeLink()
        case .resubscribe(let from, let pause):
            resubscribe(from: from, after: Int(pause), tasks: &tasks)
        }
    }

    /// Opens a new link (a new generation) after `delayMilliseconds` and subscribes from
    /// `from`; if no daemon answers, reports the link closed after a pause, and the machine
    /// asks again. A newer subscription or a stop during the delay ends this one unopened.
    private func resubscribe(from: ListVersion?, after delayMilliseconds: Int, tasks: inout SideTasks) {
        let generation: Int = link.withLock { state in
            state.link?.close()
            state.link = nil
            state.generation += 1
            return state.generation
        }
        statusBox.withLock { $0.subscriptions += 1 }
        let input = self.input
        let options = DaemonLink.Options(
            endpoints: endpoints, token: hook.token, clientID: "hook-\(hook.name)-\(UInt32.random(in: 0...UInt32.max))")
        let list = self.list
        let linkBox = self.link
        tasks.subscription?.cancel()  // superseded: a pause ends, an open in progress is dropped by generation
        tasks.subscription = Task {
            if delayMilliseconds > 0 {
                try? await Task.sleep(for: .milliseconds(delayMilliseconds))
                guard !Task.isCancelled, linkBox.withLock({ $0.generation }) == generation else { return }
            }
            do {
                let opened = try await DaemonLink.open(
                    options, eventLoop: MultiThreadedEventLoopGroup.singleton.next())
                let current = linkBox.withLock { state -> Bool in
                    guard state.generation == generation else { return false }
                    state.link = opened
                    return true
                }
                guard current else {
                    opened.close()
                    return
                }
                opened.setMessageHandler { input.yield(.message($0, generation: generation)) }
                opened.setCloseHandler { _ in input.yield(.linkClosed(generation: generation)) }
                opened.send(.subscribe(Subscribe(listName: list, resumeFrom: from)))
            } catch {
                try? await Task.sleep(for: .milliseconds(500))  // the daemon is away: do not spin
                input.yield(.linkClosed(generation: generation))
            }
        }
    }

    private func closeLink() {
        let old = link.withLock { state -> DaemonLink? in
            defer { state.link = nil }
            return state.link
        }
        old?.close()
    }

    /// Ends ``run()`` after the POST in flight, if any, is answered and recorded.
    func stop() {
        input.yield(.stop)
    }
}

/// The tasks a delivery runs beside its loop, one slot each. At most one POST, one retry
/// timer and one subscription matter at a time, so a new one replaces the old handle, and
/// the handles do not pile up: an array of every task started grew by one per POST for the
/// gateway's whole life.
private struct SideTasks {
    var post: Task<Void, Never>?
    var retryTimer: Task<Void, Never>?
    var subscription: Task<Void, Never>?

    /// Every handle held (the gauge ``WebhookListDelivery/Status/heldTasks``).
    var handles: [Task<Void, Never>] { [post, retryTimer, subscription].compactMap { $0 } }

    func cancelAll() {
        for task in handles { task.cancel() }
    }
}
