/// How long to wait before each reconnection attempt: exponential backoff with jitter.
///
/// Why jitter: when a server restarts, every client loses its connection at the same
/// instant; without jitter they would all come back in the same millisecond, again and
/// again. "Full jitter" spreads each wave over the whole interval.
public struct ReconnectPolicy: Hashable, Sendable {
    /// The delay before the first retry, in milliseconds.
    public var initialDelayMilliseconds: UInt64
    /// The largest delay, in milliseconds.
    public var maxDelayMilliseconds: UInt64
    /// The growth per failed attempt.
    public var multiplier: Double
    /// The share of each delay that is random, 0...1 (1 is "full jitter").
    public var jitter: Double
    /// Give up after this many failed attempts in a row; `nil` retries forever.
    public var maxAttempts: Int?

    /// Creates a policy; the defaults suit a mobile app (100 ms doubling to 30 s).
    public init(
        initialDelayMilliseconds: UInt64 = 100, maxDelayMilliseconds: UInt64 = 30_000,
        multiplier: Double = 2, jitter: Double = 0.5, maxAttempts: Int? = nil
    ) {
        precondition(multiplier >= 1 && (0...1).contains(jitter))
        self.initialDelayMilliseconds = initialDelayMilliseconds
        self.maxDelayMilliseconds = max(initialDelayMilliseconds, maxDelayMilliseconds)
        self.multiplier = multiplier
        self.jitter = jitter
        self.maxAttempts = maxAttempts
    }

    /// The default policy.
    public static let `default` = ReconnectPolicy()

    /// The delay before attempt `attempt` (0 for the first retry), never below
    /// `minimum` (a server's back-off request), with `unit` a random number in 0..<1.
    public func delay(attempt: Int, minimum: UInt64 = 0, unit: Double) -> UInt64 {
        let grown = Double(initialDelayMilliseconds) * pow(multiplier, Double(min(attempt, 62)))
        let capped = min(grown, Double(maxDelayMilliseconds))
        let jittered = capped * (1 - jitter) + capped * jitter * unit
        return max(UInt64(jittered.rounded()), minimum)
    }

    private func pow(_ base: Double, _ exponent: Double) -> Double {
        var result = 1.0
        var k = 0
        while Double(k) < exponent && result < 1e18 {
            result *= base
            k += 1
        }
        return result
    }
}
