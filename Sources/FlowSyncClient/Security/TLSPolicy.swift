/// When a transport speaks TLS, and which server certificates it accepts.
///
/// Every decision here is platform-neutral and tested on Linux (`TLSPolicyTests`); a
/// transport only gathers the facts (did the trust store accept the chain for the
/// name, the SHA-256 of each certificate) and asks ``accepts(_:)``. Both TLS transports
/// apply it the same way: ``NetworkTransport`` (Network.framework, Apple platforms) and
/// ``LibUVTransport`` (OpenSSL on the libuv loop, Linux); see docs/SDK.md, "Transports
/// and TLS".
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
    /// Roots to trust besides the system's (a private CA), each a DER certificate
    /// (``certificates(pem:)`` reads them from PEM text). A chain that leads to one of
    /// them counts as system-trusted (``TrustEvaluation/systemTrusted``), names and
    /// dates still checked.
    public var additionalTrustedRoots: [[UInt8]] = []
    /// A client certificate for servers that require one (mTLS, `[tls]
    /// client_certificates` of flowsyncd). Linux's ``LibUVTransport`` only: the Apple
    /// transport refuses to connect with one set (Network.framework takes a keychain
    /// identity, which this SDK does not handle yet; docs/SDK.md, "Not done").
    public var clientIdentity: ClientIdentity?

    /// A client certificate and its key, as PEM files.
    public struct ClientIdentity: Sendable, Hashable {
        /// The certificate, then its intermediates.
        public var certificateChainFile: String
        /// Its private key.
        public var privateKeyFile: String

        public init(certificateChainFile: String, privateKeyFile: String) {
            self.certificateChainFile = certificateChainFile
            self.privateKeyFile = privateKeyFile
        }
    }
    /// The trust hook: when set, it decides, given the evaluation and the built-in
    /// decision (pins and system trust, as above). Called on a transport queue, during
    /// the handshake: keep it quick, and never block on the main thread from it.
    public var verify: (@Sendable (TrustEvaluation, _ builtInDecision: Bool) -> Bool)?

    /// Creates a policy.
    public init(
        mode: Mode = .automatic, pinnedCertificateSHA256: Set<[UInt8]> = [],
        requiresSystemTrust: Bool = true, serverName: String? = nil,
        additionalTrustedRoots: [[UInt8]] = [], clientIdentity: ClientIdentity? = nil,
        verify: (@Sendable (TrustEvaluation, _ builtInDecision: Bool) -> Bool)? = nil
    ) {
        self.mode = mode
        self.pinnedCertificateSHA256 = pinnedCertificateSHA256
        self.requiresSystemTrust = requiresSystemTrust
        self.serverName = serverName
        self.additionalTrustedRoots = additionalTrustedRoots
        self.clientIdentity = clientIdentity
        self.verify = verify
    }

    /// TLS for every host but loopback, checked against the system trust store.
    public static let automatic = TLSPolicy()
    /// TLS for every host, loopback included.
    public static let required = TLSPolicy(mode: .required)
    /// Plain TCP everywhere.
    public static let disabled = TLSPolicy(mode: .disabled)

    /// The DER bytes of every certificate in PEM text (`-----BEGIN CERTIFICATE-----`
    /// blocks; anything else is skipped), for ``additionalTrustedRoots``.
    public static func certificates(pem: String) -> [[UInt8]] {
        var result: [[UInt8]] = []
        var rest = pem[...]
        while let begin = rest.range(of: "-----BEGIN CERTIFICATE-----"),
            let end = rest.range(of: "-----END CERTIFICATE-----", range: begin.upperBound..<rest.endIndex)
        {
            if let der = base64Decode(rest[begin.upperBound..<end.lowerBound]) { result.append(der) }
            rest = rest[end.upperBound...]
        }
        return result
    }

    /// Standard base64 (whitespace ignored); `nil` when malformed.
    static func base64Decode(_ text: Substring) -> [UInt8]? {
        var bytes: [UInt8] = []
        var accumulator: UInt32 = 0
        var bits = 0
        var padding = 0
        for character in text.utf8 {
            let value: UInt32
            switch character {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = UInt32(character - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = UInt32(character - UInt8(ascii: "a")) + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = UInt32(character - UInt8(ascii: "0")) + 52
            case UInt8(ascii: "+"): value = 62
            case UInt8(ascii: "/"): value = 63
            case UInt8(ascii: "="):
                padding += 1
                continue
            case UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t"): continue
            default: return nil
            }
            guard padding == 0 else { return nil }
            accumulator = (accumulator << 6) | value
            bits += 6
            if bits >= 8 {
                bits -= 8
                bytes.append(UInt8((accumulator >> UInt32(bits)) & 0xff))
            }
        }
        return padding <= 2 ? bytes : nil
    }

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
            guard !part.isEmpty, part.count <= 3, part.allSatisfy(\.isASCII), part.allSatisfy(\.isNumber) else {
                return nil
            }
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
