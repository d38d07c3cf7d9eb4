/// The lifecycle of one TLS connection, as a pure state machine: handshaking →
/// (client: verifying the peer →) established → closing → closed. No OpenSSL, no
/// socket, no clock: the shell (``TLSChannel``) reports what OpenSSL and the socket did
/// as events and carries out the returned action, and the tests drive it event by
/// event (`TLSStateMachineTests`).
///
/// ```
///   handshaking ──handshakeStepped(.completed)──▶ established (server)
///        │                    └──────────────▶ verifyingPeer ──peerVerified(true)──▶ established
///        │                                          └──peerVerified(false)──┐
///        ├─ failure, budget, timeout, EOF ───────────────────────────────────┴──▶ closing ──socketClosed──▶ closed
///   established ──close_notify / closeRequested / failure / EOF──▶ closing
/// ```
///
/// The rules it enforces, each with its reason:
/// 1. **A handshake has a byte budget.** More than ``Configuration/handshakeByteLimit``
///    bytes of ciphertext before the handshake completes end the connection: a real
///    ClientHello and a client's certificate chain take a few KiB, and the budget is
///    what bounds the memory a peer that never finishes can make the server hold
///    (its time is bounded by the deadline, which the shell reports).
/// 2. **A client trusts nothing before the policy said yes.** After the handshake a
///    client verifies the peer (``Action/verifyPeer(_:)``: pins, system trust, the
///    hook); plaintext queued meanwhile (the Hello and its token) waits, and is
///    dropped if the peer is refused.
/// 3. **A server sends no plaintext before the handshake completed.** There is no way
///    to send it: an error frame queued for a connection still in its handshake (a
///    handshake timeout's) is discarded and the connection closes.
/// 4. **Every failure closes**: after a failure, nothing is read or decrypted again; the
///    shell sends the alert OpenSSL queued (if any) and closes the socket.
/// 5. **A peer's close is final**: after `close_notify` the machine answers with its own
///    and closes; a transport that ends without one ends the connection with a reason
///    for the metrics: ``TLSError/Reason/truncated`` inside a record,
///    ``TLSError/Reason/endedWithoutCloseNotify`` between records (what a killed app
///    does), ``TLSError/Reason/closedDuringHandshake`` before the handshake completed.
///
/// Not guaranteed: the machine does not know whether OpenSSL's buffers hold data; the
/// shell asks the session and reports it (`transportEnded(insideRecord:)`).
public struct TLSStateMachine {
    /// Which side of the handshake.
    public enum Role: Sendable, Hashable {
        case server
        case client
    }

    /// The limits of one connection.
    public struct Configuration: Sendable, Hashable {
        /// Ciphertext accepted before the handshake completes (rule 1). Default 64 KiB.
        public var handshakeByteLimit: Int = 64 << 10

        public init(handshakeByteLimit: Int = 64 << 10) {
            self.handshakeByteLimit = handshakeByteLimit
        }
    }

    /// What the shell must do.
    public enum Action: Equatable {
        /// Nothing.
        case none
        /// Run the handshake on what was fed, and report ``handshakeStepped(_:)``.
        case continueHandshake
        /// Decrypt what was fed, deliver the plaintext, and report ``readStepped(_:)``.
        case readPlaintext
        /// Encrypt this plaintext and send it.
        case encrypt
        /// Drop this plaintext: it can never be sent (rule 3, or the connection is closing).
        case discard
        /// (Client) ask the policy about the peer's chain, answer ``peerVerified(_:)``.
        case verifyPeer(TLSConnectionInfo)
        /// The handshake is done: report it, encrypt and send `queued` (rule 2), then
        /// decrypt what was fed after the handshake's last message.
        case established(TLSConnectionInfo, queued: [[UInt8]])
        /// Send what OpenSSL queued (an alert), close the socket, report the failure.
        case fail(TLSError)
        /// Send a `close_notify` (once established), then close the socket.
        case closeGracefully
        /// Close the socket: there is nothing to say (a local close during the handshake).
        case closeSocket
    }

