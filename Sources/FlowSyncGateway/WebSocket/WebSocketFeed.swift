import FlowSyncCore
import FlowSyncGatewayCore
import FlowSyncProtocol
import NIOCore
import NIOPosix

/// A member of a shared feed: a WebSocket session, by identity.
struct FeedMember: Hashable, Sendable {
    let session: WebSocketSession

    static func == (lhs: FeedMember, rhs: FeedMember) -> Bool { lhs.session === rhs.session }
    func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(session)) }
}

/// The gateway's shared WebSocket feeds, one per (list, bearer token) with members
/// (docs/GATEWAY.md, "Shared feeds"). A feed is made by its first member and forgotten
/// when it ends (``WebSocketFeedMachine`` rule 4 and rule 5); a join that finds an ended
/// feed makes a new one.
///
/// Lock order: the hub's lock is never held while a feed's is taken, and a feed calls
/// ``forget(_:)`` only after releasing its own.
final class WebSocketFeedHub: Sendable {
    /// What a feed is shared by (rule 1 of ``WebSocketFeedMachine``).
    struct Key: Hashable, Sendable {
        let list: String
        let token: String?
    }

    private let feeds = Locked<[Key: WebSocketFeed]>([:])
    private let options: @Sendable (String?) -> DaemonLink.Options

    /// - Parameter options: the daemon link's options for a token.
    init(options: @escaping @Sendable (String?) -> DaemonLink.Options) {
        self.options = options
    }

    /// Feeds now (for tests and metrics).
    var count: Int { feeds.withLock { $0.count } }

    /// Joins `member` to the feed of (`list`, `token`), making it if there is none.
    func join(list: String, token: String?, member: FeedMember) -> WebSocketFeed {
        let key = Key(list: list, token: token)
        while true {
            let feed = feeds.withLock { feeds -> WebSocketFeed in
                if let feed = feeds[key] { return feed }
                let feed = WebSocketFeed(key: key, options: options(token)) { [weak self] in self?.forget($0) }
                feeds[key] = feed
                return feed
            }
            if feed.join(member) { return feed }
            forget(feed)  // it ended between the lookup and the join
        }
    }

    /// Forgets `feed` if it is still the one of its key.
    func forget(_ feed: WebSocketFeed) {
        feeds.withLock { feeds in
            if feeds[feed.key] === feed { feeds[feed.key] = nil }
        }
    }
}

/// The I/O shell of one shared feed: it holds the daemon link and carries out its
/// ``WebSocketFeedMachine``'s actions (STYLE.md rule 2).
///
/// Ordering and lifetime:
/// 1. Every event goes through the machine under the feed's lock, and the messages it
///    hands out are queued to the members' sessions under that same lock, so a joiner's
///    snapshot and the Diffs after it reach its queue in the machine's order. Queuing never
///    waits: a session's queue is bounded by its own machine and a session too slow for it
///    closes itself (4008) and then leaves.
/// 2. Each message is encoded to JSON once, into one `ByteBuffer` that every member's
///    writer sends as its text frame (NIO shares the storage). If a member negotiated
///    permessage-deflate and the message is at least ``minimumBytesToDeflate`` long, it
///    is also deflated once, alone (a fresh raw stream per message, so the payload does
///    not depend on what a socket received before: the negotiation promised
///    `server_no_context_takeover`), and those members get that payload with RSV1 set.
/// 3. Link work (open, resubscribe, close) runs after the lock is released: closing a link
///    may call its close handler, which takes the lock.
/// 4. The link is opened by the first join; a feed that ends while it opens closes it as
///    soon as it is open. Its handlers hold the feed weakly; the hub and the members'
///    sessions hold it strongly.
final class WebSocketFeed: Sendable {
    typealias Machine = WebSocketFeedMachine<FeedMember>

    private enum LinkSlot {
        case none
        case opening
        case open(DaemonLink)
        case ended
    }

    private struct State {
        var machine: Machine
        var link = LinkSlot.none
        /// Made at the first message a deflating member needs (rule 2).
        var deflater: MessageDeflater?
    }

    /// Messages shorter than this go plain even to deflating members: deflate's ~10 µs
    /// and a few bytes of framing do not pay below it (hummingbird-websocket's default).
    static let minimumBytesToDeflate = 256

    /// What is left to do once the lock is released (rule 3).
    private enum LinkWork {
        case open
        case resubscribe(DaemonLink)
        case end(DaemonLink?)
    }

    let key: WebSocketFeedHub.Key
    private let options: DaemonLink.Options
    private let state: Locked<State>
    private let ended: @Sendable (WebSocketFeed) -> Void

