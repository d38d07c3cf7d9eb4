import Foundation
import JWTKit

/// Mints JWTs for tests, including broken ones (`alg: none`, wrong key, tampered
/// payload): the header and payload are built by hand, so anything can be put in them,
/// and signed with jwt-kit's algorithms.
public enum TestTokens {
    /// What signs a token.
    public enum Signer: Sendable {
        /// HMAC-SHA256 with this secret.
        case hs256(String)
        /// ECDSA P-256 with this private key.
        case es256(ES256PrivateKey)
        /// No signature at all (`alg` as given in the header, typically `none`).
        case unsigned
    }

    /// A fresh ES256 key pair: the private key and its public key as PEM.
    public static func es256KeyPair() -> (privateKey: ES256PrivateKey, publicKeyPEM: String) {
        let key = ES256PrivateKey()
        return (key, key.publicKey.pemRepresentation)
    }

    /// A token with the usual claims: `sub`, `exp` = now + `ttl`, `read`, `write`, and
    /// `extra` claims merged in (they may override those).
    public static func make(
        kid: String?, alg: String = "HS256", signer: Signer, sub: String = "tester", ttl: Double = 3_600,
        read: [String] = [], write: [String] = [], extra: [String: any Sendable] = [:]
    ) async throws -> String {
        var payload: [String: Any] = [
            "sub": sub, "exp": Int(Date().timeIntervalSince1970 + ttl), "read": read, "write": write,
        ]
        for (k, v) in extra { payload[k] = v }
        var header: [String: Any] = ["alg": alg, "typ": "JWT"]
        if let kid { header["kid"] = kid }
        let head = base64URL(try JSONSerialization.data(withJSONObject: header, options: [.sortedKeys]))
        let body = base64URL(try JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys]))
        let signingInput = Array("\(head).\(body)".utf8)
        let signature: [UInt8]
        switch signer {
        case .unsigned:
            signature = []
        case .hs256(let secret):
            let keys = JWTKeyCollection()
            await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256, kid: "k")
            signature = try await keys.getKey(for: "k").sign(signingInput)
        case .es256(let key):
            let keys = JWTKeyCollection()
            await keys.add(ecdsa: key, kid: "k")
            signature = try await keys.getKey(for: "k").sign(signingInput)
        }
        return "\(head).\(body).\(base64URL(Data(signature)))"
    }

    /// `token` with its payload replaced by `claims` and the old signature kept.
    public static func tampered(_ token: String, claims: [String: any Sendable]) throws -> String {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        let body = base64URL(
            try JSONSerialization.data(withJSONObject: claims as [String: Any], options: [.sortedKeys]))
        return "\(parts[0]).\(body).\(parts[2])"
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
