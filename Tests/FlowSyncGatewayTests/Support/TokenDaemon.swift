import FlowSyncServer
import FlowSyncTestSupport

/// A daemon that requires tokens signed with one HS256 key, and tokens for it: the
/// gateway's auth tests pass these through and let the daemon decide.
enum TokenDaemon {
    static let kid = "dev"
    static let secret = "flowsync-gateway-test-secret-0123456789ab"

    /// An embedded daemon with `auth.mode = required` and the one key.
    static func start() async throws -> EmbeddedServer {
        var configuration = ServerConfiguration()
        configuration.auth.mode = .required
        configuration.auth.keys = [.init(kid: kid, algorithm: "HS256", secret: secret)]
        return try await EmbeddedServer(configuration: configuration)
    }

    /// A token for `sub` with these read and write patterns.
    static func token(_ sub: String, read: [String], write: [String]) async throws -> String {
        try await TestTokens.make(kid: kid, signer: .hs256(secret), sub: sub, read: read, write: write)
    }
}