    init(key: WebSocketFeedHub.Key, options: DaemonLink.Options, ended: @escaping @Sendable (WebSocketFeed) -> Void) {
        self.key = key
        self.options = options
        self.state = Locked(State(machine: Machine(list: key.list)))
        self.ended = ended
    }

    /// Joins `member`; false when the feed has ended (the hub then makes another).
    func join(_ member: FeedMember) -> Bool {
        let work: [LinkWork]? = state.withLock { state in
            switch state.machine.join(member) {
            case .feedEnded: return nil
            case .joined(let actions): return Self.carryOutUnderLock(actions, &state, list: key.list)
            }
        }
        guard let work else { return false }
        carryOut(work)
        return true
    }

    /// `member` leaves; it is sent nothing more once this returns.
    func leave(_ member: FeedMember) {
        carryOut(state.withLock { Self.carryOutUnderLock($0.machine.leave(member), &$0, list: key.list) })
    }

    /// Called on the link's event loop, in the daemon's order.
    private func daemonSent(_ message: Message) {
        let work: [LinkWork] = state.withLock { state in
            let actions: [Machine.Action]
            switch message {
            case .snapshot(let snapshot) where snapshot.listName == key.list:
                actions = state.machine.receivedSnapshot(snapshot)
            case .diff(let diff) where diff.listName == key.list:
                actions = state.machine.receivedDiff(diff)
            case .error(let error):
                // The link carries this one subscription: its error is the feed's.
                actions = state.machine.subscriptionRefused(Problem.daemon(code: error.code, message: error.message))
            default:
                actions = []
            }
            return Self.carryOutUnderLock(actions, &state, list: key.list)
        }
        carryOut(work)
    }

    private func linkClosed() {
        carryOut(state.withLock { Self.carryOutUnderLock($0.machine.linkLost(), &$0, list: key.list) })
    }

    /// Rule 1 and rule 2: queues the members' messages now; returns the link work.
    private static func carryOutUnderLock(
        _ actions: [Machine.Action], _ state: inout State, list: String
    )
        -> [LinkWork]
    {
        var work: [LinkWork] = []
        for action in actions {
            switch action {
            case .deliver(let message, let members):
                let bytes: [UInt8]
                switch message {
                case .snapshot(let snapshot): bytes = WebSocketServerMessage.snapshot(snapshot)
                case .diff(let diff): bytes = WebSocketServerMessage.diff(diff)
                }
                let buffer = ByteBuffer(bytes: bytes)
                var deflated: ByteBuffer?
                if bytes.count >= minimumBytesToDeflate, members.contains(where: { $0.session.deflates }) {
                    if state.deflater == nil { state.deflater = MessageDeflater() }
                    deflated = state.deflater?.compress(bytes)
                }
                for member in members { member.session.feedSent(buffer, deflated: deflated) }
            case .refuse(let problem, let members):
                for member in members { member.session.feedRefused(list: list, problem: problem) }
            case .linkLost(let members):
                for member in members { member.session.feedLinkLost() }
            case .subscribe:
                guard case .none = state.link else {
                    preconditionFailure("Internal inconsistency in WebSocketFeed: subscribe with a link")
                }
                state.link = .opening
                work.append(.open)
            case .resubscribe:
                if case .open(let link) = state.link { work.append(.resubscribe(link)) }
            case .end:
                let link: DaemonLink?
                if case .open(let open) = state.link { link = open } else { link = nil }
                state.link = .ended
                work.append(.end(link))
            }
        }
        return work
    }

    private func carryOut(_ work: [LinkWork]) {
        for item in work {
            switch item {
            case .open:
                Task { await self.openLink() }
            case .resubscribe(let link):
                // In order on the link: the old subscription's last Diffs, then the new
                // Snapshot (the machine ignores the former).
                link.send(.unsubscribe(Unsubscribe(listName: key.list)))
                link.send(.subscribe(Subscribe(listName: key.list, resumeFrom: nil)))
            case .end(let link):
                link?.close()
                ended(self)
            }
        }
    }

    private func openLink() async {
        let link: DaemonLink
        do {
            link = try await DaemonLink.open(options, eventLoop: MultiThreadedEventLoopGroup.singleton.next())
        } catch {
            carryOut(
                state.withLock {
                    Self.carryOutUnderLock($0.machine.subscriptionRefused(error.problem), &$0, list: key.list)
                }
            )
            return
        }
        link.setMessageHandler { [weak self] message in self?.daemonSent(message) }
        link.setCloseHandler { [weak self] _ in self?.linkClosed() }
        // Rule 4: the feed may have ended while the link was opening.
        let kept = state.withLock { state -> Bool in
            guard case .opening = state.link else { return false }
            state.link = .open(link)
            return true
        }
        guard kept else {
            link.close()
            return
        }
        link.send(.subscribe(Subscribe(listName: key.list, resumeFrom: nil)))
    }
}
