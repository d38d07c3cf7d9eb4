import Crypto

/// The cluster credential and the proofs of the peer-link handshake (issue #33;
/// docs/CLUSTER.md, "Peer links"). Pure: the nonces come from the caller.
///
/// A mutual challenge–response over HMAC-SHA256 with the shared secret of
/// `[cluster] peer_secret_file`:
/// ```
/// dialer   ── hello(D, nD) ─────────────────────────▶ acceptor
/// dialer   ◀─ challenge(A, nA, HMAC(k, "acceptor" D A nD nA)) ── acceptor
/// dialer   ── proof(HMAC(k, "dialer" D A nD nA)) ──────▶ acceptor
/// dialer   ◀─ accepted ─────────────────────────────── acceptor
/// ```
/// Each rule, with its reason:
/// 1. **The secret never crosses the wire**; only HMACs of fresh nonces do.
/// 2. **Both sides prove**, each over both nonces: a peer cannot be impersonated in
///    either direction, and a recorded proof is worthless on a new connection (the
///    other side's nonce is new), so a replay fails.
/// 3. **The role and both names are in the MAC**: a proof cannot be reflected back
///    (the acceptor's proof is not a dialer's) or moved to another pair of nodes.
/// 4. **Comparison in constant time** (`HMAC.isValidAuthenticationCode`), so timing
///    tells nothing about how much of a forged proof was right.
///
/// Not guaranteed: confidentiality. The link is not encrypted (the frames are what
/// PostgreSQL holds anyway); run it on a private network, like the PostgreSQL traffic
/// without TLS.
struct PeerCredential: Sendable, Hashable {
    /// Nonces are this long; anything else in a handshake is refused.
    static let nonceBytes = 32
    /// A secret shorter than this is refused at start (HMAC-SHA256's key strength).
    static let minimumSecretBytes = 32

    private let key: SymmetricKey
    private let fingerprint: [UInt8]

    init(secret: [UInt8]) {
        precondition(
            secret.count >= Self.minimumSecretBytes, "Internal inconsistency in PeerCredential: a short secret")
        key = SymmetricKey(data: secret)
        // Only for Equatable (configuration reloads compare); the secret itself is not kept
        // in a comparable form.
        fingerprint = Array(SHA256.hash(data: secret))
    }

    static func == (a: PeerCredential, b: PeerCredential) -> Bool { a.fingerprint == b.fingerprint }

    func hash(into hasher: inout Hasher) { hasher.combine(fingerprint) }

    enum Role: String {
        case dialer
        case acceptor
    }

    /// The proof `role` sends on a link between `dialer` and `acceptor` (rules 2, 3).
    func proof(_ role: Role, dialer: String, acceptor: String, dialerNonce: [UInt8], acceptorNonce: [UInt8]) -> [UInt8]
    {
        Array(
            HMAC<SHA256>.authenticationCode(
                for: Self.message(role, dialer: dialer, acceptor: acceptor, dialerNonce, acceptorNonce), using: key))
    }

    /// Whether `proof` is `role`'s proof for this handshake (rule 4).
    func verify(
        _ proof: [UInt8], _ role: Role, dialer: String, acceptor: String, dialerNonce: [UInt8], acceptorNonce: [UInt8]
    ) -> Bool {
        HMAC<SHA256>.isValidAuthenticationCode(
            proof, authenticating: Self.message(role, dialer: dialer, acceptor: acceptor, dialerNonce, acceptorNonce),
            using: key)
    }

    /// Every field length-prefixed, so no two different handshakes share a message.
    private static func message(
        _ role: Role, dialer: String, acceptor: String, _ dialerNonce: [UInt8], _ acceptorNonce: [UInt8]
    ) -> [UInt8] {
        var out: [UInt8] = Array("flowsync-peer-link-v1".utf8)
        for field in [Array(role.rawValue.utf8), Array(dialer.utf8), Array(acceptor.utf8), dialerNonce, acceptorNonce] {
            let count = UInt32(field.count)
            out += [UInt8(count >> 24), UInt8(truncatingIfNeeded: count >> 16), UInt8(truncatingIfNeeded: count >> 8)]
            out.append(UInt8(truncatingIfNeeded: count))
            out += field
        }
        return out
    }
}
