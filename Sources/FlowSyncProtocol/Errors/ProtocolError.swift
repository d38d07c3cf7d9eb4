/// A violation found while decoding: a malformed frame, a limit exceeded, a bad zlib
/// stream. It carries the wire ``ErrorCode`` to send back before closing.
///
/// A ``FrameDecoder`` that threw one is poisoned: framing may be lost, so the
/// connection must be closed (after sending an ``ErrorMessage`` with ``code``).
public struct ProtocolError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The catalog code that names the violation.
    public var code: ErrorCode
    /// A human-readable detail (which field, which limit, which value).
    public var message: String

    /// Creates an error.
    public init(code: ErrorCode, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