    private enum State {
        case handshaking(Handshaking)
        case verifyingPeer(VerifyingPeer)
        case established(Established)
        case closing(Closing)
        case closed(Closing)
    }

    /// Bytes of the handshake so far, and (client) plaintext waiting for it.
    private struct Handshaking {
        var ciphertextBytes = 0
        var queued: [[UInt8]] = []
    }

    /// (Client) the handshake completed; the policy is being asked.
    private struct VerifyingPeer {
        var info: TLSConnectionInfo
        var queued: [[UInt8]]
    }

    private struct Established {
        var info: TLSConnectionInfo
    }

    /// Why the connection is going away: `failure` is `nil` for an orderly close
    /// (either side's `close_notify`, or the local side closing).
    private struct Closing {
        var failure: TLSError?
    }

    private var state = State.handshaking(Handshaking())
    public let role: Role
    public let configuration: Configuration

    public init(role: Role, configuration: Configuration = Configuration()) {
        self.role = role
        self.configuration = configuration
    }

    // MARK: Reading the state

    /// The handshake's facts, once established.
    public var info: TLSConnectionInfo? {
        if case .established(let established) = state { return established.info }
        return nil
    }

    public var isEstablished: Bool { info != nil }

    /// The phase, without its data.
    public enum Phase: Sendable, Hashable {
        case handshaking, verifyingPeer, established, closing, closed
    }

    public var phase: Phase {
        switch state {
        case .handshaking: return .handshaking
        case .verifyingPeer: return .verifyingPeer
        case .established: return .established
        case .closing: return .closing
        case .closed: return .closed
        }
    }

    /// Whether the handshake has not completed (verifying the peer included).
    public var isHandshaking: Bool {
        switch state {
        case .handshaking, .verifyingPeer: return true
        case .established, .closing, .closed: return false
        }
    }

    /// Whether the connection is going away or gone.
    public var isClosing: Bool {
        switch state {
        case .closing, .closed: return true
        case .handshaking, .verifyingPeer, .established: return false
        }
    }

    /// The failure that ended the connection, if one did.
    public var failure: TLSError? {
        switch state {
        case .closing(let closing), .closed(let closing): return closing.failure
        default: return nil
        }
    }

    // MARK: Events

    /// The socket delivered `count` bytes of ciphertext (already fed to the session).
    public mutating func ciphertextReceived(count: Int) -> Action {
        switch state {
        case .handshaking(var handshaking):
            handshaking.ciphertextBytes += count
            if handshaking.ciphertextBytes > configuration.handshakeByteLimit {
                return fail(
                    .connection(
                        .handshakeTooLarge,
                        "\(handshaking.ciphertextBytes) bytes before the handshake completed (limit \(configuration.handshakeByteLimit))"
                    ))
            }
            state = .handshaking(handshaking)
            return .continueHandshake
        case .verifyingPeer:
            // The shell answers verifyPeer before it reads again (one thread, no wait).
            preconditionFailure(
                "Internal inconsistency in TLSStateMachine: bytes read while the peer was being verified")
        case .established:
            return .readPlaintext
        case .closing, .closed:
            return .none
        }
    }

    /// The handshake advanced (the answer to ``Action/continueHandshake``).
    public mutating func handshakeStepped(_ step: TLSSession.HandshakeStep) -> Action {
        guard case .handshaking(let handshaking) = state else {
            preconditionFailure("Internal inconsistency in TLSStateMachine: a handshake step outside the handshake")
        }
        switch step {
        case .wantsMore:
            return .none
        case .failed(let error):
            return fail(error)
        case .completed(let info):
            switch role {
            case .server:
                state = .established(Established(info: info))
                return .established(info, queued: [])
            case .client:
                state = .verifyingPeer(VerifyingPeer(info: info, queued: handshaking.queued))
                return .verifyPeer(info)
            }
        }
    }

