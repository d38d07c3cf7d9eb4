/// The server's answer to a successful ``Hello``: the chosen version, the limits, the
/// heartbeat and the preset compression dictionary. After it, both sides are in the
/// *ready* state and may send compressed frames.
public struct Welcome: Hashable, Sendable {
    /// The protocol version chosen: the highest both sides speak.
    public var version: UInt16
    /// A free-form server name and version for logs (`"flowsyncd/0.3"`).
    public var serverName: String
    /// The limits the server enforces from now on.
    public var limits: ServerLimits
    /// The server pings an idle connection after this long and closes it after twice as
    /// long without any frame; a client should send something at least this often.
    public var heartbeatMilliseconds: UInt32
    /// The preset deflate dictionary both sides use from now on for compressed frames
    /// (empty: no dictionary). See `docs/PROTOCOL.md`, "Compression".
    public var dictionary: [UInt8]

    /// Creates a Welcome.
    public init(
        version: UInt16 = ProtocolVersion.current,
        serverName: String,
        limits: ServerLimits = ServerLimits(),
        heartbeatMilliseconds: UInt32 = 15_000,
        dictionary: [UInt8] = []
    ) {
        self.version = version
        self.serverName = serverName
        self.limits = limits
        self.heartbeatMilliseconds = heartbeatMilliseconds
        self.dictionary = dictionary
    }
}
