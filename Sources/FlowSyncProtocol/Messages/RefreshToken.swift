/// Replaces the token of a ready connection before it expires (in-band refresh, issue
/// #10). Client → server. The server verifies it like a Hello's token: a good one
/// becomes the connection's grant (same `sub` required); a bad one closes the
/// connection with its code (2000–2003). No reply on success.
public struct RefreshToken: Hashable, Sendable {
    /// The new bearer token (a JWT).
    public var token: String

    /// Creates a refresh.
    public init(token: String) {
        self.token = token
    }
}
