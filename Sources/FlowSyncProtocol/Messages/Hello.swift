/// The client's first message: which protocol versions it speaks, who it is, and its
/// credentials. The server answers with a ``Welcome`` or an ``ErrorMessage`` and a close.
public struct Hello: Hashable, Sendable {
    /// The lowest protocol version the client speaks.
    public var minVersion: UInt16
    /// The highest protocol version the client speaks.
    public var maxVersion: UInt16
    /// A free-form client name for logs and stats (`"ios-app/2.3"`).
    public var clientName: String
    /// A stable client identity, kept across reconnects, that makes writes idempotent:
    /// the server remembers the last `(clientID, seq)` it committed per list.
    public var clientID: String
    /// An opaque bearer token (a JWT, for example), or `nil` when the client has none.
    public var authToken: String?

    /// Creates a Hello; the version range defaults to what this build speaks.
    public init(
        minVersion: UInt16 = ProtocolVersion.minimum,
        maxVersion: UInt16 = ProtocolVersion.current,
        clientName: String,
        clientID: String,
        authToken: String? = nil
    ) {
        self.minVersion = minVersion
        self.maxVersion = maxVersion
        self.clientName = clientName
        self.clientID = clientID
        self.authToken = authToken
    }
}
