import FlowSyncCore
import FlowSyncLoop
import FlowSyncTLS
import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// TLS on the TCP listener (issue #32): the context at start and at a reload, a
/// channel per accepted connection, and the read side — ciphertext from the socket,
/// through the connection's ``TLSChannel``, plaintext to the decoder. The write side is
/// `Connection+TLS.swift`; what is counted is ``TLSEvents``.
///
/// **The handshake is part of the pre-auth phase.** A TLS connection is accepted under
/// the same cap (`auth.max_pending_handshakes`) and deadline (`limits.handshake_timeout_ms`,
/// counted from accept) as a plaintext one: it stays "pending" until its Welcome, and
/// the TLS handshake happens before the Hello can even be read. A slow or broken
/// ClientHello costs its own connection only: at most `tls.max_handshake_bytes` of
/// buffered ciphertext, one slot of the cap, until the deadline.
extension Server {
    /// The TLS counters, when the listener speaks TLS.
    public var tlsStatistics: TLSStatistics? {
        guard let tls else { return nil }
        var statistics = tls.events.statistics
        // Exact now, not as of the last sweep.
        statistics.recordsSealed = tls.scratch.records.sealed
        statistics.recordsOpened = tls.scratch.records.opened
        return statistics
    }

    /// Decides what the TCP listener on `host` speaks and loads the certificate pair.
    func startTLS(listenHost host: String) throws(ServerStartError) {
        if let (key, problem) = configuration.tls.validate(host: host) {
            throw .tls("\(key): \(problem) (listening on \(host))")
        }
        switch configuration.tls.effectiveMode(host: host) {
        case .off:
            tls = nil
            if !AuthConfiguration.isLoopback(host) {
                logger.warning(
                    "TLS is OFF on a non-loopback address (tls.allow_plaintext_beyond_loopback): tokens and lists cross the network in clear text",
                    metadata: ["host": "\(host)"])
            }
        case .required:
            guard let options = configuration.tls.serverOptions else {
                preconditionFailure("Internal inconsistency in Server: TLS required without files after validation")
            }
            let context: TLSContext
            do {
                context = try TLSContext.server(options)
            } catch {
                throw .tls("\(error)")
            }
            let room = ServerTLS(context: context, configuration: configuration.tls)
            room.start(loop: loop) { [weak self] in self?.runWaitingHandshakes() }
            tls = room
            logger.info("TLS on the listener", metadata: Self.describe(context, configuration.tls))
        }
    }

    /// A reload (SIGHUP): the pair is read again even when its paths did not change (a
    /// renewed certificate keeps them). New handshakes use the new pair; connections
    /// keep the one they were made with. A pair that does not load is refused, with
    /// the file named, and everything of `[tls]` stays as it ran.
    /// - Returns: The `[tls]` now in force, and the lines for the reload's report.
    func reloadTLS(to new: TLSConfiguration) -> (applied: TLSConfiguration, changes: [String]) {
        guard let tls else {
            // A plaintext listener: no pair to load (the mode itself needs a restart).
            return (new, [])
        }
        guard let options = new.serverOptions else {
            tls.events.refused()
            logger.error("reload: [tls] has no certificate_file or key_file; the running certificate stays")
            return (
                configuration.tls, ["tls: refused (no certificate_file or key_file), the running certificate stays"]
            )
        }
        do {
            let context = try TLSContext.server(options)
            tls.replace(context, configuration: new)
            logger.notice("reload: TLS certificate loaded", metadata: Self.describe(context, new))
            return (
                new,
                [
                    "tls: certificate \(context.certificateSubject ?? "?") expiring \(Self.date(context.certificateExpiry))"
                ]
            )
        } catch {
            tls.events.refused()
            logger.error("reload: TLS certificate refused, the running one stays", metadata: ["error": "\(error)"])
            return (configuration.tls, ["tls: refused (\(error)), the running certificate stays"])
        }
    }

    /// A connection accepted on the TCP listener gets a channel from the current
    /// context, and its socket's reads and end go through it. The Unix socket stays
    /// plaintext (``TLSConfiguration/Mode``).
    func attachTLS(to connection: Connection, tcp: TCPConnection) {
        guard let tls, !tcp.isUnixSocket else { return }
        do {
            connection.tls = try TLSChannel(
                context: tls.context, configuration: tls.channelConfiguration, scratch: tls.scratch)
        } catch {
            // Only out of memory: the connection goes as if the peer had left.
            connection.logger.error("TLS session not created", metadata: ["error": "\(error)"])
            tls.events.failed(error.reason)
            tcp.onRead = nil
            return
        }
        tcp.onRead = { [weak self, weak connection] bytes in
            guard let self, let connection else { return }
            receivedCiphertext(bytes, on: connection)
        }
        tcp.onEnd = { [weak self, weak connection] error in
            guard let self, let connection else { return }
            tlsTransportEnded(connection, error)
        }
    }

    /// A handshake timed out (the connection machine's deadline): counted as a TLS
    /// failure when the TLS handshake itself had not completed.
    func tlsHandshakeTimedOut(_ connection: Connection) {
        guard let channel = connection.tls, channel.machine.isHandshaking else { return }
        var io = Connection.TLSWriter(tcp: connection.tcp)
        channel.handshakeTimedOut(&io)
        tls?.events.failed(.timeout)
    }

    // MARK: The read side

