/// What a ``TLSChannel`` needs from its owner: a socket to write ciphertext to and a
/// consumer for plaintext. A protocol instead of stored closures, so the channel holds
/// no closure context per connection, and the owner's implementation (a small struct
/// holding references) is called directly, specialized, on the hot path.
public protocol TLSChannelIO {
    /// Write these ciphertext bytes to the socket, in order (valid only during the call:
    /// copy what the socket does not take at once).
    mutating func sendCiphertext(_ bytes: UnsafeRawBufferPointer)
    /// Plaintext received (valid only during the call).
    mutating func deliverPlaintext(_ bytes: UnsafeRawBufferPointer)
    /// The handshake completed (the client's policy accepted the peer); called before
    /// the first plaintext is delivered.
    mutating func handshakeCompleted(_ info: TLSConnectionInfo)
    /// (Clients) decide on the server's chain: `nil` accepts, an error refuses.
    mutating func verifyPeer(_ info: TLSConnectionInfo) -> TLSError?
    /// The channel ended (`failure` is `nil` for an orderly close): everything it had to
    /// say was given to ``sendCiphertext(_:)``; close the socket after it is written.
    /// Called once.
    mutating func channelEnded(_ failure: TLSError?)
}

extension TLSChannelIO {
    /// Servers do not verify a peer beyond what OpenSSL did (a client certificate).
    public mutating func verifyPeer(_ info: TLSConnectionInfo) -> TLSError? { nil }
}

/// TLS over any byte stream: the I/O shell of a ``TLSStateMachine`` around a
/// ``TLSSession``. The owner (a daemon's connection, a client transport) hands it the
/// ciphertext its socket read and the plaintext it wants to send; the channel gives
/// back ciphertext and plaintext through a ``TLSChannelIO``. Loop-confined, no thread,
/// no socket of its own.
///
/// Encode once still holds above it: the daemon hands every subscriber the same frame
/// buffers, and only this per-connection encryption differs.
///
/// **Two record layers.** A server whose context says so
/// (``TLSContext/RecordLayer/flowSync``) leaves OpenSSL at the end of a TLS 1.3
/// handshake: ``TLSRecordSwitch`` decides, the session's traffic secrets and unread
/// ciphertext go to a ``TLSRecordLayer``, and the `SSL` is freed. Every other
/// connection (clients, TLS 1.2, a switch refused) keeps OpenSSL's.
public final class TLSChannel {
    /// OpenSSL's session: during the handshake always, after it unless the records
    /// were handed over (then `nil`: the `SSL` is freed).
    private(set) var session: TLSSession?
    /// The daemon's own record layer, once the session handed the records over.
    private var records: TLSRecordLayer?
    public private(set) var machine: TLSStateMachine
    private let scratch: TLSScratch

    /// A channel of `context`'s role; `serverName` as ``TLSSession/init(context:serverName:)``.
    public init(
        context: TLSContext, serverName: String? = nil,
        configuration: TLSStateMachine.Configuration = .init(), scratch: TLSScratch
    ) throws(TLSError) {
        session = try TLSSession(context: context, serverName: serverName)
        machine = TLSStateMachine(role: context.isServer ? .server : .client, configuration: configuration)
        self.scratch = scratch
    }

    /// The handshake's facts, once established.
    public var info: TLSConnectionInfo? { machine.info }
    public var isEstablished: Bool { machine.isEstablished }
    public var isClosing: Bool { machine.isClosing }
    /// Whether the records are the daemon's own (``TLSRecordLayer``), not OpenSSL's.
    public var usesOwnRecordLayer: Bool { records != nil }

    /// (Clients) starts the handshake: the ClientHello goes out.
    public func start<IO: TLSChannelIO>(_ io: inout IO) {
        perform(machine.ciphertextReceived(count: 0), &io)
    }

    /// Ciphertext the socket read.
    ///
    /// `stepsHandshake: false` (an owner pacing a burst of handshakes over loop turns):
    /// during the handshake the bytes are only buffered and counted against the
    /// handshake's byte budget; the owner runs the step later with
    /// ``continueHandshake(_:)``. Once established it makes no difference.
    public func received<IO: TLSChannelIO>(
        _ ciphertext: UnsafeRawBufferPointer, _ io: inout IO, stepsHandshake: Bool = true
    ) {
        var offset = 0
        // Fed a chunk at a time, each decrypted before the next is fed: the input BIO
        // never holds more than a chunk and a partial record.
        while offset < ciphertext.count, !machine.isClosing {
            // The handshake may have completed on the previous chunk and handed the
            // records over: the rest goes to the own record layer.
            if records != nil {
                receivedRecords(UnsafeRawBufferPointer(rebasing: ciphertext[offset...]), &io)
                return
            }
            guard let session else { return }
            let end = min(ciphertext.count, offset + TLSSession.chunk)
            session.feed(UnsafeRawBufferPointer(rebasing: ciphertext[offset..<end]))
            let action = machine.ciphertextReceived(count: end - offset)
            if action != .continueHandshake || stepsHandshake { perform(action, &io) }
            offset = end
        }
        if !machine.isClosing { session?.releaseIdleBuffers() }
    }

