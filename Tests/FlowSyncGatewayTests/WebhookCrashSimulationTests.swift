import FlowSyncCore
import FlowSyncGatewayCore
import Testing

/// Issue #31: "duplicates only carry the same version", across gateway crashes. A seeded
/// simulation of one (hook, list) pair: a daemon whose head grows and whose resume answers
/// with one coalesced catch-up, a receiver that fails at random, and crashes at any step —
/// including after the receiver took a POST and before the gateway heard its 2xx. After a
/// crash only what the machine saved survives, and a new machine starts from it.
///
/// The receiver's log must hold, for every key, one body; versions in order; each
/// delivery (but a snapshot) starting where the one before ended; and everything up to
/// the head at the end. Before the delivery in flight was saved (``WebhookProgress``), a
/// crash after a 2xx resumed from the older cursor and the catch-up started behind what
/// the receiver had: this simulation found that within the first seeds.
@Suite(.timeLimit(.minutes(1))) struct WebhookCrashSimulationTests {
    /// The daemon's answer for the change between two versions (a body that says which).
    static func diff(_ from: UInt64, _ to: UInt64) -> WebhookBatch {
        WebhookBatch(
            list: "l", kind: to == from + 1 ? .batch : .catchUp, from: ListVersion(epoch: 1, version: from),
            to: ListVersion(epoch: 1, version: to), body: Array("\(from)→\(to)".utf8))
    }

    @Test func crashesAnywhereLeaveOneBodyPerKeyAndNoGap() {
        for seed in UInt64(1)...300 {
            var random = SplitMix64(seed: seed)
            var saved: WebhookProgress? = WebhookProgress(cursor: ListVersion(epoch: 1, version: 0))
            var machine = WebhookListMachine(
                list: "l", progress: saved, maxQueued: 3, backoff: WebhookBackoff(seed: seed),
                refusalBackoff: .subscriptionRefusal(seed: seed))
            var head: UInt64 = 0
            var subscribed = false
            var inFlight: WebhookBatch?
            var retryPending = false
            var log: [WebhookBatch] = []  // what the receiver accepted, in order
            var crashes = 0

            func run(_ action: WebhookListMachine.Action) {
                switch action {
                case .none: break
                case .deliver(let batch, _): inFlight = batch
                case .save(let progress, let then):
                    saved = progress
                    run(then)
                case .retry: retryPending = true
                case .unsubscribe: subscribed = false
                case .resubscribe(let from, _):
                    subscribed = true
                    let at = from?.version ?? 0
                    if head > at { run(machine.received(Self.diff(at, head))) }
                }
            }
            run(machine.start())
            for _ in 0..<300 {
                switch random.next() % 8 {
                case 0, 1, 2:
                    head += 1
                    if subscribed { run(machine.received(Self.diff(head - 1, head))) }
                case 3, 4:
                    guard let batch = inFlight, !retryPending else { break }
                    switch random.next() % 4 {
                    case 0:
                        run(machine.deliveryFailed())
                    case 1:
                        // The receiver took it; the gateway dies before it hears the 2xx.
                        log.append(batch)
                        inFlight = nil
                        crash()
                    default:
                        log.append(batch)
                        inFlight = nil
                        run(machine.deliverySucceeded())
                    }
                case 5:
                    if retryPending {
                        retryPending = false
                        run(machine.retryDue())
                    }
                case 6:
                    if random.next() % 6 == 0 { crash() }
                default:
                    if random.next() % 8 == 0, subscribed { run(machine.upstreamClosed()) }
                }
            }
            func crash() {
                crashes += 1
                inFlight = nil
                retryPending = false
                subscribed = false
                machine = WebhookListMachine(
                    list: "l", progress: saved, maxQueued: 3, backoff: WebhookBackoff(seed: seed),
                    refusalBackoff: .subscriptionRefusal(seed: seed))
                run(machine.start())
            }
            // The receiver recovers and the gateway stays up.
            for _ in 0..<1_000 {
                if retryPending {
                    retryPending = false
                    run(machine.retryDue())
                }
                guard let batch = inFlight else { break }
                log.append(batch)
                inFlight = nil
                run(machine.deliverySucceeded())
            }

            var bodies: [ListVersion: [UInt8]] = [:]
            var previous: WebhookBatch?
            for batch in log {
                #expect(
                    bodies[batch.to, default: batch.body] == batch.body,
                    "seed \(seed): key \(batch.to) with two bodies")
                bodies[batch.to] = batch.body
                if let p = previous, p.to == batch.to { continue }  // a duplicate: the same delivery
                if let p = previous {
                    #expect(p.to.version < batch.to.version, "seed \(seed): \(batch.to) after \(p.to)")
                    #expect(batch.from == p.to, "seed \(seed): \(batch.from.map(\.description) ?? "-") after \(p.to)")
                }
                previous = batch
            }
            #expect(
                head == 0 || log.last?.to.version == head,
                "seed \(seed): reached \(log.last.map(\.to.description) ?? "nothing") of \(head), \(crashes) crashes")
        }
    }
}
