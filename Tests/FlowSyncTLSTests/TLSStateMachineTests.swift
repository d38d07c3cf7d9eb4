import FlowSyncTLS
import Testing

/// The TLS lifecycle without OpenSSL or a socket, event by event (docs/TESTING.md):
/// every event in every state with the exact action.
@Suite(.timeLimit(.minutes(2)))
struct TLSStateMachineTests {
    static let info = TLSConnectionInfo(
        protocolVersion: "TLSv1.3", cipher: "TLS_AES_128_GCM_SHA256",
        applicationProtocol: "flowsync", peerSubject: "CN=localhost",
        peerCertificateExpiry: 2_000_000_000, peerChainSHA256: [[1, 2]],
        peerVerification: .trusted)
    static let broken = TLSError.connection(.notTLS, "wrong version number")

    @Test func serverHandshakeThenRecords() {
        var machine = TLSStateMachine(role: .server)
        #expect(machine.isHandshaking && !machine.isEstablished)
        #expect(machine.ciphertextReceived(count: 300) == .continueHandshake)
        #expect(machine.handshakeStepped(.wantsMore) == .none)
        #expect(machine.ciphertextReceived(count: 80) == .continueHandshake)
        #expect(machine.handshakeStepped(.completed(Self.info)) == .established(Self.info, queued: []))
        #expect(machine.isEstablished && machine.info == Self.info)
        #expect(machine.ciphertextReceived(count: 100) == .readPlaintext)
        #expect(machine.readStepped(.wantsMore) == .none)
        #expect(machine.plaintextQueued([1, 2, 3]) == .encrypt)
    }

    @Test func serverNeverQueuesPlaintextBeforeTheHandshake() {
        // Rule 3: a handshake timeout's error frame cannot be sent in clear.
        var machine = TLSStateMachine(role: .server)
        #expect(machine.plaintextQueued([9]) == .discard)
        #expect(machine.handshakeTimedOut() == .fail(.connection(.timeout, "the handshake did not complete in time")))
        #expect(machine.failure?.reason == .timeout)
        #expect(machine.plaintextQueued([9]) == .discard)
        #expect(machine.ciphertextReceived(count: 10) == .none)
    }

    @Test func clientQueuesUntilThePolicyAccepts() {
        var machine = TLSStateMachine(role: .client)
        #expect(machine.ciphertextReceived(count: 0) == .continueHandshake)  // the ClientHello
        #expect(machine.handshakeStepped(.wantsMore) == .none)
        #expect(machine.plaintextQueued([1]) == .none)
        #expect(machine.ciphertextReceived(count: 900) == .continueHandshake)
        #expect(machine.handshakeStepped(.completed(Self.info)) == .verifyPeer(Self.info))
        #expect(machine.isHandshaking)
        #expect(machine.plaintextQueued([2]) == .none)
        #expect(machine.peerVerified(nil) == .established(Self.info, queued: [[1], [2]]))
        #expect(machine.plaintextQueued([3]) == .encrypt)
    }

    @Test func clientRefusalDropsTheQueuedToken() {
        var machine = TLSStateMachine(role: .client)
        _ = machine.ciphertextReceived(count: 0)
        #expect(machine.plaintextQueued(Array("hello with a token".utf8)) == .none)
        _ = machine.handshakeStepped(.completed(Self.info))
        let refusal = TLSError.connection(.pinMismatch, "no pinned certificate")
        #expect(machine.peerVerified(refusal) == .fail(refusal))
        #expect(machine.isClosing && !machine.isEstablished)
        #expect(machine.plaintextQueued([1]) == .discard)
    }

