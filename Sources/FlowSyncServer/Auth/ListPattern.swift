/// One entry of a token's `read` or `write` claim: the lists it grants.
///
/// Three forms, nothing else (no globbing inside a name, so a grant is easy to audit):
/// - an exact name, `contacts` — that list only;
/// - a namespace, `team/42/*` — every list whose name starts with `team/42/` and has at
///   least one more character (`team/42/a`, `team/42/a/b`), but not `team/42` itself and
///   not `team/420/x`;
/// - `*` alone — every list (admin and service tokens; mint it sparingly).
///
/// Anything else containing `*` (`team/*/x`, `team*`) is refused when the token is
/// verified, so a typo never widens a grant silently.
public struct ListPattern: Hashable, Sendable, CustomStringConvertible {
    private enum Kind: Hashable, Sendable {
        case exact(String)
        case namespace(prefix: String)  // includes the trailing "/"
        case everything
    }

    private let kind: Kind

    /// Parses a pattern; `nil` when it is malformed (empty, or `*` anywhere but the end
    /// of a `…/*` namespace or alone).
    public init?(_ text: String) {
        if text == "*" {
            kind = .everything
            return
        }
        if text.isEmpty { return nil }
        if text.hasSuffix("/*") {
            let prefix = String(text.dropLast())
            guard prefix.count > 1, !prefix.contains("*") else { return nil }
            kind = .namespace(prefix: prefix)
            return
        }
        guard !text.contains("*") else { return nil }
        kind = .exact(text)
    }

    /// Whether the pattern grants `list`.
    public func matches(_ list: String) -> Bool {
        switch kind {
        case .exact(let name): return name == list
        case .namespace(let prefix): return list.utf8.count > prefix.utf8.count && list.hasPrefix(prefix)
        case .everything: return true
        }
    }

    public var description: String {
        switch kind {
        case .exact(let name): return name
        case .namespace(let prefix): return prefix + "*"
        case .everything: return "*"
        }
    }
}

/// What a verified token lets its holder do: the pure authorization model. Deny by
/// default: a list no pattern matches is forbidden. Writing does not imply reading.
public struct AccessGrant: Hashable, Sendable {
    /// The token's `sub`.
    public var subject: String
    /// Lists the holder may subscribe to and ask statistics of.
    public var read: [ListPattern]
    /// Lists the holder may mutate.
    public var write: [ListPattern]
    /// The token's `exp`, seconds since 1970; `nil` only for the unrestricted grant.
    public var expiresAt: Double?

    public init(subject: String, read: [ListPattern], write: [ListPattern], expiresAt: Double?) {
        self.subject = subject
        self.read = read
        self.write = write
        self.expiresAt = expiresAt
    }

    /// The grant of every connection when `[auth] mode = "off"`.
    public static let unrestricted = AccessGrant(
        subject: "", read: [ListPattern("*")!], write: [ListPattern("*")!], expiresAt: nil)

    /// Whether the holder may subscribe to `list` (and read its statistics).
    public func mayRead(_ list: String) -> Bool { read.contains { $0.matches(list) } }
    /// Whether the holder may mutate `list`.
    public func mayWrite(_ list: String) -> Bool { write.contains { $0.matches(list) } }
}
