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

    /// Creates limits; the defaults are read from ``DecoderLimits/server`` (which reads
    /// `DirectorLimits.default`), except ``maxListsPerConnection``, stated here.
    public init(
        maxFrameBytes: UInt32 = UInt32(DecoderLimits.server.maxFrameBytes),
        maxInflatedBytes: UInt32 = UInt32(DecoderLimits.server.maxInflatedBytes),
        maxOpsPerMutation: UInt32 = UInt32(DecoderLimits.server.maxOpsPerMutation),
        maxListsPerConnection: UInt32 = 64,
        maxListNameBytes: UInt32 = UInt32(DecoderLimits.server.maxListNameBytes),
        maxIDBytes: UInt32 = UInt32(DecoderLimits.server.maxIDBytes),
        maxPayloadBytes: UInt32 = UInt32(DecoderLimits.server.maxPayloadBytes)
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

extension ServerLimits {
    /// The limits a server announces for what its decoder enforces after the handshake
    /// (`decoderLimits`), so the two cannot disagree; values past `UInt32.max` are clamped.
    public init(decoderLimits: DecoderLimits, maxListsPerConnection: Int) {
        self.init(
            maxFrameBytes: UInt32(clamping: decoderLimits.maxFrameBytes),
            maxInflatedBytes: UInt32(clamping: decoderLimits.maxInflatedBytes),
            maxOpsPerMutation: UInt32(clamping: decoderLimits.maxOpsPerMutation),
            maxListsPerConnection: UInt32(clamping: maxListsPerConnection),
            maxListNameBytes: UInt32(clamping: decoderLimits.maxListNameBytes),
            maxIDBytes: UInt32(clamping: decoderLimits.maxIDBytes),
            maxPayloadBytes: UInt32(clamping: decoderLimits.maxPayloadBytes)
        )
    }

    /// Whether the server accepts `frame`, a whole encoded frame (length prefix
    /// included): its length prefix's value must not exceed ``maxFrameBytes``.
    public func accepts(encodedFrame frame: [UInt8]) -> Bool {
        FrameEncoder.lengthPrefixValue(ofEncodedFrame: frame) <= Int(maxFrameBytes)
    }
}
