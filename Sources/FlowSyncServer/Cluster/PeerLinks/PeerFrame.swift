/// One message on a peer link between two cluster nodes (issue #33; docs/CLUSTER.md,
/// "Peer links"). Pure: no socket, no clock.
///
/// On the wire a frame is a 4-byte big-endian length (of what follows), a 1-byte type
/// and the type's fields: strings and byte strings as a 4-byte big-endian length and
/// their bytes, integers as 8 bytes big-endian. ``PeerFrameDecoder`` reads it back and
/// refuses anything else.
///
/// The first four types are the handshake (``PeerHandshake``); the others flow only
/// once both nodes proved they hold the cluster credential.
enum PeerFrame: Equatable, Sendable {
    /// Dialer → acceptor: who dials, and its fresh nonce.
    case hello(node: String, nonce: [UInt8])
    /// Acceptor → dialer: who answers, its fresh nonce, and its proof over both nonces.
    case challenge(node: String, nonce: [UInt8], proof: [UInt8])
    /// Dialer → acceptor: the dialer's proof over both nonces.
    case proof([UInt8])
    /// Acceptor → dialer: the dialer's proof holds; the link is ready both ways.
    case accepted
    /// The sender follows `list` as a replica: push its committed batches to it.
    case follow(list: String)
    /// The sender no longer follows `list`.
    case unfollow(list: String)
    /// A committed batch (its Diff frame, the bytes `fs_batches` holds), sent by the
    /// list's owner only after its fenced append returned.
    case push(list: String, epoch: Int64, term: Int64, version: Int64, frame: [UInt8])
    /// A write forwarded to the list's owner: its encoded `Mutate`, as `fs_inbox` holds it.
    case forward(mutate: [UInt8])
    /// The owner's answer to a forwarded write: `code` 0 is committed at
    /// (`epoch`, `version`), otherwise a Reject's code and message.
    case answer(
        list: String, clientID: String, seq: UInt64, epoch: Int64, version: Int64, code: Int64, message: String)
    /// Nothing but "this link is alive": sent every heartbeat by both ends of a ready
    /// link (``PeerLinkStateMachine`` rule 7).
    case ping

    /// The type byte of each case (the wire's numbering; never reused).
    enum Kind: UInt8 {
        case hello = 1
        case challenge = 2
        case proof = 3
        case accepted = 4
        case follow = 5
        case unfollow = 6
        case push = 7
        case forward = 8
        case answer = 9
        case ping = 10
    }

    var kind: Kind {
        switch self {
        case .hello: return .hello
        case .challenge: return .challenge
        case .proof: return .proof
        case .accepted: return .accepted
        case .follow: return .follow
        case .unfollow: return .unfollow
        case .push: return .push
        case .forward: return .forward
        case .answer: return .answer
        case .ping: return .ping
        }
    }

    /// Whether the frame belongs to the handshake (the only ones allowed before it ends).
    var isHandshake: Bool { kind.rawValue <= Kind.accepted.rawValue }

    /// The frame with its length prefix, ready to write.
    func encoded() -> [UInt8] {
        var out: [UInt8] = [0, 0, 0, 0, kind.rawValue]
        switch self {
        case .hello(let node, let nonce):
            Self.put(string: node, into: &out)
            Self.put(bytes: nonce, into: &out)
        case .challenge(let node, let nonce, let proof):
            Self.put(string: node, into: &out)
            Self.put(bytes: nonce, into: &out)
            Self.put(bytes: proof, into: &out)
        case .proof(let proof):
            Self.put(bytes: proof, into: &out)
        case .accepted, .ping:
            break
        case .follow(let list), .unfollow(let list):
            Self.put(string: list, into: &out)
        case .push(let list, let epoch, let term, let version, let frame):
            Self.put(string: list, into: &out)
            Self.put(int: epoch, into: &out)
            Self.put(int: term, into: &out)
            Self.put(int: version, into: &out)
            Self.put(bytes: frame, into: &out)
        case .forward(let mutate):
            Self.put(bytes: mutate, into: &out)
        case .answer(let list, let clientID, let seq, let epoch, let version, let code, let message):
            Self.put(string: list, into: &out)
            Self.put(string: clientID, into: &out)
            Self.put(int: Int64(bitPattern: seq), into: &out)
            Self.put(int: epoch, into: &out)
            Self.put(int: version, into: &out)
            Self.put(int: code, into: &out)
            Self.put(string: message, into: &out)
        }
        let length = UInt32(out.count - 4)
        out[0] = UInt8(length >> 24)
        out[1] = UInt8(truncatingIfNeeded: length >> 16)
        out[2] = UInt8(truncatingIfNeeded: length >> 8)
        out[3] = UInt8(truncatingIfNeeded: length)
        return out
    }

    private static func put(int value: Int64, into out: inout [UInt8]) {
        let bits = UInt64(bitPattern: value)
        for shift in stride(from: 56, through: 0, by: -8) {
            out.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift)))
        }
    }

    private static func put(bytes: [UInt8], into out: inout [UInt8]) {
        let count = UInt32(bytes.count)
        for shift in stride(from: 24, through: 0, by: -8) {
            out.append(UInt8(truncatingIfNeeded: count >> UInt32(shift)))
        }
        out.append(contentsOf: bytes)
    }

    private static func put(string: String, into out: inout [UInt8]) {
        put(bytes: Array(string.utf8), into: &out)
    }
}