    /// Ciphertext for the own record layer (established only).
    private func receivedRecords<IO: TLSChannelIO>(_ ciphertext: UnsafeRawBufferPointer, _ io: inout IO) {
        guard let records, machine.phase == .established else { return }
        let step = records.received(
            ciphertext, scratch: scratch.decrypted, send: { io.sendCiphertext($0) }, output: scratch.ciphertext,
            deliver: { plaintext in
                io.deliverPlaintext(plaintext)
                // The owner may have closed the channel while handling it.
                return !machine.isClosing
            })
        perform(machine.readStepped(step), &io)
    }

    /// Runs the handshake on what was buffered by ``received(_:_:stepsHandshake:)``
    /// without a step; nothing when the handshake is over.
    public func continueHandshake<IO: TLSChannelIO>(_ io: inout IO) {
        guard case .handshaking = machine.phase else { return }
        perform(.continueHandshake, &io)
    }

    /// Encrypts and sends `frames` in order (queued until the handshake completes on a
    /// client; dropped on a server still in its handshake, or while closing). Small
    /// frames are gathered so that a turn's frames become as few records as possible.
    /// - Returns: whether the frames were (or will be) sent.
    @discardableResult
    public func send<IO: TLSChannelIO>(_ frames: [[UInt8]], _ io: inout IO) -> Bool {
        if let records {
            // The own record layer seals the frames itself (TLSRecordLayer, rule 1).
            guard machine.phase == .established else { return false }
            guard records.seal(frames, output: scratch.ciphertext, send: { io.sendCiphertext($0) }) else {
                perform(machine.writeFailed(.connection(.other, "the write sequence number ran out")), &io)
                return false
            }
            return true
        }
        var gathered = 0
        var sent = true
        for frame in frames where !frame.isEmpty {
            switch machine.plaintextQueued(frame) {
            case .encrypt:
                if gathered + frame.count > scratch.gathered.count {
                    guard encrypt(UnsafeRawBufferPointer(rebasing: scratch.gathered[..<gathered]), &io) else {
                        return false
                    }
                    gathered = 0
                }
                if frame.count > scratch.gathered.count / 2 {
                    // A large frame is encrypted from its own storage, a chunk at a time.
                    let ok = frame.withUnsafeBytes { bytes in
                        var offset = 0
                        while offset < bytes.count {
                            let end = min(bytes.count, offset + TLSSession.chunk)
                            guard encrypt(UnsafeRawBufferPointer(rebasing: bytes[offset..<end]), &io) else {
                                return false
                            }
                            offset = end
                        }
                        return true
                    }
                    guard ok else { return false }
                } else {
                    frame.withUnsafeBytes { bytes in
                        (scratch.gathered.baseAddress! + gathered).copyMemory(
                            from: bytes.baseAddress!, byteCount: bytes.count)
                    }
                    gathered += frame.count
                }
            case .none:
                break  // queued until established (a client's Hello)
            case .discard:
                sent = false
            default:
                preconditionFailure("Internal inconsistency in TLSChannel: plaintextQueued returned another action")
            }
        }
        if gathered > 0 {
            guard encrypt(UnsafeRawBufferPointer(rebasing: scratch.gathered[..<gathered]), &io) else { return false }
        }
        return sent
    }

    /// Closes: a `close_notify` when established, then ``TLSChannelIO/channelEnded(_:)``.
    public func close<IO: TLSChannelIO>(_ io: inout IO) {
        perform(machine.closeRequested(), &io)
    }

    /// The socket ended (EOF or an error) before the channel did.
    public func transportEnded<IO: TLSChannelIO>(_ io: inout IO) {
        let insideRecord = records?.holdsPartialRecord ?? session?.holdsPartialRecord ?? false
        perform(machine.transportEnded(insideRecord: insideRecord), &io)
    }

    /// The owner's handshake deadline passed.
    public func handshakeTimedOut<IO: TLSChannelIO>(_ io: inout IO) {
        perform(machine.handshakeTimedOut(), &io)
    }

