/// How a ``FrameEncoder`` compresses.
///
/// A body is deflated when it is at least ``threshold`` bytes, its type may be
/// compressed (not Hello, Welcome or Error), and the result is smaller than the raw
/// body; otherwise it is sent raw. The decision is made per frame, so one frame's bytes
/// never depend on another's and the same bytes can go to every subscriber.
public struct CompressionConfiguration: Hashable, Sendable {
    /// Bodies shorter than this are sent raw. Default 64 bytes: below that, the zlib
    /// header and checksum (6 bytes) and the deflate cost eat most of the gain even with
    /// a dictionary. `Int.max` disables compression.
    public var threshold: Int
    /// The zlib level, 1 (fast) … 9 (small). Default 6: the figures in
    /// `docs/BENCHMARKS.md` show level 1 is about twice as fast for about 20% larger
    /// frames; a server that fans out one frame to many subscribers pays deflate once and
    /// bandwidth many times, so the ratio matters more.
    public var level: Int32
    /// The preset dictionary, announced in the Welcome; `nil` for none.
    public var dictionary: CompressionDictionary?

    /// Creates a configuration.
    public init(threshold: Int = 64, level: Int32 = 6, dictionary: CompressionDictionary? = .standard) {
        precondition((1...9).contains(level), "zlib levels are 1…9")
        self.threshold = threshold
        self.level = level
        self.dictionary = dictionary
    }

    /// The defaults, with the standard dictionary.
    public static let `default` = CompressionConfiguration()

    /// Never compress (a client before its Welcome, or tests).
    public static let disabled = CompressionConfiguration(threshold: .max, dictionary: nil)
}
