/// The limits a server enforces on a connection after the handshake, sent in the
/// ``Welcome`` so a client can size its writes instead of discovering limits by being
/// disconnected. All sizes are bytes.
public struct ServerLimits: Hashable, Sendable {
    /// Largest frame the server accepts (the length prefix's value).
    public var maxFrameBytes: UInt32
    /// Largest body a compressed client frame may inflate to.
    public var maxInflatedBytes: UInt32
    /// Most operations in one ``Mutate``.
    public var maxOpsPerMutation: UInt32
    /// Most lists one connection may subscribe to.
    public var maxListsPerConnection: UInt32
    /// Longest list name, in UTF-8 bytes.
    public var maxListNameBytes: UInt32
    /// Longest section or row ID, in UTF-8 bytes.
    public var maxIDBytes: UInt32
    /// Largest row payload, header or footer.
    public var maxPayloadBytes: UInt32

    /// Creates limits; the defaults match ``DecoderLimits/server`` and `DirectorLimits.default`.
    public init(
        maxFrameBytes: UInt32 = 4 * 1024 * 1024,
        maxInflatedBytes: UInt32 = 16 * 1024 * 1024,
        maxOpsPerMutation: UInt32 = 1_000,
        maxListsPerConnection: UInt32 = 64,
        maxListNameBytes: UInt32 = 256,
        maxIDBytes: UInt32 = 256,
        maxPayloadBytes: UInt32 = 64 * 1024
    ) {
        self.maxFrameBytes = maxFrameBytes
        self.maxInflatedBytes = maxInflatedBytes
        self.maxOpsPerMutation = maxOpsPerMutation
        self.maxListsPerConnection = maxListsPerConnection
        self.maxListNameBytes = maxListNameBytes
        self.maxIDBytes = maxIDBytes
        self.maxPayloadBytes = maxPayloadBytes
    }
}
