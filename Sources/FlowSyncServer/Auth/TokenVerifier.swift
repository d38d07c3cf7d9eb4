import Dispatch
import FlowSyncProtocol
import Foundation
import JWTKit

/// Verifies the JWT of a Hello and turns its claims into an ``AccessGrant``.
///
/// **Synchronous, on purpose.** jwt-kit's `JWTKeyCollection` is an actor, so its
/// `verify` is `async`, and the server's loop thread must never block on (or wait for)
/// an async call. The only async step is looking up each key's `JWTAlgorithm`, which is
/// done once, when the verifier is built (at start-up and on reload, off the hot path).
/// After that, verifying is plain synchronous code on the loop thread: split the token
/// with jwt-kit's `DefaultJWTParser`, check the header (`alg`, `kid`), check the
/// signature with the key's `JWTAlgorithm.verify(_:signs:)` (constant-time for HMAC),
/// then the claims. An HS256 check costs a few µs and an ES256 one about 100 µs, which
/// a handshake can afford; hopping to a thread and back would cost more than that.
///
/// Order of checks (the signature comes before any use of the claims):
/// 1. no token → `auth-required` (2000);
/// 2. not three base64url parts, undecodable header or payload → `invalid-token` (2001);
/// 3. `alg` missing, `none`, or not the algorithm of the key → 2001;
/// 4. `kid` missing (with several keys) or unknown → 2001;
/// 5. signature wrong (tampered token, wrong key) → 2001;
/// 6. `iss`/`aud` not the configured ones, `sub` missing, a malformed pattern → 2001;
/// 7. `nbf` in the future (beyond the leeway) → 2001; `exp` past (beyond the leeway)
///    → `token-expired` (2002).
public final class TokenVerifier: Sendable {
    /// Why a verifier could not be built (bad key material), for `--check-config`.
    public struct SetupError: Error, Sendable, CustomStringConvertible {
        public let problem: String
        public var description: String { problem }
    }

    /// Why a token was refused: the wire code and a message for the client.
    public struct Rejection: Error, Hashable, Sendable {
        public let code: ErrorCode
        public let message: String
    }

    enum KeyMaterial: Sendable {
        case hmac(HMACKey, DigestAlgorithm)
        case es256(ES256PublicKey)
        case rs256(Insecure.RSA.PublicKey)
    }

    private struct Entry: Sendable {
        let algorithmName: String
        let algorithm: any JWTAlgorithm
    }

    private let entries: [String: Entry]
    private let issuer: String?
    private let audience: String?
    private let leeway: Double
    private let clock: @Sendable () -> Double
    private let parser = DefaultJWTParser()

