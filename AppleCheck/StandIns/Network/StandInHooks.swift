import Foundation

/// Test hooks of the Network stand-in. NOT Apple API. They let a test reach a connection
/// that code under test created (NetworkTransport makes its own) and read its parameters'
/// TLS options, which Apple exposes through NWParameters' protocol stack (not declared here).
public enum NetworkStandIn {
    /// A registration made by ``observeConnections(_:)``; ``cancel()`` ends it.
    public final class Observation: Sendable {
        let id: UInt64
        init(id: UInt64) { self.id = id }
        /// Stops observing.
        public func cancel() { NetworkStandIn.registry.withLock { $0.observers[id] = nil } }
        deinit { cancel() }
    }

    private struct Registry {
        var nextID: UInt64 = 0
        var observers: [UInt64: @Sendable (NWConnection) -> Void] = [:]
    }
    private static let registry = LockedRegistry(Registry())

    /// Calls `body` with every NWConnection created from now on (on the creating thread),
    /// until the returned observation is cancelled or released.
    public static func observeConnections(_ body: @escaping @Sendable (NWConnection) -> Void) -> Observation {
        let id = registry.withLock { registry -> UInt64 in
            registry.nextID += 1
            registry.observers[registry.nextID] = body
            return registry.nextID
        }
        return Observation(id: id)
    }

    static func connectionCreated(_ connection: NWConnection) {
        let observers = registry.withLock { Array($0.observers.values) }
        for observer in observers { observer(connection) }
    }

    /// The TLS options of `parameters`, or nil for plain TCP.
    public static func tlsOptions(of parameters: NWParameters) -> NWProtocolTLS.Options? { parameters.tls }

    /// The host and port a connection was created for.
    public static func hostAndPort(of connection: NWConnection) -> (host: String, port: UInt16) {
        switch connection.endpoint {
        case .hostPort(let host, let port): return (host.text, port.rawValue)
        }
    }
}

final class LockedRegistry<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func withLock<T>(_ body: (inout Value) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}
