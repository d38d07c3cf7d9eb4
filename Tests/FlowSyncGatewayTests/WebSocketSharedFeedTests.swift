import FlowSyncCore
import FlowSyncGatewayCore
import FlowSyncServer
import FlowSyncTestSupport
import Foundation
import Testing

@testable import FlowSyncGateway

/// The WebSocket's shared feeds (docs/GATEWAY.md, "Shared feeds") against a real daemon
/// through a real gateway, both on port 0: fresh subscribes of one list and token share
/// one daemon subscription, and each member still sees a whole, ordered stream.
@Suite(.timeLimit(.minutes(2))) struct WebSocketSharedFeedTests {
    typealias E2E = WebSocketEndToEndTests

    static func subscribers(_ server: EmbeddedServer, _ list: String) async -> Int {
        await server.withServer { $0.subscriberCount(of: list) }
    }

    static func waitFor(_ timeout: Duration = .seconds(10), _ condition: () async -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if await condition() { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return await condition()
    }

    static func versions(_ socket: WebSocketTestClient) -> [Int] {
        socket.messages.filter { $0["type"] as? String == "diff" }.compactMap { $0["toVersion"] as? Int }
    }

    @Test func severalMembersShareOneDaemonSubscriptionAndSeeTheSameOrderedVersions() async throws {
        let server = try await EmbeddedServer()
        let gateway = try await GatewayHarness(server: server)
        _ = try await ChangesStreamTests.post(gateway, "shared", E2E.seed)
        var sockets: [WebSocketTestClient] = []
        for _ in 0..<4 {
            let socket = try await WebSocketTestClient(port: gateway.port)
            socket.send(#"{"type":"subscribe","list":"shared"}"#)
            sockets.append(socket)
        }
        for socket in sockets { #expect(await socket.waitUntil { E2E.types($0) == ["snapshot"] }, "\(socket.texts)") }
        #expect(await Self.subscribers(server, "shared") == 1, "one daemon subscription for four sockets")
        #expect(gateway.gateway.sharedFeeds == 1)
        for i in 0..<6 { _ = try await ChangesStreamTests.post(gateway, "shared", E2E.insert("r\(i)", at: 0)) }
        for socket in sockets {
            #expect(await socket.waitUntil { $0.contains { $0["toVersion"] as? Int == 7 } }, "\(socket.texts)")
            #expect(Self.versions(socket) == Array(2...7), "every version once, in order")
        }
        // The same messages, byte for byte (encoded once).
        let first = sockets[0].texts
        for socket in sockets.dropFirst() { #expect(socket.texts == first) }
        for socket in sockets { await socket.close() }
        await gateway.stop()
        #expect(await server.stop())
    }

    @Test func aMemberJoiningMidStreamGetsASnapshotAtTheFeedsPositionThenDiffs() async throws {
        let server = try await EmbeddedServer()
        let gateway = try await GatewayHarness(server: server)
        _ = try await ChangesStreamTests.post(gateway, "mid", E2E.seed)
        let early = try await WebSocketTestClient(port: gateway.port)
        early.send(#"{"type":"subscribe","list":"mid"}"#)
        #expect(await early.waitUntil { E2E.types($0) == ["snapshot"] })
        for i in 0..<3 { _ = try await ChangesStreamTests.post(gateway, "mid", E2E.insert("a\(i)", at: i)) }
        #expect(await early.waitUntil { $0.contains { $0["toVersion"] as? Int == 4 } })
        let late = try await WebSocketTestClient(port: gateway.port)
        late.send(#"{"type":"subscribe","list":"mid"}"#)
        #expect(await late.waitUntil { E2E.types($0) == ["snapshot"] }, "\(late.texts)")
        let snapshot = late.messages[0]
        #expect((snapshot["position"] as? [String: Any])?["version"] as? Int == 4, "\(snapshot)")
        #expect(snapshot["reason"] as? String == "freshSubscribe")
        let rows = ((snapshot["sections"] as? [[String: Any]])?.first?["rows"] as? [[String: Any]]) ?? []
        #expect(rows.compactMap { $0["id"] as? String } == ["a0", "a1", "a2"])
        #expect(await Self.subscribers(server, "mid") == 1)
        _ = try await ChangesStreamTests.post(gateway, "mid", E2E.insert("b", at: 0))
        #expect(await late.waitUntil { E2E.types($0) == ["snapshot", "diff"] }, "\(late.texts)")
        #expect(late.messages[1]["fromVersion"] as? Int == 4 && late.messages[1]["toVersion"] as? Int == 5)
        #expect(await early.waitUntil { $0.contains { $0["toVersion"] as? Int == 5 } })
        #expect(Self.versions(early) == [2, 3, 4, 5])
        await early.close()
        await late.close()
        await gateway.stop()
        #expect(await server.stop())
    }

    @Test func aMemberLeavingDisturbsNoOneAndTheLastFreesTheDaemonSubscription() async throws {
        let server = try await EmbeddedServer()
        let gateway = try await GatewayHarness(server: server)
        _ = try await ChangesStreamTests.post(gateway, "leave", E2E.seed)
        _ = try await ChangesStreamTests.post(gateway, "other", E2E.seed)
        let stays = try await WebSocketTestClient(port: gateway.port)
        let unsubscribes = try await WebSocketTestClient(port: gateway.port)
        let disconnects = try await WebSocketTestClient(port: gateway.port)
        for socket in [stays, unsubscribes, disconnects] {
            socket.send(#"{"type":"subscribe","list":"leave"}"#)
            #expect(await socket.waitUntil { E2E.types($0) == ["snapshot"] })
        }
        _ = try await ChangesStreamTests.post(gateway, "leave", E2E.insert("x", at: 0))
        for socket in [stays, unsubscribes, disconnects] {
            #expect(await socket.waitUntil { E2E.types($0) == ["snapshot", "diff"] })
        }
        unsubscribes.send(#"{"type":"unsubscribe","list":"leave"}"#)
        await disconnects.close()
        // The unsubscribe is handled before this subscribe (one socket's messages in order):
        // once its snapshot is here, the unsubscribed socket has left the feed.
        unsubscribes.send(#"{"type":"subscribe","list":"other"}"#)
        #expect(await unsubscribes.waitUntil { E2E.types($0) == ["snapshot", "diff", "snapshot"] })
        for i in 0..<3 { _ = try await ChangesStreamTests.post(gateway, "leave", E2E.insert("y\(i)", at: 0)) }
        #expect(await stays.waitUntil { $0.contains { $0["toVersion"] as? Int == 5 } }, "\(stays.texts)")
        #expect(Self.versions(stays) == [2, 3, 4, 5] && !stays.ended)
        #expect(Self.versions(unsubscribes) == [2], "nothing after leaving: \(unsubscribes.texts)")
        #expect(await Self.subscribers(server, "leave") == 1)
        await stays.close()
        #expect(await Self.waitFor { await Self.subscribers(server, "leave") == 0 }, "the last leaving unsubscribes")
        #expect(await Self.waitFor { gateway.gateway.sharedFeeds == 1 }, "only the other list's feed is left")
        await unsubscribes.close()
        #expect(await Self.waitFor { gateway.gateway.sharedFeeds == 0 })
        // A new member after that makes a new feed, and gets the current state.
        let again = try await WebSocketTestClient(port: gateway.port)
        again.send(#"{"type":"subscribe","list":"leave"}"#)
        #expect(await again.waitUntil { E2E.types($0) == ["snapshot"] })
        #expect((again.messages[0]["position"] as? [String: Any])?["version"] as? Int == 5)
        await again.close()
        await gateway.stop()
        #expect(await server.stop())
    }

    /// Rule 5: the feed's link ending is every member's, closed with 4502 to resume.
    @Test func theDaemonGoingAwayClosesEveryMemberWith4502() async throws {
        let server = try await EmbeddedServer()
        let gateway = try await GatewayHarness(server: server)
        _ = try await ChangesStreamTests.post(gateway, "gone", E2E.seed)
        let sockets = [
            try await WebSocketTestClient(port: gateway.port), try await WebSocketTestClient(port: gateway.port),
        ]
        for socket in sockets {
            socket.send(#"{"type":"subscribe","list":"gone"}"#)
            #expect(await socket.waitUntil { E2E.types($0) == ["snapshot"] })
        }
        #expect(await server.stop())
        for socket in sockets {
            #expect(await socket.waitUntilEnded(timeout: .seconds(20)))
            #expect(socket.closeCode == 4502, "\(String(describing: socket.closeCode)) \(socket.texts)")
        }
        #expect(await Self.waitFor { gateway.gateway.sharedFeeds == 0 })
        for socket in sockets { await socket.close() }
        await gateway.stop()
    }

    /// Rule 1: the daemon judges each token, and a feed carries one token's subscription.
    @Test func feedsAreKeyedByTokenSoNoOneReadsThroughAnothersToken() async throws {
        let server = try await TokenDaemon.start()
        let gateway = try await GatewayHarness(server: server)
        let reader = try await TokenDaemon.token("reader", read: ["team/*"], write: ["team/*"])
        let stranger = try await TokenDaemon.token("stranger", read: ["other/*"], write: [])
        let allowed = try await WebSocketTestClient(port: gateway.port)
        allowed.send(#"{"type":"auth","token":"\#(reader)"}"#)
        allowed.send(E2E.mutate("team/1", id: "seed", E2E.seed))
        allowed.send(#"{"type":"subscribe","list":"team/1"}"#)
        #expect(await allowed.waitUntil { Set(E2E.types($0)).isSuperset(of: ["ack", "snapshot"]) }, "\(allowed.texts)")
        // The same list with another token: its own feed, and the daemon refuses it.
        let refused = try await WebSocketTestClient(port: gateway.port)
        refused.send(#"{"type":"auth","token":"\#(stranger)"}"#)
        refused.send(#"{"type":"subscribe","list":"team/1"}"#)
        #expect(await refused.waitUntil { E2E.types($0) == ["error"] }, "\(refused.texts)")
        #expect(refused.texts.first?.contains("forbidden") == true, "\(refused.texts)")
        #expect(!refused.texts.contains { $0.contains(#""type":"snapshot""#) })
        // A second socket with the first token shares its feed.
        let sharer = try await WebSocketTestClient(port: gateway.port)
        sharer.send(#"{"type":"auth","token":"\#(reader)"}"#)
        sharer.send(#"{"type":"subscribe","list":"team/1"}"#)
        #expect(await sharer.waitUntil { E2E.types($0) == ["snapshot"] }, "\(sharer.texts)")
        #expect(await Self.subscribers(server, "team/1") == 1)
        #expect(gateway.gateway.sharedFeeds == 1, "the refused feed ended")
        for socket in [allowed, refused, sharer] { await socket.close() }
        await gateway.stop()
        #expect(await server.stop())
    }
}