    /// Builds a verifier for `configuration`'s keys. `clock` gives the wall-clock time in
    /// seconds since 1970 (tests inject one).
    public init(
        configuration: AuthConfiguration, clock: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }
    ) throws(SetupError) {
        var materials: [(String, String, KeyMaterial)] = []
        for key in configuration.keys {
            materials.append((key.kid, key.algorithm.uppercased(), try Self.material(for: key)))
        }
        let algorithms = Self.resolve(materials.map { ($0.0, $0.2) })
        var entries: [String: Entry] = [:]
        for (kid, name, _) in materials {
            guard let algorithm = algorithms[kid] else {
                throw SetupError(problem: "key \"\(kid)\" could not be loaded")
            }
            entries[kid] = Entry(algorithmName: name, algorithm: algorithm)
        }
        self.entries = entries
        self.issuer = configuration.issuer
        self.audience = configuration.audience
        self.leeway = Double(configuration.leewaySeconds)
        self.clock = clock
    }

    /// The current wall-clock time the verifier judges `exp` by.
    public var now: Double { clock() }

    /// Verifies `token` (the Hello's `authToken`).
    public func verify(_ token: String?) -> Result<AccessGrant, Rejection> {
        guard let token, !token.isEmpty else {
            return .failure(Rejection(code: .authRequired, message: "this server requires a token"))
        }
        func invalid(_ why: String) -> Result<AccessGrant, Rejection> {
            .failure(Rejection(code: .invalidToken, message: why))
        }
        let bytes = Array(token.utf8)
        let header: JWTHeader
        let claims: TokenClaims
        let signature: Data
        do {
            (header, claims, signature) = try parser.parse(bytes, as: TokenClaims.self)
        } catch {
            return invalid("malformed token")
        }
        guard let alg = header.alg, alg.lowercased() != "none" else {
            return invalid("unsigned tokens (alg none) are refused")
        }
        let kid: String
        if let named = header.kid {
            kid = named
        } else if entries.count == 1, let only = entries.keys.first {
            kid = only
        } else {
            return invalid("token has no kid")
        }
        guard let entry = entries[kid] else { return invalid("unknown key id") }
        guard entry.algorithmName == alg else { return invalid("algorithm \(alg) does not match the key") }
        // The signed part is everything before the second dot, as sent.
        guard let lastDot = bytes.lastIndex(of: UInt8(ascii: ".")) else { return invalid("malformed token") }
        let signed = bytes[..<lastDot]
        let good: Bool
        do {
            good = try entry.algorithm.verify(signature, signs: signed)
        } catch {
            good = false
        }
        guard good else { return invalid("bad signature") }
        // Only now are the claims looked at.
        if let issuer, claims.iss?.value != issuer { return invalid("wrong issuer") }
        if let audience {
            guard let aud = claims.aud, aud.value.contains(audience) else { return invalid("wrong audience") }
        }
        guard let subject = claims.sub?.value, !subject.isEmpty else { return invalid("token has no sub") }
        guard let exp = claims.exp?.value.timeIntervalSince1970 else { return invalid("token has no exp") }
        var read: [ListPattern] = []
        var write: [ListPattern] = []
        for text in claims.read ?? [] {
            guard let pattern = ListPattern(text) else { return invalid("malformed read pattern \"\(text)\"") }
            read.append(pattern)
        }
        for text in claims.write ?? [] {
            guard let pattern = ListPattern(text) else { return invalid("malformed write pattern \"\(text)\"") }
            write.append(pattern)
        }
        let now = clock()
        if let nbf = claims.nbf?.value.timeIntervalSince1970, now + leeway < nbf {
            return invalid("token not valid yet (nbf)")
        }
        if now >= exp + leeway { return .failure(Rejection(code: .tokenExpired, message: "token expired")) }
        return .success(AccessGrant(subject: subject, read: read, write: write, expiresAt: exp + leeway))
    }

    // MARK: Keys

    /// Parses one configured key (synchronous: used by `--check-config` too).
    static func material(for key: AuthConfiguration.Key) throws(SetupError) -> KeyMaterial {
        func text(inline: String?, file: String?, what: String) throws(SetupError) -> String {
            if let inline, file == nil { return inline }
            if let file, inline == nil {
                guard let data = FileManager.default.contents(atPath: file), let s = String(data: data, encoding: .utf8)
                else {
                    throw SetupError(problem: "cannot read \(what) file \(file)")
                }
                return s.trimmingCharacters(in: .newlines)
            }
            throw SetupError(problem: "needs exactly one of \(what) and \(what)_file")
        }
        switch key.algorithm.uppercased() {
        case "HS256", "HS384", "HS512":
            guard key.publicKeyPEM == nil, key.publicKeyFile == nil else {
                throw SetupError(problem: "an HMAC key takes secret or secret_file, not a public key")
            }
            let secret = try text(inline: key.secret, file: key.secretFile, what: "secret")
            let digest: DigestAlgorithm
            let minimum: Int
            switch key.algorithm.uppercased() {
            case "HS384":
                digest = .sha384
                minimum = 48
            case "HS512":
                digest = .sha512
                minimum = 64
            default:
                digest = .sha256
                minimum = 32
            }
            guard secret.utf8.count >= minimum else {
                throw SetupError(problem: "\(key.algorithm) needs a secret of at least \(minimum) bytes")
            }
            return .hmac(HMACKey(from: secret), digest)
        case "ES256", "RS256":
            guard key.secret == nil, key.secretFile == nil else {
                throw SetupError(problem: "\(key.algorithm) takes public_key_pem or public_key_file, not a secret")
            }
            let pem = try text(inline: key.publicKeyPEM, file: key.publicKeyFile, what: "public_key_pem")
            do {
                if key.algorithm.uppercased() == "ES256" { return .es256(try ES256PublicKey(pem: pem)) }
                return .rs256(try Insecure.RSA.PublicKey(pem: pem))
            } catch {
                throw SetupError(problem: "not a valid \(key.algorithm) public key PEM (\(error))")
            }
        case "NONE":
            throw SetupError(problem: "alg \"none\" is never accepted")
        default:
            throw SetupError(problem: "unsupported alg \"\(key.algorithm)\" (HS256, HS384, HS512, ES256, RS256)")
        }
    }

    /// Looks up each key's `JWTAlgorithm` in a `JWTKeyCollection` (an actor, hence async),
    /// waiting for the answer. Done once per verifier, never on the hot path. The wait
    /// runs a detached task on the global executor: do not call this from a context that
    /// occupies every thread of the cooperative pool.
    private static func resolve(_ materials: [(String, KeyMaterial)]) -> [String: any JWTAlgorithm] {
        final class Box: @unchecked Sendable { var value: [String: any JWTAlgorithm] = [:] }
        let box = Box()
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            let collection = JWTKeyCollection()
            var found: [String: any JWTAlgorithm] = [:]
            for (kid, material) in materials {
                let id = JWKIdentifier(string: kid)
                switch material {
                case .hmac(let key, let digest): await collection.add(hmac: key, digestAlgorithm: digest, kid: id)
                case .es256(let key): await collection.add(ecdsa: key, kid: id)
                case .rs256(let key): await collection.add(rsa: key, digestAlgorithm: .sha256, kid: id)
                }
                if let algorithm = try? await collection.getKey(for: id) { found[kid] = algorithm }
            }
            box.value = found
            done.signal()
        }
        done.wait()
        return box.value
    }
}

/// The claims FlowSync reads from a token. Unknown claims are ignored.
struct TokenClaims: JWTPayload {
    var sub: SubjectClaim?
    var exp: ExpirationClaim?
    var nbf: NotBeforeClaim?
    var iss: IssuerClaim?
    var aud: AudienceClaim?
    var read: [String]?
    var write: [String]?

    /// Unused: ``TokenVerifier`` checks the claims itself, synchronously.
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}
