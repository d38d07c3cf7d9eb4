// Apple platforms only, and kept thin: every decision it makes (TLS or not, whether a
// certificate chain is accepted) is ``TLSPolicy``'s, which is platform-neutral and tested
// on Linux. Compiled on Linux by `make apple-check` against stand-ins of Network,
// Security and CryptoKit transcribed from Apple's documentation (AppleCheck/), where it
// is the client's default transport and runs against a real daemon over the stand-in's
// NWConnection (a real TCP socket); its TLS verify block runs there on a test
// certificate (SecTrustSetAnchorCertificates and SecTrustSetAnchorCertificatesOnly
// included, for TLSPolicy.additionalTrustedRoots). Not yet built with an Apple SDK, nor
// run through a real TLS handshake.
#if canImport(Network)
import CryptoKit
import Dispatch
import Foundation
@preconcurrency import Network
import Security

/// The default transport on Apple platforms: a TCP `NWConnection`, with TLS (1.2 or
/// later) when ``TLSPolicy/usesTLS(host:)`` says so, the certificate chain judged by
/// ``TLSPolicy/accepts(_:)`` (system trust, pins, the app's hook).
///
/// Threading: all state lives on one serial queue, and every event of a connection is
/// reported on it, in order. A connection that enters `.waiting` (no network path) is
/// reported closed at once: the session's own backoff, not Network.framework's, decides
/// when to try again, as on every other platform.
public final class NetworkTransport: ClientTransport, @unchecked Sendable {
    private let tls: TLSPolicy
    private let queue = DispatchQueue(label: "FlowSyncClient.NetworkTransport")
    /// Trust evaluation may block (revocation checks): never on `queue` or the main queue.
    private let verifyQueue = DispatchQueue(label: "FlowSyncClient.NetworkTransport.verify")
    private let onQueue = DispatchSpecificKey<Bool>()
    // Touched only on `queue` (the `@unchecked Sendable` is for these three).
    private var connection: NWConnection?
    private var handler: (@Sendable (TransportEvent) -> Void)?
    private var isShutDown = false

    /// A transport that applies `tls` to every connection.
    public init(tls: TLSPolicy = .automatic) {
        self.tls = tls
        queue.setSpecific(key: onQueue, value: true)
    }

    public func connect(host: String, port: Int, handler: @escaping @Sendable (TransportEvent) -> Void) {
        queue.async { [self] in
            guard !isShutDown else { return }
            dropConnection()
            guard let nwPort = NWEndpoint.Port(rawValue: UInt16(clamping: port)), port > 0, port <= 65535 else {
                handler(.closed(reason: "invalid port \(port)"))
                return
            }
            if tls.usesTLS(host: host), tls.clientIdentity != nil {
                // Fail closed rather than connect without the certificate the app asked
                // for: Network.framework takes a keychain identity (not done, docs/SDK.md).
                handler(.closed(reason: "TLSPolicy.clientIdentity is not supported by NetworkTransport"))
                return
            }
            let parameters = tls.usesTLS(host: host) ? tlsParameters(host: host) : NWParameters.tcp
            let connection = NWConnection(host: NWEndpoint.Host(host), port: nwPort, using: parameters)
            self.connection = connection
            self.handler = handler
            connection.stateUpdateHandler = { [weak self] state in
                guard let self else { return }
                switch state {
                case .ready:
                    guard self.connection === connection else { return }
                    handler(.connected)
                    self.receive(on: connection)
                case .waiting(let error):
                    self.finish(connection, reason: "no path: \(error)")
                case .failed(let error):
                    self.finish(connection, reason: "failed: \(error)")
                case .cancelled:
                    self.finish(connection, reason: "connection closed")
                default:
                    break  // .setup, .preparing
                }
            }
            connection.start(queue: queue)
        }
    }

    public func send(_ chunks: [[UInt8]]) {
        queue.async { [self] in
            guard let connection else { return }
            var bytes = Data()
            for chunk in chunks { bytes.append(contentsOf: chunk) }
            // NWConnection sends in call order; a failed send closes the connection.
            connection.send(
                content: bytes,
                completion: .contentProcessed { [weak self] error in
                    guard let error, let self else { return }
                    self.finish(connection, reason: "send failed: \(error)")
                })
        }
    }

