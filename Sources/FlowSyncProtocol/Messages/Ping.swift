/// A liveness probe, sent by either side; the peer answers with a ``Pong`` carrying the
/// same nonce.
public struct Ping: Hashable, Sendable {
    /// An opaque value echoed in the Pong (a send timestamp, for round-trip times).
    public var nonce: UInt64

    /// Creates a Ping.
    public init(nonce: UInt64) { self.nonce = nonce }
}
