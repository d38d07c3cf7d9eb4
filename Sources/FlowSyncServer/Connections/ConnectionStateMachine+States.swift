import FlowSyncCore
import FlowSyncProtocol

/// The states of ``ConnectionStateMachine``, one struct each with the data that only
/// means something in it, and the actions it asks of the shell. A file of their own:
/// the vocabulary of the machine, read apart from its transitions.
extension ConnectionStateMachine {
    /// What a ready connection knows about its client.
    struct Session: Equatable {
        var clientID: String
        var clientName: String
        var protocolVersion: UInt16
        /// What the client's token grants (``AccessGrant/unrestricted`` with auth off).
        var grant: AccessGrant = .unrestricted
        /// The grant came from the transport (a client certificate mapped to a
        /// principal, issue #32), not from a token: a RefreshToken cannot replace it.
        var isTransportAuthenticated = false
    }

    /// Waiting for `Hello`.
    struct AwaitingHello {
        /// Loop time (ms) by which a valid Hello must have arrived.
        var deadline: UInt64
        /// The grant of a client certificate mapped to a principal
        /// (``ConnectionStateMachine/transportAuthenticated(_:)``): the Hello then needs
        /// no token.
        var transportGrant: AccessGrant?
    }

    /// A Hello arrived; its token is being verified (``Action/verifyToken(_:)``).
    struct VerifyingHello {
        var deadline: UInt64
        /// The session to open once the token is good (its grant comes from the token).
        var session: Session
    }

    /// The handshake is done.
    struct Ready {
        var session: Session
        // The subscriptions and their flows are the machine's `subscriptions`, beside
        // the enum (the fan-out changes a flow without taking this payload out of it).
        /// A RefreshToken's token is being verified (``Action/verifyToken(_:)``).
        var refreshing = false
        /// Loop time (ms) the peer last sent bytes (``bytesReceived(now:)``), for the
        /// heartbeat check.
        var lastReceivedAt: UInt64
    }

    /// The connection is going away: nothing more is decided for it.
    struct Closing {
        /// Loop time (ms) the close began (a stuck close is cut 2 s later).
        var since: UInt64
        /// The code the server closed it with; `nil` when the peer left.
        var reason: ErrorCode?
    }

    enum State {
        case awaitingHello(AwaitingHello)
        case verifyingHello(VerifyingHello)
        case ready(Ready)
        case closing(Closing)
        /// Only inside ``withReady(_:)``: takes the payload out of the enum so it is
        /// uniquely referenced while it changes (the same trick as swift-nio-http2's
        /// `.modifying`). Not on the fan-out's path: taking the payload out still copies
        /// it, so the flows live beside the enum (``ConnectionStateMachine``).
        case modifying
    }

    /// What the shell must do.
    enum Action: Equatable {
        case none
        /// Verify this token (`nil`: none was sent) and answer with
        /// ``ConnectionStateMachine/tokenVerified(_:now:)``.
        case verifyToken(String?)
        /// Send `Welcome` (with the server limits) for this protocol version.
        case welcome(version: UInt16)
        /// Find (or create) the list and answer with
        /// ``ConnectionStateMachine/subscriptionStarted(_:flow:)`` or
        /// ``ConnectionStateMachine/listNotFound(_:)``.
        case subscribe(Subscribe)
        /// Refuse a write (the token does not grant it); nothing else happens.
        case reject(Reject)
        /// A RefreshToken was accepted: these subscriptions ended (the new token does not
        /// grant them); leave their lists and send a non-fatal `forbidden` each.
        case refreshed(dropped: [String])
        /// The subscription ended: leave the list.
        case unsubscribe(listName: String)
        case mutate(Mutate)
        case pong(nonce: UInt64)
        /// Answer a StatsRequest, naming only the lists `grant` may read.
        case stats(StatsRequest, grant: AccessGrant)
        /// Start a backup (the grant may read every list); answer with a BackupReply.
        case backup(BackupRequest)
        /// Answer a request with this reply at once (a refused backup).
        case sendBackupReply(BackupReply)
        /// Reply with a non-fatal error (the connection stays open).
        case sendError(ErrorMessage)
        /// Leave these lists, send this error, flush, close.
        case close(ErrorMessage, leaving: [String])
    }
}
