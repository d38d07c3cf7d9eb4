import CLibUV

/// A libuv failure, translated once at the C boundary: the negative `UV_E*` code, its
/// libuv name (`ECONNRESET`) and message, and the operation that failed.
public struct UVError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The negative libuv error code.
    public let code: Int32
    /// What was being done (`"uv_tcp_bind"`).
    public let operation: String

    public init(code: Int32, operation: String) {
        self.code = code
        self.operation = operation
    }

    /// libuv's name for the code, e.g. `EADDRINUSE`.
    public var name: String { String(cString: uv_err_name(code)) }
    /// libuv's message for the code.
    public var message: String { String(cString: uv_strerror(code)) }

    /// True for end-of-stream (`UV_EOF`).
    public var isEOF: Bool { code == Int32(UV_EOF.rawValue) }
    /// True for a cancelled request (`UV_ECANCELED`), e.g. writes pending at close.
    public var isCancelled: Bool { code == Int32(UV_ECANCELED.rawValue) }

    public var description: String { "\(operation): \(name) (\(message))" }

    /// Throws when `result` is a negative libuv status.
    @inline(__always)
    static func check(_ result: Int32, _ operation: String) throws(UVError) {
        if result < 0 { throw UVError(code: result, operation: operation) }
    }
}
