import FlowSyncTLS
import TOMLKit

/// `[tls]` of `config/flowsyncd.toml`: TLS on the daemon's TCP listener, terminated on
/// the loop (docs/SECURITY.md, "TLS"). Files are kept as paths, so the configuration
/// stays a plain value; ``Server`` loads them into a `TLSContext` at start and at every
/// reload (SIGHUP), and keeps the running context when the new files are refused.
public struct TLSConfiguration: Hashable, Sendable {
    /// What the TCP listener speaks. One listener is TLS only or plaintext only, never
    /// both: a port that accepted either would let an attacker on the path strip TLS
    /// by answering in plaintext, and a client could not tell. The Unix-domain socket
    /// (`server.unix_socket`) and the metrics listener are always plaintext: the first
    /// never leaves the host, the second binds loopback by default.
    public enum Mode: String, Hashable, Sendable, CaseIterable {
        /// TLS only: a client that does not speak TLS is refused in the handshake.
        case required
        /// Plaintext only. Beyond loopback only with ``TLSConfiguration/allowPlaintextBeyondLoopback``.
        case off
    }

    /// A client certificate's subject mapped to a principal (`[[tls.principals]]`): a
    /// connection whose verified certificate has this subject is authenticated by it —
    /// its Hello needs no token — and gets this grant, as a token with these claims
    /// would give it; until the certificate expires.
    public struct Principal: Hashable, Sendable {
        /// The certificate's subject in RFC 2253 form, exactly as
        /// `openssl x509 -noout -subject -nameopt RFC2253 -in client.pem` prints it.
        public var subject: String
        /// The name the grant carries (what a token's `sub` would be): logs, refresh checks.
        public var name: String
        /// List patterns readable and writable (``ListPattern``).
        public var read: [ListPattern] = []
        public var write: [ListPattern] = []

        public init(subject: String, name: String, read: [ListPattern] = [], write: [ListPattern] = []) {
            self.subject = subject
            self.name = name
            self.read = read
            self.write = write
        }
    }

    /// `mode`; `nil` (unset) means `required`, except on a loopback host where it means
    /// `off`. Why this default: a token travels in every Hello, so a daemon reachable
    /// from a network must not take it in clear text; refusing to start without a
    /// certificate says so at once, where serving plaintext would say nothing. Loopback
    /// stays plaintext (a local client, a local TLS proxy such as stunnel).
    public var mode: Mode?
    /// `allow_plaintext_beyond_loopback`: permit `mode = "off"` on a non-loopback
    /// address (behind a TLS proxy, on a private network; logged at every start).
    public var allowPlaintextBeyondLoopback = false
    /// `certificate_file`: PEM, the server certificate first, then its intermediates.
    public var certificateFile: String?
    /// `key_file`: PEM, the certificate's private key.
    public var keyFile: String?
    /// `min_version`: `"1.3"` (default) or `"1.2"`.
    public var minimumVersion = TLSVersion.tls13
    /// `client_certificates`: `"off"` (default), `"optional"` or `"required"` (mTLS).
    public var clientCertificates = ClientCertificateMode.off
    /// `client_ca_file`: PEM, the CAs that sign client certificates.
    public var clientCAFile: String?
    /// `max_handshake_bytes`: ciphertext accepted before the handshake completes
    /// (``TLSStateMachine``, rule 1). Default 65536.
    public var maxHandshakeBytes = TLSStateMachine.Configuration().handshakeByteLimit
    /// `record_layer`: who protects a TLS 1.3 connection's records after its handshake:
    /// `"flowsync"` (default), the daemon's own, or `"openssl"` (docs/SECURITY.md, "The
    /// record layer"). TLS 1.2 connections always stay on OpenSSL's. Why this default:
    /// measured in docs/BENCHMARKS.md "TLS", it costs a third of the CPU per delivered
    /// frame less and an idle connection 6–15 KB instead of 21–23 KB.
    public var recordLayer = TLSContext.RecordLayer.flowSync
    /// `[[tls.principals]]`.
    public var principals: [Principal] = []

    public init() {}

    /// The mode in force for a listener on `host`.
    public func effectiveMode(host: String) -> Mode {
        mode ?? (AuthConfiguration.isLoopback(host) ? .off : .required)
    }

    /// The engine's options (the files are read when the context is made).
    var serverOptions: TLSContext.ServerOptions? {
        guard let certificateFile, let keyFile else { return nil }
        var options = TLSContext.ServerOptions(certificateChainFile: certificateFile, privateKeyFile: keyFile)
        options.minimumVersion = minimumVersion
        options.clientCertificates = clientCertificates
        options.clientCAFile = clientCAFile
        options.recordLayer = recordLayer
        return options
    }

