#if canImport(Glibc)
import Glibc
#endif

/// Why the store failed. Two kinds matter to the daemon: an I/O failure (a write, an
/// fsync, a rename — never acknowledged, the daemon exits non-zero) and damaged data
/// found at recovery (the daemon refuses to start unless `--repair`).
///
/// A struct around a private enum so cases can be added without breaking callers.
public struct StoreError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Base: Hashable, Sendable {
        case io(operation: String, path: String, errno: Int32)
        case corrupt(path: String, offset: Int, reason: String)
        case unusable(String)
    }

    private let base: Base
    private init(_ base: Base) { self.base = base }

    /// A system call failed (`errno`), or wrote fewer bytes than asked (`ENOSPC`).
    public static func io(_ operation: String, path: String, errno: Int32) -> StoreError {
        StoreError(.io(operation: operation, path: path, errno: errno))
    }

    /// Stored data fails its checksum or does not fit (not a torn tail).
    public static func corrupt(_ path: String, offset: Int, _ reason: String) -> StoreError {
        StoreError(.corrupt(path: path, offset: offset, reason: reason))
    }

    /// The store cannot be used as configured (locked by another process, say).
    public static func unusable(_ reason: String) -> StoreError {
        StoreError(.unusable(reason))
    }

    /// True for damaged data found at recovery (`--repair` can deal with it).
    public var isCorruption: Bool {
        if case .corrupt = base { return true }
        return false
    }

    /// The `errno` of an I/O failure.
    public var errno: Int32? {
        if case .io(_, _, let code) = base { return code }
        return nil
    }

    public var description: String {
        switch base {
        case .io(let operation, let path, let code):
            return "\(operation) \(path): \(String(cString: strerror(code))) (errno \(code))"
        case .corrupt(let path, let offset, let reason):
            return "corrupt data in \(path) at byte \(offset): \(reason)"
        case .unusable(let reason):
            return reason
        }
    }
}
