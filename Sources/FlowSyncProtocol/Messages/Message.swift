/// Every message of the protocol, in both directions. Encode with ``FrameEncoder``,
/// decode with ``FrameDecoder``; `docs/PROTOCOL.md` specifies each body.
public enum Message: Hashable, Sendable {
    /// Client → server, first frame of a connection.
    case hello(Hello)
    /// Server → client, answer to a good Hello.
    case welcome(Welcome)
    /// Client → server: start or resume a list's subscription.
    case subscribe(Subscribe)
    /// Client → server: end a list's subscription.
    case unsubscribe(Unsubscribe)
    /// Server → client: a whole list.
    case snapshot(Snapshot)
    /// Server → client: one committed batch.
    case diff(Diff)
    /// Client → server: an atomic group of operations.
    case mutate(Mutate)
    /// Server → client: a Mutate was committed.
    case ack(Ack)
    /// Server → client: a Mutate was refused.
    case reject(Reject)
    /// Server → client: an error about a list or the connection.
    case error(ErrorMessage)
    /// Either direction: a liveness probe.
    case ping(Ping)
    /// Either direction: a probe's answer.
    case pong(Pong)
    /// Server → client: draining or shutting down.
    case notice(Notice)
    /// Client → server: ask for stats.
    case statsRequest(StatsRequest)
    /// Client → server: replace the connection's token before it expires.
    case refreshToken(RefreshToken)
    /// Server → client: stats.
    case statsReply(StatsReply)
    /// Client → server: write a backup of every list (admin).
    case backupRequest(BackupRequest)
    /// Server → client: the backup is written, or why not.
    case backupReply(BackupReply)

    /// The frame type this message is sent as.
    public var type: MessageType {
        switch self {
        case .hello: return .hello
        case .welcome: return .welcome
        case .subscribe: return .subscribe
        case .unsubscribe: return .unsubscribe
        case .snapshot: return .snapshot
        case .diff: return .diff
        case .mutate: return .mutate
        case .ack: return .ack
        case .reject: return .reject
        case .error: return .error
        case .ping: return .ping
        case .pong: return .pong
        case .notice: return .notice
        case .statsRequest: return .statsRequest
        case .refreshToken: return .refreshToken
        case .statsReply: return .statsReply
        case .backupRequest: return .backupRequest
        case .backupReply: return .backupReply
        }
    }
}