    /// Frees the session's grown, empty buffers (``TLSSession/releaseIdleBuffers(threshold:)``):
    /// call after a flush, so an idle connection keeps none of a burst.
    public func releaseIdleBuffers() {
        session?.releaseIdleBuffers()
    }

    /// The socket is closed.
    public func socketClosed() {
        machine.socketClosed()
    }

    /// Tests only: a hostile TLS 1.2 client asks to renegotiate (its context must allow it).
    @_spi(Testing) public func requestRenegotiation<IO: TLSChannelIO>(_ io: inout IO) {
        session?.requestRenegotiation()
        drain(&io)
    }

    /// Tests only: a client sends a KeyUpdate (OpenSSL's record layer only).
    @_spi(Testing) public func requestKeyUpdate<IO: TLSChannelIO>(askingPeer: Bool, _ io: inout IO) {
        session?.requestKeyUpdate(askingPeer: askingPeer)
        drain(&io)
    }

    // MARK: Carrying out the machine's actions

    private func perform<IO: TLSChannelIO>(_ action: TLSStateMachine.Action, _ io: inout IO) {
        switch action {
        case .none, .discard, .encrypt:
            break
        case .continueHandshake:
            guard let session else {
                preconditionFailure("Internal inconsistency in TLSChannel: a handshake step without a session")
            }
            let step = session.handshake()
            // Whatever the step, OpenSSL may have produced bytes: the next flight, or
            // the alert of a failure. They leave before anything else happens.
            drain(&io)
            perform(machine.handshakeStepped(step), &io)
        case .verifyPeer(let info):
            perform(machine.peerVerified(io.verifyPeer(info)), &io)
        case .established(let info, let queued):
            // The switch comes first, before the owner hears of the handshake: once it
            // knows, it may send, and a record written by OpenSSL would move the write
            // sequence the new layer starts at 0 (TLSRecordSwitch, rule 6).
            let unread = handOverRecordsIfDecided()
            io.handshakeCompleted(info)
            if let unread {
                if !queued.isEmpty, !machine.isClosing { send(queued, &io) }
                // The client's first records may have come with its Finished.
                if !unread.isEmpty, !machine.isClosing { unread.withUnsafeBytes { receivedRecords($0, &io) } }
                return
            }
            if !queued.isEmpty { send(queued, &io) }
            // The peer's first records may have come with its last handshake message
            // (TLS 1.3: a client's Finished and its Hello in one segment).
            if let session, session.bufferedCiphertext > 0, !machine.isClosing { perform(.readPlaintext, &io) }
        case .readPlaintext:
            guard let session else { return }
            let step = session.read(into: scratch.decrypted) { io.deliverPlaintext($0) }
            drain(&io)  // a KeyUpdate's answer, an alert
            perform(machine.readStepped(step), &io)
        case .fail(let error):
            drain(&io)
            io.channelEnded(error)
        case .closeGracefully:
            if let records {
                records.sendAlert(
                    .closeNotify, fatal: false, send: { io.sendCiphertext($0) }, output: scratch.ciphertext)
            } else {
                session?.shutdown()
                drain(&io)
            }
            io.channelEnded(nil)
        case .closeSocket:
            io.channelEnded(nil)
        }
    }

    /// Encrypts one chunk and sends it. A failed write ends the channel.
    private func encrypt<IO: TLSChannelIO>(_ plaintext: UnsafeRawBufferPointer, _ io: inout IO) -> Bool {
        guard let session else { return false }
        if let error = session.write(plaintext) {
            perform(machine.writeFailed(error), &io)
            return false
        }
        drain(&io)
        return true
    }

    /// Hands the records over to the own layer when ``TLSRecordSwitch`` says so: the
    /// secrets and the unread ciphertext leave the session, which is then freed.
    /// - Returns: The unread ciphertext (possibly empty) when the records were handed
    ///   over; `nil` when the connection stays on OpenSSL.
    private func handOverRecordsIfDecided() -> [UInt8]? {
        guard let session, session.context.recordLayer == .flowSync else { return nil }
        guard case .switchTo(let suite) = TLSRecordSwitch.decide(session.recordSwitchFacts()) else { return nil }
        let unread = session.takeUnreadCiphertext()
        let secrets = session.takeTrafficSecrets()
        records = TLSRecordLayer(
            suite: suite, clientSecret: secrets.client, serverSecret: secrets.server, counts: scratch.records)
        // The last reference: SSL_free, its BIOs and its ~17 KB go now.
        self.session = nil
        return unread
    }

    private func drain<IO: TLSChannelIO>(_ io: inout IO) {
        guard let session, session.pendingCiphertext > 0 else { return }
        session.drainCiphertext(through: scratch.ciphertext) { io.sendCiphertext($0) }
    }
}
