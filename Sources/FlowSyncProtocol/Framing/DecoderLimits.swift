import FlowSyncCore

/// Everything a ``FrameDecoder`` checks *before* it allocates: frame size, inflated
/// size, and every count and length inside a message.
///
/// Why limits live in the decoder rather than in the server: a hostile peer must not be
/// able to make the receiver allocate more than these numbers, and only the decoder
/// sees a count before the array it announces exists. Each violation is a
/// ``ProtocolError`` with the code documented on the property.
///
/// Counts per message (`maxSectionsPerMessage`, `maxRowsPerMessage`,
/// `maxChangesPerMessage`) are totals over the whole message, not per array, so nested
/// arrays cannot multiply them.
public struct DecoderLimits: Hashable, Sendable {
    /// Largest value of a frame's length prefix (header + body). ``ErrorCode/frameTooLarge``.
    /// The decoder never buffers a frame whose prefix exceeds it.
    public var maxFrameBytes: Int
    /// Largest body a compressed frame may inflate to; inflation stops at the cap.
    /// ``ErrorCode/inflatedTooLarge``.
    public var maxInflatedBytes: Int
    /// Whether compressed frames are accepted; false until the handshake completed.
    /// ``ErrorCode/compressionNotAllowed``.
    public var allowCompressed: Bool
    /// Longest list name. ``ErrorCode/idTooLong``.
    public var maxListNameBytes: Int
    /// Longest section, row or client ID. ``ErrorCode/idTooLong``.
    public var maxIDBytes: Int
    /// Longest row kind. ``ErrorCode/idTooLong``.
    public var maxKindBytes: Int
    /// Largest row payload, header or footer. ``ErrorCode/payloadTooLarge``.
    public var maxPayloadBytes: Int
    /// Longest free text: client and server names, tokens, error messages, stat names.
    /// ``ErrorCode/payloadTooLarge``.
    public var maxTextBytes: Int
    /// Largest preset dictionary in a Welcome. ``ErrorCode/payloadTooLarge``.
    public var maxDictionaryBytes: Int
    /// Most operations in one Mutate. ``ErrorCode/tooManyOps``.
    public var maxOpsPerMutation: Int
    /// Most sections (and section references, moves, deletes) in one message.
    /// ``ErrorCode/tooManyElements``.
    public var maxSectionsPerMessage: Int
    /// Most rows (and row references) in one message. ``ErrorCode/tooManyElements``.
    public var maxRowsPerMessage: Int
    /// Most changes over all stages of a changeset. ``ErrorCode/tooManyElements``.
    public var maxChangesPerMessage: Int
    /// Most stages in a changeset (the core produces at most five). ``ErrorCode/tooManyElements``.
    public var maxStagesPerChangeset: Int
    /// Most `(clientID, seq)` pairs in a Diff. ``ErrorCode/tooManyElements``.
    public var maxMutationsPerDiff: Int
    /// Most entries in a StatsReply. ``ErrorCode/tooManyElements``.
    public var maxStatsEntries: Int

    /// Creates limits; every argument defaults to the ``server`` value. The limits on
    /// IDs, kinds, payloads and ops per mutation default to `DirectorLimits.default`
    /// (the core states them once; a decoder refuses what the director would refuse).
    public init(
        maxFrameBytes: Int = 4 * 1024 * 1024,
        maxInflatedBytes: Int = 16 * 1024 * 1024,
        allowCompressed: Bool = true,
        maxListNameBytes: Int = 256,
        maxIDBytes: Int = DirectorLimits.default.maxIDBytes,
        maxKindBytes: Int = DirectorLimits.default.maxKindBytes,
        maxPayloadBytes: Int = DirectorLimits.default.maxPayloadBytes,
        maxTextBytes: Int = 8 * 1024,
        maxDictionaryBytes: Int = 32 * 1024,
        maxOpsPerMutation: Int = DirectorLimits.default.maxOpsPerMutation,
        maxSectionsPerMessage: Int = 10_000,
        maxRowsPerMessage: Int = 100_000,
        maxChangesPerMessage: Int = 100_000,
        maxStagesPerChangeset: Int = 16,
        maxMutationsPerDiff: Int = 10_000,
        maxStatsEntries: Int = 10_000
    ) {
        self.maxFrameBytes = maxFrameBytes
        self.maxInflatedBytes = maxInflatedBytes
        self.allowCompressed = allowCompressed
        self.maxListNameBytes = maxListNameBytes
        self.maxIDBytes = maxIDBytes
        self.maxKindBytes = maxKindBytes
        self.maxPayloadBytes = maxPayloadBytes
        self.maxTextBytes = maxTextBytes
        self.maxDictionaryBytes = maxDictionaryBytes
        self.maxOpsPerMutation = maxOpsPerMutation
        self.maxSectionsPerMessage = maxSectionsPerMessage
        self.maxRowsPerMessage = maxRowsPerMessage
        self.maxChangesPerMessage = maxChangesPerMessage
        self.maxStagesPerChangeset = maxStagesPerChangeset
        self.maxMutationsPerDiff = maxMutationsPerDiff
        self.maxStatsEntries = maxStatsEntries
    }

    /// What a server accepts from a client after the handshake: a Mutate of 1,000 ops of
    /// rows up to 64 KiB fits; 4 MiB on the wire, 16 MiB inflated.
    public static let server = DecoderLimits()

    /// What a server accepts before the handshake: one small, uncompressed Hello. 16 KiB
    /// leaves room for a large JWT; a client that is not yet authenticated cannot make
    /// the server buffer more.
    public static let preAuth = DecoderLimits(
        maxFrameBytes: 16 * 1024,
        maxInflatedBytes: 16 * 1024,
        allowCompressed: false,
        maxOpsPerMutation: 0,
        maxSectionsPerMessage: 0,
        maxRowsPerMessage: 0,
        maxChangesPerMessage: 0,
        maxStagesPerChangeset: 0,
        maxMutationsPerDiff: 0,
        maxStatsEntries: 0
    )

    /// What a client accepts from a server: snapshots of up to 2,000,000 rows
    /// (`DirectorLimits.default.maxRows`), 256 MiB on the wire, 1 GiB inflated. A client
    /// trusts its server more than a server trusts its clients, but still bounds it.
    public static let client = DecoderLimits(
        maxFrameBytes: 256 * 1024 * 1024,
        maxInflatedBytes: 1024 * 1024 * 1024,
        maxSectionsPerMessage: 10_000,
        maxRowsPerMessage: 2_000_000,
        maxChangesPerMessage: 4_000_000
    )
}
