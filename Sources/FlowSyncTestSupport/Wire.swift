import FlowSyncLoop
import FlowSyncServer
import FlowSyncTLS

/// How a test's clients reach its daemon: plaintext, or TLS with the test certificate
/// (issue #32). End-to-end tests take it as an argument, so the same test runs over
/// both (docs/TESTING.md, "Over TLS").
public enum Wire: String, CaseIterable, Sendable, CustomStringConvertible {
    case plaintext
    case tls

    public var description: String { rawValue }

    /// `configuration` with the listener's TLS set for this wire.
    public func configure(_ configuration: ServerConfiguration) async throws -> ServerConfiguration {
        var configuration = configuration
        if self == .tls { configuration.tls = try await TestCertificates.shared().serverTLS() }
        return configuration
    }

    /// An embedded server speaking this wire.
    public func server(
        _ configuration: ServerConfiguration = ServerConfiguration(),
        storage: EmbeddedServer.Storage = .memory
    ) async throws -> EmbeddedServer {
        try await EmbeddedServer(configuration: configure(configuration), storage: storage)
    }

    /// The client context of this wire (`nil`: plaintext).
    public func clientContext() async throws -> TLSContext? {
        self == .tls ? try await TestCertificates.shared().clientContext() : nil
    }

    /// A test client of `server` over this wire (Hello and Welcome done).
    public func connect(
        _ server: EmbeddedServer, on thread: EventLoopThread,
        clientID: String = "client-\(UInt32.random(in: 0...UInt32.max))"
    ) async throws -> TestClient {
        try await TestClient.connect(port: server.port, on: thread, clientID: clientID, tls: clientContext())
    }
}