    public func disconnect() {
        queue.async { [self] in
            // `.cancelled` follows, and reports `.closed` for this connection.
            connection?.cancel()
        }
    }

    public func schedule(after milliseconds: UInt64, _ work: @escaping @Sendable () -> Void) {
        let delay = DispatchTimeInterval.milliseconds(Int(min(milliseconds, UInt64(Int32.max))))
        queue.asyncAfter(deadline: .now() + delay) { [weak self] in
            guard let self, !self.isShutDown else { return }
            work()
        }
    }

    public func shutdown() {
        let stop: () -> Void = { [self] in
            isShutDown = true
            dropConnection()
        }
        // The client may be released (and shut down) from inside one of our callbacks.
        if DispatchQueue.getSpecific(key: onQueue) == true { stop() } else { queue.sync(execute: stop) }
    }

    // MARK: On `queue`

    private func receive(on connection: NWConnection) {
        connection.receive(minimumIncompleteLength: 1, maximumLength: 65_536) {
            [weak self] data, _, isComplete, error in
            guard let self, self.connection === connection else { return }
            if let data, !data.isEmpty { self.handler?(.received([UInt8](data))) }
            if let error {
                self.finish(connection, reason: "receive failed: \(error)")
            } else if isComplete {
                self.finish(connection, reason: "connection closed by the server")
            } else {
                self.receive(on: connection)
            }
        }
    }

    /// Reports `.closed` once for the current connection and forgets it.
    private func finish(_ connection: NWConnection, reason: String) {
        guard self.connection === connection else { return }
        let handler = self.handler
        self.connection = nil
        self.handler = nil
        // The state handler captures the connection: clearing it breaks that cycle, and
        // the `.cancelled` that follows has nothing more to report.
        connection.stateUpdateHandler = nil
        connection.cancel()
        handler?(.closed(reason: reason))
    }

    /// Forgets the current connection without reporting it (a new connect, shutdown).
    private func dropConnection() {
        connection?.stateUpdateHandler = nil
        connection?.cancel()
        connection = nil
        handler = nil
    }

    private func tlsParameters(host: String) -> NWParameters {
        let options = NWProtocolTLS.Options()
        let security = options.securityProtocolOptions
        sec_protocol_options_set_min_tls_protocol_version(security, .TLSv12)
        let name = tls.serverName ?? host
        sec_protocol_options_set_tls_server_name(security, name)
        // ALPN `flowsync`, as every client of the project offers it (docs/SECURITY.md):
        // a daemon refuses a client whose ALPN list lacks it, and serves one with none.
        sec_protocol_options_add_tls_application_protocol(security, "flowsync")
        let policy = tls
        sec_protocol_options_set_verify_block(
            security,
            { _, trust, complete in
                let secTrust = sec_trust_copy_ref(trust).takeRetainedValue()
                // The system's verdict for this name (the SSL policy is set for `name`).
                SecTrustSetPolicies(secTrust, SecPolicyCreateSSL(true, name as CFString))
                if !policy.additionalTrustedRoots.isEmpty {
                    // A private CA: its roots count as anchors beside the system's ones
                    // (`AnchorCertificatesOnly(false)`), as in LibUVTransport.
                    let anchors = policy.additionalTrustedRoots.compactMap {
                        SecCertificateCreateWithData(nil, Data($0) as CFData)
                    }
                    SecTrustSetAnchorCertificates(secTrust, anchors as CFArray)
                    SecTrustSetAnchorCertificatesOnly(secTrust, false)
                }
                let systemTrusted = SecTrustEvaluateWithError(secTrust, nil)
                let chain = (SecTrustCopyCertificateChain(secTrust) as? [SecCertificate]) ?? []
                let digests = chain.map { Array(SHA256.hash(data: SecCertificateCopyData($0) as Data)) }
                complete(
                    policy.accepts(.init(host: name, systemTrusted: systemTrusted, certificateChainSHA256: digests)))
            }, verifyQueue)
        return NWParameters(tls: options, tcp: NWProtocolTCP.Options())
    }
}
#endif
