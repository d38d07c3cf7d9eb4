import FlowSyncServer
@_spi(Testing) import FlowSyncTLS

extension TestCertificates {
    /// `[tls]` for a daemon serving `certificate` (`server` by default) over TLS only.
    public func serverTLS(certificate: String = "server") -> TLSConfiguration {
        var tls = TLSConfiguration()
        tls.mode = .required
        tls.certificateFile = path("\(certificate).pem")
        tls.keyFile = path("\(certificate).key")
        return tls
    }

    /// A client context trusting the test CA only (not the system store), optionally
    /// with a client certificate of the set (`client`, `rogue-client`), and test-only
    /// limits (a version ceiling, renegotiation allowed).
    public func clientContext(
        certificate: String? = nil, maximumVersion: TLSVersion? = nil,
        allowsRenegotiation: Bool = false
    ) throws -> TLSContext {
        var options = TLSContext.ClientOptions()
        options.usesSystemTrustStore = false
        options.additionalTrustedRoots = [try der("ca.pem")]
        if let certificate {
            options.certificateChainFile = path("\(certificate).pem")
            options.privateKeyFile = path("\(certificate).key")
        }
        options.maximumVersion = maximumVersion
        options.allowsRenegotiation = allowsRenegotiation
        return try TLSContext.client(options)
    }

    /// The ClientHello a client of `context` sends first (for replaying it raw).
    public static func clientHello(_ context: TLSContext) throws -> [UInt8] {
        struct Capture: TLSChannelIO {
            var bytes: [UInt8] = []
            mutating func sendCiphertext(_ b: UnsafeRawBufferPointer) { bytes += b }
            mutating func deliverPlaintext(_ b: UnsafeRawBufferPointer) {}
            mutating func handshakeCompleted(_ info: TLSConnectionInfo) {}
            mutating func channelEnded(_ failure: TLSError?) {}
        }
        let channel = try TLSChannel(context: context, serverName: "localhost", scratch: TLSScratch())
        var capture = Capture()
        channel.start(&capture)
        return capture.bytes
    }
}
