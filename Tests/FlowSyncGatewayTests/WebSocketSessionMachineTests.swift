import FlowSyncCore
import FlowSyncGatewayCore
import Foundation
import Testing

/// ``WebSocketSessionMachine`` event by event, without a socket (its rules 1–5).
@Suite(.timeLimit(.minutes(1))) struct WebSocketSessionMachineTests {
    static let limits = GatewayLimits()
    static let small = WebSocketLimits(
        maxMessageBytes: 1024, maxSubscriptions: 2, maxWritesInFlight: 1, maxQueuedMessages: 3, maxQueuedBytes: 100)

    func machine(token: String? = nil) -> WebSocketSessionMachine {
        WebSocketSessionMachine(headerToken: token, limits: Self.limits, webSocket: Self.small)
    }

    func problemName(_ action: WebSocketSessionMachine.Action) -> String? {
        let bytes: [UInt8]
        switch action {
        case .send(let b), .sendThenClose(let b, _): bytes = b
        default: return nil
        }
        let object = (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any]
        let type = (object?["problem"] as? [String: Any])?["type"] as? String
        return type.map { String($0.dropFirst("urn:flowsync:problem:".count)) }
    }

    func text(_ s: String) -> [UInt8] { Array(s.utf8) }

    @Test func authIsTakenOnlyAsTheFirstMessageAndReachesTheActions() {
        var m = machine(token: "header")
        #expect(m.receivedText(text(#"{"type":"auth","token":"first"}"#)).isNone)
        guard case .joinFeed("a", let token) = m.receivedText(text(#"{"type":"subscribe","list":"a"}"#)) else {
            Issue.record("no subscribe")
            return
        }
        #expect(token == "first")
        #expect(problemName(m.receivedText(text(#"{"type":"auth","token":"late"}"#))) == "auth-not-first")
        var other = machine(token: "header")
        _ = other.receivedBinary()
        #expect(problemName(other.receivedText(text(#"{"type":"auth","token":"x"}"#))) == "auth-not-first")
    }

    /// Rule 6: a fresh subscribe joins the shared feed; a resume keeps the socket's own link.
    @Test func aFreshSubscribeJoinsTheFeedAndAResumeGetsItsOwnSubscription() {
        var m = machine(token: "t")
        guard case .joinFeed("a", "t") = m.receivedText(text(#"{"type":"subscribe","list":"a"}"#)) else {
            return fail()
        }
        guard
            case .subscribe("b", let after?, "t") = m.receivedText(
                text(#"{"type":"subscribe","list":"b","after":"5:9"}"#))
        else { return fail() }
        #expect(after == ListVersion(epoch: 5, version: 9))
    }

    @Test func subscriptionsAreCountedRefusedAndReleased() {
        var m = machine()
        guard case .joinFeed = m.receivedText(text(#"{"type":"subscribe","list":"a"}"#)) else { return fail() }
        #expect(problemName(m.receivedText(text(#"{"type":"subscribe","list":"a"}"#))) == "already-subscribed")
        guard case .joinFeed = m.receivedText(text(#"{"type":"subscribe","list":"b"}"#)) else { return fail() }
        #expect(problemName(m.receivedText(text(#"{"type":"subscribe","list":"c"}"#))) == "too-many-subscriptions")
        guard case .unsubscribe("a") = m.receivedText(text(#"{"type":"unsubscribe","list":"a"}"#)) else {
            return fail()
        }
        #expect(problemName(m.receivedText(text(#"{"type":"unsubscribe","list":"a"}"#))) == "not-subscribed")
        // A daemon refusal (not 401) ends only that subscription.
        #expect(
            problemName(m.subscriptionRefused(list: "b", problem: Problem.daemon(code: .forbidden, message: "no")))
                == "forbidden")
        #expect(m.subscriptions.isEmpty && m.closeReason == nil)
        guard case .joinFeed = m.receivedText(text(#"{"type":"subscribe","list":"c"}"#)) else { return fail() }
    }

    @Test func writesInFlightAreBoundedAndAnsweredWithAckOrReject() throws {
        var m = machine(token: nil)
        let mutate = #"{"type":"mutate","list":"a","id":"k1","operations":[{"op":"removeAllSections"}]}"#
        guard case .mutate("a", "k1", let id, _, nil) = m.receivedText(text(mutate)) else { return fail() }
        // The POST route's mapping: the same key and token give the same (clientID, seq).
        #expect(id == (try IdempotencyKey.mutationID(key: "k1", scope: IdempotencyKey.subject(ofBearerToken: nil))))
        #expect(problemName(m.receivedText(text(mutate))) == "too-many-writes")
        guard
            case .send(let ack) = m.writeAnswered(
                list: "a", id: "k1", result: .success(ListVersion(epoch: 1, version: 2)))
        else { return fail() }
        #expect(String(decoding: ack, as: UTF8.self).contains(#""type":"ack""#))
        guard case .mutate = m.receivedText(text(mutate)) else { return fail() }
        let refused = m.writeAnswered(
            list: "a", id: "k1", result: .failure(Problem.daemon(code: .conflict, message: "c")))
        #expect(problemName(refused) == "conflict")
    }

    @Test func theOutboundQueueIsBoundedAndASlowBrowserIsClosedWith4008() {
        var m = machine()
        #expect(m.enqueue(byteCount: 40) == .write)
        #expect(m.enqueue(byteCount: 40) == .write)
        #expect(m.enqueue(byteCount: 40) == .close(.tooSlow))  // 120 bytes > 100
        #expect(m.closeReason == .tooSlow && WebSocketCloseReason.tooSlow.code == 4008)
        #expect(m.enqueue(byteCount: 1) == .drop)
        #expect(m.receivedText(text(#"{"type":"subscribe","list":"a"}"#)).isNone)
        var n = machine()
        for _ in 0..<3 { #expect(n.enqueue(byteCount: 1) == .write) }
        n.dequeued(byteCount: 1)
        #expect(n.enqueue(byteCount: 1) == .write)
        #expect(n.enqueue(byteCount: 1) == .close(.tooSlow))  // the fourth message waiting
    }

    @Test func oversizeUnauthorizedAndALostLinkClose() {
        var m = machine()
        let big = #"{"type":"subscribe","list":""# + String(repeating: "x", count: 2000) + #""}"#
        guard case .sendThenClose(_, .messageTooLarge) = m.receivedText(text(big)) else { return fail() }
        #expect(WebSocketCloseReason.messageTooLarge.code == 1009)
        var n = machine()
        guard case .sendThenClose(_, .messageTooLarge) = n.receivedOversizedMessage() else { return fail() }
        var u = machine()
        _ = u.receivedText(text(#"{"type":"subscribe","list":"a"}"#))
        let refused = u.subscriptionRefused(list: "a", problem: Problem.daemon(code: .invalidToken, message: "no"))
        guard case .sendThenClose(_, .unauthorized) = refused else { return fail() }
        var l = machine()
        #expect(l.subscriptionLinkLost().isNone)  // nothing followed: nothing lost
        _ = l.receivedText(text(#"{"type":"subscribe","list":"a"}"#))
        guard case .close(.daemonLinkLost) = l.subscriptionLinkLost() else { return fail() }
        #expect(l.closeReason == .daemonLinkLost)
    }

    @Test func badMessagesCostOneErrorAndTheSessionGoesOn() {
        var m = machine()
        for bad in ["", "{", "[1]", #"{"type":"x"}"#, #"{"type":"subscribe"}"#] {
            #expect(problemName(m.receivedText(text(bad))) != nil, "\(bad)")
        }
        #expect(problemName(m.receivedBinary()) == "binary-message")
        guard case .joinFeed = m.receivedText(text(#"{"type":"subscribe","list":"a"}"#)) else { return fail() }
    }

    private func fail(_ note: String = "unexpected action") { Issue.record(Comment(rawValue: note)) }
}

extension WebSocketSessionMachine.Action {
    var isNone: Bool {
        if case .none = self { return true }
        return false
    }
}
