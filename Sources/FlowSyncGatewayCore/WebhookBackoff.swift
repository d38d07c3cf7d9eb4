import FlowSyncCore

/// Retry delays of a failing webhook receiver: exponential from `base` to `cap`, with
/// "equal jitter" (half the step fixed, half random), so many hooks that failed together
/// do not retry together. Seeded: a test replays the same delays.
public struct WebhookBackoff: Sendable {
    public let baseMilliseconds: UInt64
    public let capMilliseconds: UInt64
    private var random: SplitMix64

    public init(baseMilliseconds: UInt64 = 100, capMilliseconds: UInt64 = 30_000, seed: UInt64) {
        precondition(
            baseMilliseconds > 0 && capMilliseconds >= baseMilliseconds,
            "Internal inconsistency in WebhookBackoff: bad bounds")
        self.baseMilliseconds = baseMilliseconds
        self.capMilliseconds = capMilliseconds
        random = SplitMix64(seed: seed)
    }

    /// The pauses before a webhook subscribes again after the daemon refused its
    /// Subscribe (``WebhookListMachine`` rule 6): 0.5 s doubling to 30 s. Longer than a
    /// delivery's first retry because a refusal (forbidden, no such list, draining) seldom
    /// clears within milliseconds, and each attempt costs the daemon a connect and a Hello.
    public static func subscriptionRefusal(seed: UInt64) -> WebhookBackoff {
        WebhookBackoff(baseMilliseconds: 500, capMilliseconds: 30_000, seed: seed)
    }

    /// The wait before attempt `attempt + 1`, after `attempt` failures (1…).
    /// - Returns: a delay in `[step/2, step]`, where `step = min(cap, base · 2^(attempt−1))`.
    public mutating func delay(afterFailures attempt: Int) -> UInt64 {
        let shift = UInt64(min(max(attempt - 1, 0), 30))
        let step = min(capMilliseconds, baseMilliseconds << shift)
        let half = step / 2
        return half + random.next() % (step - half + 1)
    }
}
