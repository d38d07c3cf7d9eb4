import FlowSyncLoop

/// Why ``Server/start(adoptingDescriptor:)`` failed (issue #30: start errors were libuv
/// errors with made-up errnos, `-5` for a store and `-22` for the auth settings). A
/// struct around a private enum, so cases can be added without breaking callers
/// (STYLE.md, errors in three tiers).
public struct ServerStartError: Error, CustomStringConvertible, Sendable {
    private enum Base: Sendable {
        /// The store could not be recovered (when `start` recovers it itself).
        case recovery(StoreError)
        /// The `[auth]` settings do not fit the address listened on.
        case auth(key: String, problem: String, host: String)
        /// The token keys could not be loaded.
        case authKeys(String)
        /// Binding or adopting a listener failed.
        case listen(UVError)
        /// The `[tls]` settings do not fit the address, or the certificate pair does
        /// not load (the message names the key and the file).
        case tls(String)
    }

    private let base: Base

    static func recovery(_ error: StoreError) -> ServerStartError { ServerStartError(base: .recovery(error)) }
    static func auth(key: String, problem: String, host: String) -> ServerStartError {
        ServerStartError(base: .auth(key: key, problem: problem, host: host))
    }
    static func authKeys(_ reason: String) -> ServerStartError { ServerStartError(base: .authKeys(reason)) }
    static func listen(_ error: UVError) -> ServerStartError { ServerStartError(base: .listen(error)) }
    static func tls(_ reason: String) -> ServerStartError { ServerStartError(base: .tls(reason)) }

    /// The store's error, when recovering the store failed.
    public var storeError: StoreError? {
        if case .recovery(let error) = base { return error }
        return nil
    }

    /// The libuv error, when binding or adopting a listener failed.
    public var listenError: UVError? {
        if case .listen(let error) = base { return error }
        return nil
    }

    public var description: String {
        switch base {
        case .recovery(let error): return "store recovery: \(error)"
        case .auth(let key, let problem, let host): return "\(key): \(problem) (listening on \(host))"
        case .authKeys(let reason): return "auth keys: \(reason)"
        case .listen(let error): return "\(error)"
        case .tls(let reason): return reason
        }
    }
}
