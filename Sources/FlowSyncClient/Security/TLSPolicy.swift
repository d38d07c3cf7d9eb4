/// When a transport speaks TLS, and which server certificates it accepts.
///
/// Every decision here is platform-neutral and tested on Linux (`TLSPolicyTests`); a
/// transport only gathers the facts (did the system trust store accept the chain, the
/// SHA-256 of each certificate) and asks ``accepts(_:)``. The Network.framework transport
/// (``NetworkTransport``, Apple platforms) is the one that does TLS itself; see
/// docs/SDK.md, "Transports and TLS".
///
/// The default, ``automatic``, is TLS for every host that is not loopback: a token must
/// never cross a network in clear text. Loopback (`localhost`, `127.0.0.0/8`, `::1`)
/// stays plain, for a local daemon or a local TLS tunnel (stunnel).
public struct TLSPolicy: Sendable {
    /// When to use TLS.
    public enum Mode: Sendable, Hashable {
        /// TLS for every host but loopback (the default).
        case automatic
        /// TLS for every host, loopback included.
        case required
        /// Never TLS: plain TCP even across a network (a token then travels in clear
        /// text; for a trusted network or a tunnel the app set up itself).
        case disabled
    }

    /// What the transport learned about the server's certificate chain.
    public struct TrustEvaluation: Sendable, Hashable {
        /// The host the client connected to.
        public var host: String
        /// Whether the platform's trust store accepted the chain for `host`.
        public var systemTrusted: Bool
        /// The SHA-256 of each certificate's DER bytes, leaf first.
        public var certificateChainSHA256: [[UInt8]]

        /// Creates an evaluation (transports and tests).
        public init(host: String, systemTrusted: Bool, certificateChainSHA256: [[UInt8]]) {
            self.host = host
            self.systemTrusted = systemTrusted
            self.certificateChainSHA256 = certificateChainSHA256
        }
    }

    /// When to use TLS. Default ``Mode/automatic``.
    public var mode: Mode
    /// SHA-256 digests of certificates (their DER bytes) to pin: when not empty, a chain
    /// is accepted only if one of its certificates (leaf or intermediate) has one of these
    /// digests. Pin more than one (the next key too) so a certificate rotation does not
    /// lock every installed app out.
    public var pinnedCertificateSHA256: Set<[UInt8]>
    /// Whether the platform's trust store must accept the chain too. Default true. Set it
    /// to false only with pins (a self-signed server certificate); with no pins a policy
    /// that does not require system trust accepts nothing rather than everything.
    public var requiresSystemTrust: Bool
    /// The name checked against the certificate and sent as SNI; `nil`: the host.
    public var serverName: String?
    /// The trust hook: when set, it decides, given the evaluation and the built-in
    /// decision (pins and system trust, as above). Called on a transport queue, during
    /// the handshake: keep it quick, and never block on the main thread from it.
    public var verify: (@Sendable (TrustEvaluation, _ builtInDecision: Bool) -> Bool)?

    /// Creates a policy.
    public init(mode: Mode = .automatic, pinnedCertificateSHA256: Set<[UInt8]> = [],
                requiresSystemTrust: Bool = true, serverName: String? = nil,
                verify: (@Sendable (TrustEvaluation, _ builtInDecision: Bool) -> Bool)? = nil) {
        self.mode = mode
        self.pinnedCertificateSHA256 = pinnedCertificateSHA256
        self.requiresSystemTrust = requiresSystemTrust
        self.serverName = serverName
        self.verify = verify
    }

    /// TLS for every host but loopback, checked against the system trust store.
    public static let automatic = TLSPolicy()
    /// TLS for every host, loopback included.
    public static let required = TLSPolicy(mode: .required)
    /// Plain TCP everywhere.
    public static let disabled = TLSPolicy(mode: .disabled)

    /// Whether a connection to `host` uses TLS under this policy.
    public func usesTLS(host: String) -> Bool {
        switch mode {
        case .automatic: return !Self.isLoopback(host: host)
        case .required: return true
        case .disabled: return false
        }
    }

    /// Whether the server's chain is accepted.
    public func accepts(_ evaluation: TrustEvaluation) -> Bool {
        let builtIn = builtInDecision(evaluation)
        return verify.map { $0(evaluation, builtIn) } ?? builtIn
    }

    /// Pins and system trust, without the hook.
    func builtInDecision(_ evaluation: TrustEvaluation) -> Bool {
        if requiresSystemTrust && !evaluation.systemTrusted { return false }
        if pinnedCertificateSHA256.isEmpty { return requiresSystemTrust }
        return evaluation.certificateChainSHA256.contains { pinnedCertificateSHA256.contains($0) }
    }

    /// A pin from its hex form (64 digits, optionally with `:` between bytes, as
    /// `openssl x509 -noout -fingerprint -sha256` prints it); `nil` when malformed.
    public static func sha256Pin(hex: String) -> [UInt8]? {
        let digits = hex.filter { $0 != ":" }
        // Hex digits only: `UInt8(_:radix:)` alone would also take a sign ("+b").
        guard digits.count == 64, digits.allSatisfy(\.isHexDigit) else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        var index = digits.startIndex
        while index < digits.endIndex {
            let next = digits.index(index, offsetBy: 2)
            guard let byte = UInt8(digits[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        return bytes
    }

    /// Whether `host` names this machine: `localhost` (and `*.localhost`, RFC 6761),
    /// an IPv4 address in 127.0.0.0/8, or `::1` (bracketed or not). Decided on the
    /// text, never by resolving it: a name that merely resolves to 127.0.0.1 today is
    /// not trusted to stay local.
    public static func isLoopback(host: String) -> Bool {
        var name = host.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        if name == "localhost" || name.hasSuffix(".localhost") { return true }
        if name.hasPrefix("[") && name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        if let zone = name.firstIndex(of: "%") { name = String(name[..<zone]) }
        if isIPv6Loopback(name) { return true }
        let octets = name.split(separator: ".", omittingEmptySubsequences: false)
        guard octets.count == 4 else { return false }
        let values = octets.map { part -> Int? in
            guard !part.isEmpty, part.count <= 3, part.allSatisfy(\.isASCII), part.allSatisfy(\.isNumber) else { return nil }
            return Int(part).flatMap { $0 <= 255 ? $0 : nil }
        }
        return values.allSatisfy { $0 != nil } && values[0] == 127
    }

    /// `::1` in any spelling (`0:0:0:0:0:0:0:1`, `::0:1`, …) and `::ffff:127.x.y.z`.
    private static func isIPv6Loopback(_ text: String) -> Bool {
        guard text.contains(":") else { return false }
        if text.hasPrefix("::ffff:") { return isLoopback(host: String(text.dropFirst(7))) }
        let halves = text.components(separatedBy: "::")
        guard halves.count <= 2 else { return false }
        func groups(_ part: String) -> [UInt16]? {
            if part.isEmpty { return [] }
            var result: [UInt16] = []
            for group in part.split(separator: ":", omittingEmptySubsequences: false) {
                guard (1...4).contains(group.count), let value = UInt16(group, radix: 16) else { return nil }
                result.append(value)
            }
            return result
        }
        guard let head = groups(halves[0]) else { return false }
        var all = head
        if halves.count == 2 {
            guard let tail = groups(halves[1]), head.count + tail.count < 8 else { return false }
            all += [UInt16](repeating: 0, count: 8 - head.count - tail.count) + tail
        }
        return all.count == 8 && all.dropLast().allSatisfy { $0 == 0 } && all.last == 1
    }
}
