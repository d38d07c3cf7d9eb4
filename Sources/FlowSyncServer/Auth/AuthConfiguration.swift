import Foundation
import TOMLKit

/// `[auth]` of `config/flowsyncd.toml`: who may connect and what their tokens grant
/// (docs/SECURITY.md). Key material is kept as configured (text or file paths) so the
/// configuration stays a plain value; ``TokenVerifier`` turns it into keys.
public struct AuthConfiguration: Hashable, Sendable {
    /// Whether clients must present a token.
    public enum Mode: String, Hashable, Sendable, CaseIterable {
        /// Every Hello must carry a valid token; every list access is checked against it.
        case required
        /// No tokens: every client may read and write every list. Only on loopback (or a
        /// Unix socket) unless ``AuthConfiguration/allowOffBeyondLoopback`` is set.
        case off
    }

    /// One verification key (`[[auth.keys]]`). Several keys, told apart by `kid`, allow
    /// rotation: add the new key, mint with it, remove the old one once its tokens expired.
    public struct Key: Hashable, Sendable {
        /// The `kid` header value tokens signed with this key carry.
        public var kid: String
        /// `HS256`, `HS384`, `HS512`, `ES256` or `RS256`.
        public var algorithm: String
        /// HMAC secret (HS*), inline. At least 32 bytes for HS256.
        public var secret: String?
        /// HMAC secret read from a file (trailing newline removed).
        public var secretFile: String?
        /// Public key (ES256: EC P-256; RS256: RSA ≥ 2048 bits), PEM text inline.
        public var publicKeyPEM: String?
        /// Public key PEM read from a file.
        public var publicKeyFile: String?

        public init(
            kid: String, algorithm: String, secret: String? = nil, secretFile: String? = nil,
            publicKeyPEM: String? = nil, publicKeyFile: String? = nil
        ) {
            self.kid = kid
            self.algorithm = algorithm
            self.secret = secret
            self.secretFile = secretFile
            self.publicKeyPEM = publicKeyPEM
            self.publicKeyFile = publicKeyFile
        }
    }

    /// `mode`; `nil` (unset) means `required`, except on a loopback host where it means `off`.
    public var mode: Mode?
    /// `allow_off_beyond_loopback`: permit `mode = "off"` on a non-loopback address
    /// (logged as a warning at every start). Default false.
    public var allowOffBeyondLoopback = false
    /// `[[auth.keys]]`.
    public var keys: [Key] = []
    /// `issuer`: when set, a token's `iss` must equal it.
    public var issuer: String?
    /// `audience`: when set, a token's `aud` must contain it.
    public var audience: String?
    /// `leeway_seconds`: clock skew tolerated on `exp` and `nbf`. Default 30.
    public var leewaySeconds = 30
    /// `max_pending_handshakes`: connections at once that have not completed the
    /// handshake; further ones are closed at accept. Default 1024.
    public var maxPendingHandshakes = 1_024

    public init() {}

    /// The mode in force for a listener on `host`.
    public func effectiveMode(host: String) -> Mode {
        mode ?? (Self.isLoopback(host) ? .off : .required)
    }

    /// The numeric address a listening socket is bound to (for a socket handed over by
    /// systemd, whose address the configuration does not know); `nil` when unknown.
    public static func boundHost(ofDescriptor fd: Int32) -> String? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let ok = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) == 0 }
        }
        guard ok else { return nil }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        switch Int32(storage.ss_family) {
        case AF_INET:
            var address = withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
            }
            guard inet_ntop(AF_INET, &address, &buffer, socklen_t(buffer.count)) != nil else { return nil }
        case AF_INET6:
            var address = withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }
            }
            guard inet_ntop(AF_INET6, &address, &buffer, socklen_t(buffer.count)) != nil else { return nil }
        default:
            return nil
        }
        return String(cString: buffer)
    }

    /// Whether `host` is a loopback address (`127.0.0.0/8`, `::1`, `localhost`).
    public static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }

    /// Cross-field rules and key material; returns the offending key and why.
    public func validate(host: String) -> (key: String, problem: String)? {
        let mode = effectiveMode(host: host)
        if mode == .off && !Self.isLoopback(host) && !allowOffBeyondLoopback {
            return (
                "auth.mode",
                "\"off\" on \(host), which is not loopback: set auth.allow_off_beyond_loopback = true to force it"
            )
        }
        if mode == .required && keys.isEmpty {
            return ("auth.keys", "auth is required (the default beyond loopback) but no [[auth.keys]] is configured")
        }
        var seen: Set<String> = []
        for key in keys {
            if key.kid.isEmpty { return ("auth.keys.kid", "must not be empty") }
            if !seen.insert(key.kid).inserted { return ("auth.keys.kid", "\"\(key.kid)\" appears twice") }
            do {
                _ = try TokenVerifier.material(for: key)
            } catch {
                return ("auth.keys", "key \"\(key.kid)\": \(error.problem)")
            }
        }
        return nil
    }

    /// Reads one `[auth]` key from the TOML parser.
    mutating func parse(key: String, value: ConfigValue) throws(ConfigurationError) {
        switch key {
        case "mode": mode = try value.choice(Mode.self)
        case "allow_off_beyond_loopback": allowOffBeyondLoopback = try value.bool()
        case "issuer": issuer = try value.string()
        case "audience": audience = try value.string()
        case "leeway_seconds": leewaySeconds = try value.int(0...86_400)
        case "max_pending_handshakes": maxPendingHandshakes = try value.int(1...10_000_000)
        case "keys":
            guard let array = value.value.array else {
                throw ConfigurationError(key: value.key, problem: "expected [[auth.keys]] tables")
            }
            keys = []
            for element in array {
                guard let table = element.table else {
                    throw ConfigurationError(key: value.key, problem: "expected [[auth.keys]] tables")
                }
                var parsed = Key(kid: "", algorithm: "")
                for field in table.keys {
                    guard let raw = table[field] else { continue }
                    let v = ConfigValue(key: "auth.keys.\(field)", value: raw)
                    switch field {
                    case "kid": parsed.kid = try v.string()
                    case "alg": parsed.algorithm = try v.string()
                    case "secret": parsed.secret = try v.string()
                    case "secret_file": parsed.secretFile = try v.string()
                    case "public_key_pem": parsed.publicKeyPEM = try v.string()
                    case "public_key_file": parsed.publicKeyFile = try v.string()
                    default: throw ConfigurationError(key: v.key, problem: "unknown key")
                    }
                }
                keys.append(parsed)
            }
        default:
            throw ConfigurationError(key: value.key, problem: "unknown key")
        }
    }
}
