/// The answer to a ``Ping``.
public struct Pong: Hashable, Sendable {
    /// The Ping's nonce.
    public var nonce: UInt64

    /// Creates a Pong.
    public init(nonce: UInt64) { self.nonce = nonce }
}
