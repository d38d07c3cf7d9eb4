/// Size limits a ``Director`` enforces on every mutation.
///
/// A violation is a ``MutationError`` with reason ``MutationError/Reason/limitExceeded``
/// (or ``MutationError/Reason/invalidID`` for IDs) and leaves the director untouched.
/// The daemon reads these from its config; the defaults suit a UI list.
public struct DirectorLimits: Hashable, Sendable {
    /// Longest section or row ID, in UTF-8 bytes. IDs must also be non-empty.
    public var maxIDBytes: Int
    /// Longest row `kind`, in UTF-8 bytes.
    public var maxKindBytes: Int
    /// Largest row payload, header or footer, in bytes.
    public var maxPayloadBytes: Int
    /// Most sections in one director.
    public var maxSections: Int
    /// Most rows in one director, over all sections.
    public var maxRows: Int
    /// Most operations in one atomic mutation group.
    public var maxOpsPerMutation: Int

    /// Creates limits; every argument has the documented default.
    public init(
        maxIDBytes: Int = 256,
        maxKindBytes: Int = 64,
        maxPayloadBytes: Int = 64 * 1024,
        maxSections: Int = 10_000,
        maxRows: Int = 2_000_000,
        maxOpsPerMutation: Int = 1_000
    ) {
        self.maxIDBytes = maxIDBytes
        self.maxKindBytes = maxKindBytes
        self.maxPayloadBytes = maxPayloadBytes
        self.maxSections = maxSections
        self.maxRows = maxRows
        self.maxOpsPerMutation = maxOpsPerMutation
    }

    /// The defaults.
    public static let `default` = DirectorLimits()
}
