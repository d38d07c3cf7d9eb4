// Linux only, as LibUVTransport.swift.
#if canImport(FlowSyncLoop) && canImport(FlowSyncTLS)
import FlowSyncLoop
import FlowSyncTLS

/// TLS for ``LibUVTransport``: the context from the ``TLSPolicy``, the channel on the
/// connection's socket, and the policy's verdict on the server's chain.
extension LibUVTransport {
    /// The transport's client context (made once): the system trust store plus the
    /// policy's extra roots, at least TLS 1.2, ALPN `flowsync`, the client identity.
    static func context(for policy: TLSPolicy, in state: LoopOwned) throws(TLSError) -> TLSContext {
        if let context = state.context { return context }
        var options = TLSContext.ClientOptions()
        options.minimumVersion = .tls12
        options.additionalTrustedRoots = policy.additionalTrustedRoots
        options.certificateChainFile = policy.clientIdentity?.certificateChainFile
        options.privateKeyFile = policy.clientIdentity?.privateKeyFile
        let context = try TLSContext.client(options)
        state.context = context
        return context
    }

    /// Wraps the new socket in a channel and sends the ClientHello.
    static func startTLS(
        _ context: TLSContext, policy: TLSPolicy, host: String, on tcp: TCPConnection,
        state: LoopOwned, handler: @escaping @Sendable (TransportEvent) -> Void
    ) {
        let serverName = policy.serverName ?? host
        let channel: TLSChannel
        do {
            channel = try TLSChannel(context: context, serverName: serverName, scratch: state.scratch)
        } catch {
            state.tlsFailure = error
            tcp.close()
            return
        }
        state.channel = channel
        tcp.onRead = { [weak channel] bytes in
            guard let channel else { return }
            var io = TLSIO(tcp: tcp, state: state, handler: handler, policy: policy, serverName: serverName)
            channel.received(bytes, &io)
        }
        tcp.onEnd = { [weak channel, weak tcp] _ in
            guard let tcp else { return }
            if let channel, !channel.isClosing {
                var io = TLSIO(tcp: tcp, state: state, handler: handler, policy: policy, serverName: serverName)
                channel.transportEnded(&io)
            }
            tcp.close()
        }
        do {
            try tcp.startReading()
        } catch {
            tcp.close()
            return
        }
        var io = TLSIO(tcp: tcp, state: state, handler: handler, policy: policy, serverName: serverName)
        channel.start(&io)
    }

    /// The channel's view of the transport (loop thread only, one call at a time).
    struct TLSIO: TLSChannelIO {
        let tcp: TCPConnection
        let state: LoopOwned
        /// `nil` on the paths that only write (send, disconnect).
        let handler: (@Sendable (TransportEvent) -> Void)?
        let policy: TLSPolicy?
        let serverName: String

        mutating func sendCiphertext(_ bytes: UnsafeRawBufferPointer) {
            do {
                try tcp.write(bytes: bytes)
            } catch {
                tcp.close()
            }
        }

        mutating func deliverPlaintext(_ bytes: UnsafeRawBufferPointer) {
            handler?(.received(Array(bytes)))
        }

        mutating func handshakeCompleted(_ info: TLSConnectionInfo) {
            handler?(.connected)
        }

        mutating func verifyPeer(_ info: TLSConnectionInfo) -> TLSError? {
            guard let policy else { return .connection(.refusedByPolicy, "no policy") }
            return LibUVTransport.refusal(of: info, by: policy, serverName: serverName)
        }

        mutating func channelEnded(_ failure: TLSError?) {
            state.tlsFailure = failure
            // What the channel said last (an alert, a close_notify) leaves first.
            tcp.shutdownAndClose()
        }
    }

    /// The policy's verdict on a completed handshake: `nil` accepts; a refusal says
    /// why (the chain for the name, a pin, the hook) for the `.closed` reason.
    static func refusal(of info: TLSConnectionInfo, by policy: TLSPolicy, serverName: String) -> TLSError? {
        let trusted = info.peerVerification == .trusted
        let evaluation = TLSPolicy.TrustEvaluation(
            host: serverName, systemTrusted: trusted,
            certificateChainSHA256: info.peerChainSHA256)
        if policy.accepts(evaluation) { return nil }
        if policy.verify == nil {
            if policy.requiresSystemTrust, case .failed(let reason, let text) = info.peerVerification {
                return .connection(reason, "\(serverName): \(text)")
            }
            if !policy.pinnedCertificateSHA256.isEmpty {
                return .connection(.pinMismatch, "\(serverName): no certificate of the chain has a pinned SHA-256")
            }
        }
        return .connection(.refusedByPolicy, "\(serverName): the certificate chain was refused by the TLS policy")
    }
}
#endif
