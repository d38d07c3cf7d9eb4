#if canImport(FlowSyncLoop)
import FlowSyncLoop
#endif
#if canImport(FlowSyncTLS)
import FlowSyncTLS
#endif

extension FlowSyncClient {
    /// The platform's transport for `configuration`, with TLS per ``Configuration/tls``
    /// (decided per connection's host): Network.framework where it exists (Apple
    /// platforms), libuv with OpenSSL on Linux (docs/SDK.md, "Transports and TLS").
    /// Elsewhere the POSIX transport has no TLS: there every endpoint must be allowed
    /// plain TCP, or the client is refused at once rather than at its first move to
    /// that endpoint.
    static func defaultTransport(for configuration: Configuration) throws -> any ClientTransport {
        #if canImport(Network)
        return NetworkTransport(tls: configuration.tls)
        #elseif canImport(FlowSyncLoop) && canImport(FlowSyncTLS)
        do {
            return try LibUVTransport(tls: configuration.tls)
        } catch {
            throw TransportError.cannotStart("\(error)")
        }
        #else
        for endpoint in configuration.endpoints {
            try TransportError.checkPlainTransportAllowed(host: endpoint.host, policy: configuration.tls)
        }
        return POSIXSocketTransport()
        #endif
    }
}

/// Why a transport could not be created. A struct around a private enum, so cases can be
/// added without breaking an app's `switch`.
public struct TransportError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Kind: Hashable, Sendable {
        case tlsUnavailable(host: String)
        case cannotStart(String)
    }
    private let kind: Kind

    /// The policy asks for TLS to this host, and the transport has none.
    public static func tlsUnavailable(host: String) -> TransportError {
        TransportError(kind: .tlsUnavailable(host: host))
    }
    /// The transport's own machinery failed to start (for example its loop thread).
    public static func cannotStart(_ detail: String) -> TransportError { TransportError(kind: .cannotStart(detail)) }

    public var description: String {
        switch kind {
        case .tlsUnavailable(let host):
            return "TLS is required for \(host) (TLSPolicy), and this transport has no TLS: "
                + "use the platform's default transport, or a local TLS tunnel on 127.0.0.1 (docs/SDK.md, "
                + "\"Transports and TLS\"), or set `tls: .disabled` for a network you trust"
        case .cannotStart(let detail):
            return "the transport could not start: \(detail)"
        }
    }

    /// Throws ``tlsUnavailable(host:)`` when `policy` wants TLS to `host`: used by the
    /// transports that only speak plain TCP, so they fail closed instead of sending a
    /// token in clear text.
    static func checkPlainTransportAllowed(host: String, policy: TLSPolicy) throws(TransportError) {
        if policy.usesTLS(host: host) { throw .tlsUnavailable(host: host) }
    }
}