    @Test func handshakeBytesAreBudgeted() {
        var machine = TLSStateMachine(role: .server, configuration: .init(handshakeByteLimit: 1_000))
        #expect(machine.ciphertextReceived(count: 600) == .continueHandshake)
        _ = machine.handshakeStepped(.wantsMore)
        #expect(machine.ciphertextReceived(count: 400) == .continueHandshake)  // exactly the limit
        _ = machine.handshakeStepped(.wantsMore)
        guard case .fail(let error) = machine.ciphertextReceived(count: 1) else {
            Issue.record("the byte past the budget did not fail")
            return
        }
        #expect(error.reason == .handshakeTooLarge)
        // Once failed, bytes are ignored and nothing is read.
        #expect(machine.ciphertextReceived(count: 100) == .none)
    }

    @Test func handshakeFailureCloses() {
        var machine = TLSStateMachine(role: .server)
        _ = machine.ciphertextReceived(count: 5)
        #expect(machine.handshakeStepped(.failed(Self.broken)) == .fail(Self.broken))
        #expect(machine.failure == Self.broken)
        #expect(machine.transportEnded(insideRecord: false) == .none)
        #expect(machine.handshakeTimedOut() == .none)
    }

    @Test func peerCloseNotifyIsAnsweredAndFinal() {
        var machine = Self.established(.server)
        #expect(machine.readStepped(.closeNotify) == .closeGracefully)
        #expect(machine.isClosing && machine.failure == nil)
        #expect(machine.ciphertextReceived(count: 10) == .none)
        #expect(machine.closeRequested() == .none)
        #expect(machine.transportEnded(insideRecord: false) == .none)
    }

    @Test func endWithoutCloseNotifyIsTruncation() {
        var whole = Self.established(.server)
        guard case .fail(let clean) = whole.transportEnded(insideRecord: false) else {
            Issue.record("no failure")
            return
        }
        #expect(clean.reason == .endedWithoutCloseNotify)
        var midRecord = Self.established(.client)
        guard case .fail(let cut) = midRecord.transportEnded(insideRecord: true) else {
            Issue.record("no failure")
            return
        }
        #expect(cut.reason == .truncated && "\(cut)".contains("inside a record"))
    }

    @Test func endDuringHandshake() {
        var machine = TLSStateMachine(role: .server)
        _ = machine.ciphertextReceived(count: 3)
        guard case .fail(let error) = machine.transportEnded(insideRecord: true) else {
            Issue.record("no failure")
            return
        }
        #expect(error.reason == .closedDuringHandshake)
    }

    @Test func localClose() {
        var handshaking = TLSStateMachine(role: .client)
        #expect(handshaking.closeRequested() == .closeSocket)
        #expect(handshaking.isClosing)
        var established = Self.established(.server)
        #expect(established.closeRequested() == .closeGracefully)
        #expect(established.closeRequested() == .none)
        #expect(established.readStepped(.wantsMore) == .none)  // a read ending after the close
    }

    @Test func readAndWriteFailures() {
        var machine = Self.established(.server)
        let renegotiation = TLSError.connection(.renegotiation, "asked")
        #expect(machine.readStepped(.failed(renegotiation)) == .fail(renegotiation))
        #expect(machine.writeFailed(Self.broken) == .none)
        var writer = Self.established(.client)
        #expect(writer.writeFailed(Self.broken) == .fail(Self.broken))
    }

    @Test func socketClosedFromEveryState() {
        var a = TLSStateMachine(role: .server)
        a.socketClosed()
        #expect(a.isClosing && a.failure == nil)
        var b = Self.established(.server)
        b.socketClosed()
        #expect(b.isClosing)
        var c = TLSStateMachine(role: .server)
        _ = c.handshakeTimedOut()
        c.socketClosed()
        #expect(c.failure?.reason == .timeout)
    }

    static func established(_ role: TLSStateMachine.Role) -> TLSStateMachine {
        var machine = TLSStateMachine(role: role)
        _ = machine.ciphertextReceived(count: 10)
        _ = machine.handshakeStepped(.completed(info))
        if role == .client { _ = machine.peerVerified(nil) }
        return machine
    }
}