    /// The principal a verified client certificate's subject maps to, if any.
    func principal(forSubject subject: String) -> Principal? {
        principals.first { $0.subject == subject }
    }

    /// Cross-field rules; returns the offending key and why. Files are not read here
    /// (`--check-config` and a start read them when the context is made).
    public func validate(host: String) -> (key: String, problem: String)? {
        let mode = effectiveMode(host: host)
        if mode == .off && !AuthConfiguration.isLoopback(host) && !allowPlaintextBeyondLoopback {
            return (
                "tls.mode",
                "\"off\" on \(host), which is not loopback: tokens would cross the network in clear text; set tls.allow_plaintext_beyond_loopback = true to force it"
            )
        }
        if mode == .required {
            if certificateFile == nil {
                return (
                    "tls.certificate_file",
                    "TLS is required on \(host) (the default beyond loopback) but no certificate is configured"
                )
            }
            if keyFile == nil { return ("tls.key_file", "TLS is required on \(host) but no key is configured") }
        }
        if clientCertificates != .off && clientCAFile == nil {
            return (
                "tls.client_ca_file",
                "client_certificates = \"\(clientCertificates.rawValue)\" needs the CA that signs them"
            )
        }
        var seen: Set<String> = []
        for principal in principals {
            if principal.subject.isEmpty { return ("tls.principals.subject", "must not be empty") }
            if principal.name.isEmpty { return ("tls.principals.name", "must not be empty") }
            if !seen.insert(principal.subject).inserted {
                return ("tls.principals.subject", "\"\(principal.subject)\" appears twice")
            }
        }
        if !principals.isEmpty && clientCertificates == .off {
            return ("tls.principals", "principals need client certificates (tls.client_certificates)")
        }
        return nil
    }

    /// Reads the certificate pair (and the client CAs) as a start would, for
    /// `flowsyncd --check-config`: `nil` when they load or TLS is off on `host`, else the
    /// problem, naming the key and the file.
    public func checkFiles(host: String) -> String? {
        guard effectiveMode(host: host) == .required, let options = serverOptions else { return nil }
        do {
            _ = try TLSContext.server(options)
            return nil
        } catch {
            return "\(error)"
        }
    }

    /// Reads one `[tls]` key from the TOML parser.
    mutating func parse(key: String, value: ConfigValue) throws(ConfigurationError) {
        switch key {
        case "mode": mode = try value.choice(Mode.self)
        case "allow_plaintext_beyond_loopback": allowPlaintextBeyondLoopback = try value.bool()
        case "certificate_file": certificateFile = try value.string()
        case "key_file": keyFile = try value.string()
        case "min_version": minimumVersion = try value.choice(TLSVersion.self)
        case "client_certificates": clientCertificates = try value.choice(ClientCertificateMode.self)
        case "client_ca_file": clientCAFile = try value.string()
        case "max_handshake_bytes": maxHandshakeBytes = try value.int(1_024...(16 << 20))
        case "record_layer": recordLayer = try value.choice(TLSContext.RecordLayer.self)
        case "principals":
            guard let array = value.value.array else {
                throw ConfigurationError(key: value.key, problem: "expected [[tls.principals]] tables")
            }
            principals = []
            for element in array {
                guard let table = element.table else {
                    throw ConfigurationError(key: value.key, problem: "expected [[tls.principals]] tables")
                }
                var principal = Principal(subject: "", name: "")
                for field in table.keys {
                    guard let raw = table[field] else { continue }
                    let v = ConfigValue(key: "tls.principals.\(field)", value: raw)
                    switch field {
                    case "subject": principal.subject = try v.string()
                    case "name": principal.name = try v.string()
                    case "read": principal.read = try Self.patterns(v)
                    case "write": principal.write = try Self.patterns(v)
                    default: throw ConfigurationError(key: v.key, problem: "unknown key")
                    }
                }
                principals.append(principal)
            }
        default:
            throw ConfigurationError(key: value.key, problem: "unknown key")
        }
    }

    private static func patterns(_ value: ConfigValue) throws(ConfigurationError) -> [ListPattern] {
        var patterns: [ListPattern] = []
        for text in try value.strings() {
            guard let pattern = ListPattern(text) else {
                throw ConfigurationError(
                    key: value.key,
                    problem: "\"\(text)\" is not a list pattern (a name, a namespace \"a/b/*\", or \"*\")")
            }
            patterns.append(pattern)
        }
        return patterns
    }
}
