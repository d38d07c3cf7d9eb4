/// The one-byte message type in every frame header.
///
/// Numbering: `0x0_` handshake, `0x1_` client requests, `0x2_` server pushes and
/// answers, `0x3_` messages either side may send. Gaps leave room in each group.
public enum MessageType: UInt8, Hashable, Sendable, CaseIterable {
    case hello = 0x01
    case welcome = 0x02
    case subscribe = 0x10
    case unsubscribe = 0x11
    case mutate = 0x12
    case statsRequest = 0x13
    case refreshToken = 0x14
    case backupRequest = 0x15
    case snapshot = 0x20
    case diff = 0x21
    case ack = 0x22
    case reject = 0x23
    case notice = 0x24
    case statsReply = 0x25
    case backupReply = 0x26
    case error = 0x30
    case ping = 0x31
    case pong = 0x32

    /// Who may send a message of this type.
    public enum Sender: Hashable, Sendable {
        /// Only clients.
        case client
        /// Only servers.
        case server
        /// Either side.
        case either
    }

    /// Who may send this type; a connection state machine rejects the others with
    /// ``ErrorCode/unexpectedMessage``.
    public var sender: Sender {
        switch self {
        case .hello, .subscribe, .unsubscribe, .mutate, .statsRequest, .refreshToken, .backupRequest: return .client
        case .welcome, .snapshot, .diff, .ack, .reject, .notice, .statsReply, .backupReply, .error: return .server
        case .ping, .pong: return .either
        }
    }

    /// True for the types that are never compressed, whatever their size: the handshake
    /// (the peer has no dictionary and no permission to inflate yet) and errors (which
    /// may be sent before or during the handshake).
    public var isNeverCompressed: Bool {
        switch self {
        case .hello, .welcome, .error: return true
        default: return false
        }
    }
}