    /// (Client) the policy's verdict on the peer (the answer to ``Action/verifyPeer(_:)``):
    /// `nil` accepts, an error refuses.
    public mutating func peerVerified(_ refusal: TLSError?) -> Action {
        guard case .verifyingPeer(let verifying) = state else {
            preconditionFailure("Internal inconsistency in TLSStateMachine: a verdict nobody asked for")
        }
        if let refusal {
            // Rule 2: the queued plaintext (a token) never leaves.
            return fail(refusal)
        }
        state = .established(Established(info: verifying.info))
        return .established(verifying.info, queued: verifying.queued)
    }

    /// Plaintext was decrypted (the answer to ``Action/readPlaintext``).
    public mutating func readStepped(_ step: TLSSession.ReadStep) -> Action {
        guard case .established = state else {
            // A read runs only while established; a close from inside a delivery
            // (the application closed) makes it end here.
            if isClosing { return .none }
            preconditionFailure("Internal inconsistency in TLSStateMachine: a read before the handshake completed")
        }
        switch step {
        case .wantsMore:
            return .none
        case .closeNotify:
            state = .closing(Closing(failure: nil))
            return .closeGracefully
        case .failed(let error):
            return fail(error)
        }
    }

    /// The application wants to send plaintext.
    public mutating func plaintextQueued(_ bytes: [UInt8]) -> Action {
        switch state {
        case .handshaking(var handshaking):
            guard role == .client else { return .discard }  // rule 3
            handshaking.queued.append(bytes)
            state = .handshaking(handshaking)
            return .none
        case .verifyingPeer(var verifying):
            verifying.queued.append(bytes)
            state = .verifyingPeer(verifying)
            return .none
        case .established:
            return .encrypt
        case .closing, .closed:
            return .discard
        }
    }

    /// Encrypting plaintext failed (a broken session): nothing more can be sent.
    public mutating func writeFailed(_ error: TLSError) -> Action {
        guard !isClosing else { return .none }
        return fail(error)
    }

    /// The handshake deadline passed (reported by the shell, which owns the clock).
    public mutating func handshakeTimedOut() -> Action {
        guard isHandshaking else { return .none }
        return fail(.connection(.timeout, "the handshake did not complete in time"))
    }

    /// The socket ended (EOF or an error). `insideRecord`: the session holds part of a
    /// record whose rest never came.
    public mutating func transportEnded(insideRecord: Bool) -> Action {
        switch state {
        case .handshaking, .verifyingPeer:
            return fail(.connection(.closedDuringHandshake, "the peer closed the connection during the handshake"))
        case .established:
            if insideRecord {
                return fail(.connection(.truncated, "the connection ended inside a record"))
            }
            return fail(.connection(.endedWithoutCloseNotify, "the connection ended without close_notify"))
        case .closing(let closing):
            // Closing already: the shell is closing the socket.
            state = .closed(closing)
            return .none
        case .closed:
            return .none
        }
    }

    /// The local side closes (the application, the server's close of the connection).
    public mutating func closeRequested() -> Action {
        switch state {
        case .handshaking, .verifyingPeer:
            state = .closing(Closing(failure: nil))
            return .closeSocket
        case .established:
            state = .closing(Closing(failure: nil))
            return .closeGracefully
        case .closing, .closed:
            return .none
        }
    }

    /// The socket is closed: nothing more happens.
    public mutating func socketClosed() {
        switch state {
        case .closing(let closing), .closed(let closing):
            state = .closed(closing)
        case .handshaking, .verifyingPeer:
            state = .closed(Closing(failure: nil))
        case .established:
            state = .closed(Closing(failure: nil))
        }
    }

    private mutating func fail(_ error: TLSError) -> Action {
        state = .closing(Closing(failure: error))
        return .fail(error)
    }
}
