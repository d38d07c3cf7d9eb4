/// A server announcement about its own lifecycle, sent to every connection.
public struct Notice: Hashable, Sendable {
    /// What is happening.
    public enum Kind: UInt8, Hashable, Sendable, CaseIterable {
        /// The server is draining: reconnect (possibly to another server) within the
        /// delay; it will close this connection afterwards.
        case draining = 1
        /// The server is shutting down: it closes the connection soon; reconnect after
        /// the delay.
        case shuttingDown = 2
    }

    /// What is happening.
    public var kind: Kind
    /// A human-readable detail.
    public var message: String
    /// For ``Kind/draining``: reconnect within this delay; for ``Kind/shuttingDown``:
    /// wait this long before reconnecting. Clients add jitter.
    public var delayMilliseconds: UInt32

    /// Creates a Notice.
    public init(kind: Kind, message: String, delayMilliseconds: UInt32) {
        self.kind = kind
        self.message = message
        self.delayMilliseconds = delayMilliseconds
    }
}