    /// The ``TLSChannelIO`` of the read path: ciphertext to the socket, plaintext to the
    /// decoder, the handshake's facts and the channel's end to the server. Unowned: it
    /// lives for one call, while the server and the connection are held by it.
    struct TLSReader: TLSChannelIO {
        unowned let server: Server
        unowned let connection: Connection
        /// The socket ended: the end is counted, and the peer's end does the rest.
        var transportEnded = false
        private(set) var writeError: UVError?

        mutating func sendCiphertext(_ bytes: UnsafeRawBufferPointer) {
            guard writeError == nil else { return }
            do {
                try connection.tcp.write(bytes: bytes)
            } catch {
                writeError = error
            }
        }

        mutating func deliverPlaintext(_ bytes: UnsafeRawBufferPointer) {
            server.received(bytes, on: connection)
        }

        mutating func handshakeCompleted(_ info: TLSConnectionInfo) {
            server.tlsHandshakeCompleted(connection, info)
        }

        mutating func channelEnded(_ failure: TLSError?) {
            server.tlsChannelEnded(connection, failure, transportEnded: transportEnded)
        }
    }

    private func receivedCiphertext(_ bytes: UnsafeRawBufferPointer, on connection: Connection) {
        guard let channel = connection.tls, !channel.isClosing, let tls else { return }
        var io = TLSReader(server: self, connection: connection)
        if channel.machine.isHandshaking {
            // A handshake step is paced (``HandshakePacer``): run now within the turn's
            // budget, or buffered and run from the line in a later turn.
            if tls.pacer.mayStep(connection.id) {
                let started = outbox.clock()
                channel.received(bytes, &io)
                tls.pacer.stepped(nanoseconds: outbox.clock() &- started)
            } else {
                channel.received(bytes, &io, stepsHandshake: false)
                if channel.machine.isHandshaking { tls.pacer.wait(connection.id) }
                tls.keepsTurning(true)
            }
        } else {
            channel.received(bytes, &io)
        }
        if let error = io.writeError { peerEnded(connection, error) }
    }

    /// Every turn, before the poll: a fresh budget, spent first on the handshakes that
    /// waited (``HandshakePacer``, rule 2).
    private func runWaitingHandshakes() {
        guard let tls else { return }
        tls.pacer.turnStarted()
        while let id = tls.pacer.next() {
            guard let connection = connections[id], let channel = connection.tls, channel.machine.isHandshaking else {
                continue
            }
            var io = TLSReader(server: self, connection: connection)
            let started = outbox.clock()
            channel.continueHandshake(&io)
            tls.pacer.stepped(nanoseconds: outbox.clock() &- started)
            if let error = io.writeError { peerEnded(connection, error) }
        }
        tls.keepsTurning(tls.pacer.hasWaiting)
    }

    private func tlsTransportEnded(_ connection: Connection, _ error: UVError?) {
        if let channel = connection.tls, !channel.isClosing {
            var io = TLSReader(server: self, connection: connection, transportEnded: true)
            channel.transportEnded(&io)
        }
        peerEnded(connection, error)
    }

    fileprivate func tlsHandshakeCompleted(_ connection: Connection, _ info: TLSConnectionInfo) {
        tls?.events.handshakeCompleted(version: info.protocolVersion)
        if let subject = info.peerSubject, info.peerVerification == .trusted,
            let principal = configuration.tls.principal(forSubject: subject)
        {
            // The certificate authenticates the connection: its grant, until it expires.
            connection.machine.transportAuthenticated(
                AccessGrant(
                    subject: principal.name, read: principal.read, write: principal.write,
                    expiresAt: info.peerCertificateExpiry))
            tls?.events.principalAuthenticated()
        }
        connection.logger.debug(
            "TLS established",
            metadata: [
                "version": "\(info.protocolVersion)", "cipher": "\(info.cipher)",
                "alpn": "\(info.applicationProtocol ?? "none")", "client_certificate": "\(info.peerSubject ?? "none")",
                // Known here: the channel hands its records over before it reports the
                // handshake (TLSChannel).
                "record_layer": "\(connection.tls?.usesOwnRecordLayer == true ? "flowsync" : "openssl")",
            ])
    }

    /// The channel ended: a failure, or the peer's `close_notify` (answered). Unless the
    /// server is closing the connection itself (its shutdown follows), the connection
    /// ends like a peer that left, after the alert or `close_notify` already written.
    fileprivate func tlsChannelEnded(_ connection: Connection, _ failure: TLSError?, transportEnded: Bool) {
        if let failure {
            tls?.events.failed(failure.reason)
            connection.logger.debug("TLS failed", metadata: ["reason": "\(failure.reason)", "error": "\(failure)"])
        }
        guard !transportEnded, !connection.isClosing else { return }
        let leaving = connection.machine.peerClosed(now: loop.now)
        connection.discardPending()
        forget(connection, leaving: leaving)
        connection.shutdownAfterWrites {}
    }

    private static func describe(_ context: TLSContext, _ configuration: TLSConfiguration) -> Logger.Metadata {
        [
            "certificate": "\(configuration.certificateFile ?? "")", "subject": "\(context.certificateSubject ?? "?")",
            "expires": "\(date(context.certificateExpiry))", "min_version": "\(configuration.minimumVersion.rawValue)",
            "client_certificates": "\(configuration.clientCertificates.rawValue)",
        ]
    }

    private static func date(_ seconds: Double?) -> String {
        guard let seconds else { return "?" }
        return ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: seconds))
    }
}
