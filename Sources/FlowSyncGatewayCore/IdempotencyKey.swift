import FlowSyncCore
import Foundation

/// The `Idempotency-Key` header mapped to the daemon's `(clientID, seq)`, so a retried
/// POST commits once (ORDERING.md, "Idempotency window").
///
/// The mapping is a pure function of the key and its scope, and nothing else: no table,
/// no clock, no gateway identity. So a retry is recognised whichever gateway it reaches,
/// and after any gateway restart; the memory of what was committed is the daemon's
/// `DedupeWindow`, which is durable (it rides in the list's log and snapshots).
///
/// - The client ID is `idem-` and 32 hex digits: two 64-bit XXH64 hashes (seeds 1 and 2)
///   of `scope`, a NUL byte and `key`. The scope is the bearer token's `sub` claim (read,
///   not verified: the daemon verifies the token), so two callers' equal keys never meet.
/// - The sequence number is always 1: each key is its own writer with one write.
///
/// The protocol requires a Mutate's client ID to equal its connection's Hello, so a keyed
/// POST goes through a daemon connection of its own (docs/GATEWAY.md, "Idempotency").
///
/// Not guaranteed: the daemon remembers the last 100,000 writers of each list; a key
/// retried after 100,000 other writers (keys included) wrote the same list commits again.
/// A retry with the same key and a different body gets the first body's answer (the
/// daemon does not compare operations).
public enum IdempotencyKey {
    /// Longest accepted key, in bytes (visible ASCII only).
    public static let maxLength = 255

    /// The `(clientID, seq)` for `key` under `scope`.
    public static func mutationID(key: String, scope: String) throws(RequestError) -> MutationID {
        let utf8 = Array(key.utf8)
        guard !utf8.isEmpty, utf8.count <= maxLength, utf8.allSatisfy({ $0 >= 0x21 && $0 <= 0x7E }) else {
            throw RequestError(
                .invalidIdempotencyKey, "Idempotency-Key must be 1–\(maxLength) visible ASCII characters")
        }
        let material = Array(scope.utf8) + [0] + utf8
        let high = XXH64.hash(material, seed: 1)
        let low = XXH64.hash(material, seed: 2)
        return MutationID(clientID: "idem-" + hex(high) + hex(low), seq: 1)
    }

    /// The `sub` claim of a compact JWT, read without verifying it; "" when absent or
    /// unreadable. Used only to scope keys: the daemon decides what the token may do.
    public static func subject(ofBearerToken token: String?) -> String {
        guard let token else { return "" }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return "" }
        var payload = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while payload.count % 4 != 0 { payload += "=" }
        guard let data = Data(base64Encoded: payload),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let sub = object["sub"] as? String
        else { return "" }
        return sub
    }

    private static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
