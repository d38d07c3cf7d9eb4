import CZlib

/// A preset deflate dictionary (RFC 1950 `FDICT`): bytes both sides prime their zlib
/// streams with, so even a 200-byte frame finds earlier matches.
///
/// How the two sides agree: the server announces its dictionary's bytes in the
/// ``Welcome`` (empty: none). From then on, every compressed frame *in both directions*
/// is deflated with it, and the zlib header of each such frame carries the
/// dictionary's Adler-32 (``id``), which the receiver checks before using it; a frame
/// naming another dictionary is ``ErrorCode/badCompression``. Because a batch is
/// deflated once for every subscriber, all connections of a server share one
/// dictionary.
public struct CompressionDictionary: Hashable, Sendable {
    /// The dictionary's bytes (at most 32 KiB, deflate's window; zlib uses only the last
    /// 32 KiB anyway, so the most frequent strings belong at the end).
    public let bytes: [UInt8]
    /// The Adler-32 of ``bytes``: the `DICTID` in a zlib header that uses it.
    public let id: UInt32

    /// The largest useful dictionary: deflate's 32 KiB window.
    public static let maxBytes = 32 * 1024

    /// Wraps bytes.
    /// - Precondition: `1 <= bytes.count <= maxBytes`.
    public init(_ bytes: [UInt8]) {
        precondition(!bytes.isEmpty && bytes.count <= Self.maxBytes, "a preset dictionary holds 1…32768 bytes")
        self.bytes = bytes
        self.id = bytes.withUnsafeBufferPointer { buf in
            UInt32(adler32(adler32(0, nil, 0), buf.baseAddress, uInt(buf.count)))
        }
    }

    /// A dictionary from a Welcome's field: `nil` for an empty one.
    public init?(welcomeBytes: [UInt8]) {
        guard !welcomeBytes.isEmpty, welcomeBytes.count <= Self.maxBytes else { return nil }
        self.init(welcomeBytes)
    }
}
