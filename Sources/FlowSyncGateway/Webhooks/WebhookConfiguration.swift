import Foundation

/// One webhook (`--webhook NAME=URL` plus its lists and secret; docs/GATEWAY.md,
/// "Webhooks"): every committed batch of each of `lists` is POSTed to `url`, signed.
public struct WebhookConfiguration: Sendable, Hashable {
    /// Names the hook in logs, headers (`FlowSync-Hook`) and its cursor directory.
    public var name: String
    /// `http://host[:port]/path`. Plain HTTP only: put a TLS-terminating proxy in front of
    /// a remote receiver.
    public var url: URL
    /// The lists it follows, by exact name (the protocol has no "subscribe to a pattern";
    /// the daemon's token patterns still decide what may be read).
    public var lists: [String]
    /// HMAC-SHA256 key of the `FlowSync-Signature` header.
    public var secret: String
    /// The daemon token the hook subscribes with (nil: none, for a daemon without auth).
    public var token: String?
    /// Batches waiting behind the one in flight, per list (default 1,000); past it the
    /// queue is dropped and the list resumes from its cursor later (`overflows` counts it).
    public var maxQueued: Int
    /// One POST's deadline (default 10 s); past it the attempt failed.
    public var timeoutMilliseconds: Int
    /// Retry backoff: from `backoffBaseMilliseconds` doubling to `backoffCapMilliseconds`.
    public var backoffBaseMilliseconds: UInt64
    public var backoffCapMilliseconds: UInt64

    public init(
        name: String, url: URL, lists: [String], secret: String, token: String? = nil, maxQueued: Int = 1_000,
        timeoutMilliseconds: Int = 10_000, backoffBaseMilliseconds: UInt64 = 100,
        backoffCapMilliseconds: UInt64 = 30_000
    ) {
        self.name = name
        self.url = url
        self.lists = lists
        self.secret = secret
        self.token = token
        self.maxQueued = maxQueued
        self.timeoutMilliseconds = timeoutMilliseconds
        self.backoffBaseMilliseconds = backoffBaseMilliseconds
        self.backoffCapMilliseconds = backoffCapMilliseconds
    }
}
