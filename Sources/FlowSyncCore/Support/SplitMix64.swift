/// A small, fast, seedable generator (SplitMix64, Steele, Lea and Flood 2014): the one
/// seeded generator of FlowSync. Property tests and simulations print its seed so a
/// failure replays exactly; the load tester's operations and the SDK's reconnect jitter
/// come from it too. Not cryptographic.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    @usableFromInline var state: UInt64

    /// The seed this generator started from.
    public let seed: UInt64

    /// A generator whose sequence is fixed by `seed`.
    public init(seed: UInt64) {
        self.seed = seed
        self.state = seed
    }

    /// The next 64 random bits. Inlinable: generators in other modules' hot loops (the
    /// load tester's operations) pay no call.
    @inlinable
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A uniformly random integer in `range`.
    public mutating func int(_ range: Range<Int>) -> Int { Int.random(in: range, using: &self) }
    /// A uniformly random integer in `range`.
    public mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &self) }
    /// True with probability `p`.
    public mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &self) < p }
    /// A uniform number in 0..<1 from the next 53 bits (the SDK's reconnect jitter).
    public mutating func nextUnit() -> Double { Double(next() >> 11) / Double(1 << 53) }
}
