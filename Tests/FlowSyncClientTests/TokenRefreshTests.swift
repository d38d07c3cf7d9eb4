import Dispatch
import FlowSyncCore
import FlowSyncProtocol
import FlowSyncServer
import FlowSyncTestSupport
import Foundation
import Testing

@testable import FlowSyncClient

/// Issue #10, SDK side: a token provider, reconnect with a fresh token after the server
/// closes with token-expired, and a bounded give-up when tokens keep being refused.
@Suite(.serialized, .timeLimit(.minutes(3))) struct TokenRefreshTests {
    static let secret = "flowsync-sdk-test-secret-0123456789abcdef"

    static func server() async throws -> EmbeddedServer {
        var c = ServerConfiguration()
        c.auth.mode = .required
        c.auth.leewaySeconds = 0
        c.auth.keys = [.init(kid: "dev", algorithm: "HS256", secret: secret)]
        return try await EmbeddedServer(configuration: c)
    }

    static func client(
        port: Int, token: String? = nil, inBand: Bool = false, provider: (@Sendable () -> String?)?
    ) throws -> FlowSyncClient {
        try FlowSyncClient(
            configuration: .init(
                port: port, token: token, clientID: "sdk-\(UInt32.random(in: 0...UInt32.max))",
                reconnect: ReconnectPolicy(initialDelayMilliseconds: 20, maxDelayMilliseconds: 200),
                callbackQueue: DispatchQueue(label: "token-tests"), randomSeed: 1, tokenProvider: provider,
                refreshesTokenInBand: inBand, tokenRefreshMarginSeconds: 2))
    }

    @Test func theClientRefreshesItsTokenInBandBeforeExpiryWithoutDisconnecting() async throws {
        let server = try await Self.server()
        let short = try await TestTokens.make(
            kid: "dev", signer: .hs256(Self.secret), sub: "ada", ttl: 3, read: ["team/1/*"], write: ["team/1/*"])
        let long = try await TestTokens.make(
            kid: "dev", signer: .hs256(Self.secret), sub: "ada", ttl: 3_600, read: ["team/1/*"], write: ["team/1/*"])
        let calls = Shared(0)
        let client = try Self.client(port: server.port, inBand: true) {
            let n = calls.update {
                $0 += 1
                return $0
            }
            return n == 1 ? short : long
        }
        let statuses = Shared<[String]>([])
        let observation = client.observeStatus(on: DispatchQueue(label: "status")) { status in
            statuses.update { $0.append("\(status)") }
        }
        defer { _ = observation }
        let list = client.director("team/1/a")
        try await list.waitUntilLoaded()
        _ = try await list.add(section: NewSection(id: "before")).committed()
        // Past the short token's exp: the connection is still the first one.
        try await Task.sleep(for: .milliseconds(4_500))
        _ = try await list.add(section: NewSection(id: "after")).committed()
        #expect(calls.get() == 2, "provider called \(calls.get()) times")
        #expect(
            !statuses.get().contains { $0.hasPrefix("disconnected") || $0.hasPrefix("closed") }, "\(statuses.get())")
        #expect(client.status == .connected(server: "flowsyncd"))
        client.close()
        #expect(await server.stop())
    }

    @Test func theClientReconnectsWithARefreshedTokenAfterAnExpiryClose() async throws {
        let server = try await Self.server()
        // First a token that lapses in 2 s, then long-lived ones.
        let short = try await TestTokens.make(
            kid: "dev", signer: .hs256(Self.secret), sub: "ada", ttl: 2, read: ["team/1/*"], write: ["team/1/*"])
        let long = try await TestTokens.make(
            kid: "dev", signer: .hs256(Self.secret), sub: "ada", ttl: 3_600, read: ["team/1/*"], write: ["team/1/*"])
        let calls = Shared(0)
        let client = try Self.client(port: server.port) {
            let n = calls.update {
                $0 += 1
                return $0
            }
            return n == 1 ? short : long
        }
        let statuses = Shared<[String]>([])
        let observation = client.observeStatus(on: DispatchQueue(label: "status")) { status in
            statuses.update { $0.append("\(status)") }
        }
        defer { _ = observation }
        let list = client.director("team/1/a")
        try await list.waitUntilLoaded()
        _ = try await list.add(section: NewSection(id: "before")).committed()
        // The server closes at exp with 2002 (refresh token); the SDK asks for a new token.
        #expect(
            await ClientTests.until(timeout: 10) {
                calls.get() >= 2 && client.status == .connected(server: "flowsyncd")
            },
            "calls \(calls.get()), status \(client.status), seen \(statuses.get())")
        _ = try await list.add(section: NewSection(id: "after")).committed()
        #expect(list.snapshot.numberOfSections == 2)
        // One disconnect (the expiry close), never a final close.
        #expect(statuses.get().filter { $0.hasPrefix("disconnected") }.count == 1, "\(statuses.get())")
        #expect(!statuses.get().contains { $0.hasPrefix("closed") }, "\(statuses.get())")
        #expect(calls.get() == 2, "provider called \(calls.get()) times")
        client.close()
        #expect(await server.stop())
    }

    @Test func withoutAProviderARefusedTokenIsFinal() async throws {
        let server = try await Self.server()
        let client = try Self.client(port: server.port, token: "not-a-jwt", provider: nil)
        #expect(
            await ClientTests.until(timeout: 10) {
                if case .closed = client.status { return true } else { return false }
            })
        if case .closed(let error) = client.status {
            #expect(error?.code == .invalidToken, "\(String(describing: error))")
        }
        client.close()
        #expect(await server.stop())
    }

    @Test func aProviderThatKeepsHandingOutBadTokensGivesUpAfterTheBound() async throws {
        let server = try await Self.server()
        let calls = Shared(0)
        let client = try Self.client(port: server.port) {
            calls.update { $0 += 1 }
            return "still-not-a-jwt"
        }
        #expect(
            await ClientTests.until(timeout: 10) {
                if case .closed = client.status { return true } else { return false }
            })
        if case .closed(let error) = client.status {
            #expect(error?.code == .invalidToken, "\(String(describing: error))")
        }
        // The first attempt plus maxTokenRefreshes (3) refreshed ones.
        #expect(calls.get() == 4, "provider called \(calls.get()) times")
        client.close()
        #expect(await server.stop())
    }
}
