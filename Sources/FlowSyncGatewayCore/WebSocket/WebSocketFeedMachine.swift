import FlowSyncCore
import FlowSyncProtocol

/// One shared feed of a list for the gateway's WebSocket: every fresh `subscribe` (no
/// `after`) of one list with one bearer token joins the same feed, which holds one daemon
/// subscription and one replica of the list (a ``Director``, digest-checked like the SDK's
/// `ListWritePipeline`), and hands each of the daemon's messages to every member as one
/// value, so the shell encodes its JSON once (STYLE.md rule 7). A pure machine (STYLE.md
/// rule 2): the shell (`WebSocketFeed`) opens and closes the daemon link, encodes and
/// queues the messages, and feeds the events back.
///
/// ```
///            join                 Snapshot                  Diff (from ≠ position, or
///   ┌──────┐ ───▶ ┌─────────────┐ ───────▶ ┌──────┐ ───────────▶ the digest differs)
///   │ idle │      │ subscribing │          │ live │ ◀───────┐  ┌────────────────┐
///   └──────┘      └─────────────┘          └──────┘ Snapshot└─ │ resubscribing  │
///                        │ everyone left, refused, link lost   └────────────────┘
///                        └─────────────────────────────────────▶ ended (from any state)
/// ```
///
/// The rules:
/// 1. **Keyed by (list, token).** The daemon authorizes per connection (the token of its
///    Hello), so a feed's link carries exactly one token, and the shell keys feeds by
///    (list, token): no member ever receives a list through someone else's token.
/// 2. **A snapshot first.** A member receives nothing before its snapshot. A member that
///    joins a live feed gets, at once, a snapshot built from the feed's replica at the
///    feed's position (reason `freshSubscribe`); one that joins before the daemon's first
///    Snapshot (or during a resubscribe) waits for it.
/// 3. **Every version once, in order.** After its snapshot at `p`, a member receives each
///    Diff whose `from` is its current position, in the daemon's order; a Diff that does
///    not start at the feed's position (a gap) or whose result does not match its digest
///    is not passed on: the feed resubscribes (``Action/resubscribe``), ignores the old
///    subscription's Diffs until the new Snapshot, and gives every member that snapshot
///    (reason `resyncRequested`; the JS client replaces its replica with it).
/// 4. **Leaving is final.** After ``leave(_:)`` a member is never named in an action
///    again. When the last member leaves the feed ends at once (``Action/end``: the shell
///    closes the link, which frees the daemon's subscription). Not lingering is a choice:
///    a reconnecting browser resumes with `after` on its own link (GATEWAY.md).
/// 5. **The link's end is everyone's.** The daemon refusing the subscription (or the link
///    failing to open) is every member's refusal; the link ending is every member's
///    ``Action/linkLost(members:)`` (their sockets close with 4502, as the per-socket
///    path's). A Snapshot that does not match its own digest is treated as a lost link:
///    the daemon or the framing is broken. The feed then ends; a later join makes a new one.
/// 6. **Slowness is the member's own.** The machine never waits for a member: the shell
///    queues each message to each member's bounded queue (the session machine's limits)
///    and a member past them is closed by its session, which then leaves.
///
/// Not guaranteed: the order of the members within one ``Action/deliver(_:to:)``.
///
/// - Complexity: ``join(_:)`` and each message are O(members) (the member list of the
///   action) plus the Diff's apply; ``leave(_:)`` is O(members).
public struct WebSocketFeedMachine<Member: Hashable & Sendable>: Sendable {
    /// A message for members: the shell encodes it once and queues the same bytes to each.
    public enum Message: Hashable, Sendable {
        case snapshot(Snapshot)
        case diff(Diff)
    }

    /// What the shell must do, in order.
    public enum Action: Sendable {
        /// Open the feed's daemon link (with the feed's token) and send a Subscribe
        /// without a position; answer with messages, ``subscriptionRefused(_:)`` or
        /// ``linkLost()``.
        case subscribe
        /// Send Unsubscribe and then a Subscribe without a position on the link (rule 3).
        case resubscribe
        /// Queue `message` to each of `members` (rule 6), before any later action's.
        case deliver(Message, to: [Member])
        /// Tell each of `members` that the daemon refused (their session's
        /// `subscriptionRefused`): rule 5.
        case refuse(Problem, members: [Member])
        /// Tell each of `members` that the feed's link ended (rule 5).
        case linkLost(members: [Member])
        /// Close the link (if any) and forget the feed: it has ended.
        case end
    }

    /// The answer to ``join(_:)``.
    public enum JoinAnswer: Sendable {
        /// Joined; carry these out.
        case joined([Action])
        /// The feed has ended: join a new one.
        case feedEnded
    }

    private struct Live: Sendable {
        var replica: Director
        var position: ListVersion
        var members: [Member]
    }

    private enum State: Sendable {
        /// Made; nobody has joined.
        case idle
        /// The Subscribe is out; these wait for its Snapshot.
        case subscribing(waiting: [Member])
        /// The replica is at the daemon's position; every member has had its snapshot.
        case live(Live)
        /// A gap or a digest mismatch: Unsubscribe + Subscribe sent; `members` had a
        /// snapshot before and get the new one as a resync, `waiting` as their first.
        case resubscribing(members: [Member], waiting: [Member])
        /// Over (rule 4, rule 5).
        case ended
    }

    /// The list's name (for the snapshots a joiner gets).
    public let list: String
    private var state: State = .idle

    /// A feed of `list` that nobody has joined yet.
    public init(list: String) {
        self.list = list
    }

    /// The replica limits: the daemon enforced its own; the feed accepts what it sends.
    public static var replicaLimits: DirectorLimits {
        DirectorLimits(
            maxIDBytes: .max, maxKindBytes: .max, maxPayloadBytes: .max,
            maxSections: .max, maxRows: .max, maxOpsPerMutation: .max)
    }

    // MARK: Reading

    /// Whether the feed is over (a join would be answered ``JoinAnswer/feedEnded``).
    public var hasEnded: Bool {
        if case .ended = state { return true }
        return false
    }

    /// Members, waiting ones included.
    public var memberCount: Int {
        switch state {
        case .idle, .ended: return 0
        case .subscribing(let waiting): return waiting.count
        case .live(let live): return live.members.count
        case .resubscribing(let members, let waiting): return members.count + waiting.count
        }
    }

    /// The replica's position while live.
    public var position: ListVersion? {
        if case .live(let live) = state { return live.position }
        return nil
    }

    // MARK: Events

    /// `member` wants the list (rule 2).
    public mutating func join(_ member: Member) -> JoinAnswer {
        switch state {
        case .ended:
            return .feedEnded
        case .idle:
            state = .subscribing(waiting: [member])
            return .joined([.subscribe])
        case .subscribing(var waiting):
            precondition(!waiting.contains(member), "Internal inconsistency in WebSocketFeedMachine: joined twice")
            state = .ended  // (uniquely referenced, as below)
            waiting.append(member)
            state = .subscribing(waiting: waiting)
            return .joined([])
        case .resubscribing(let members, var waiting):
            precondition(
                !waiting.contains(member) && !members.contains(member),
                "Internal inconsistency in WebSocketFeedMachine: joined twice")
            state = .ended  // (uniquely referenced, as below)
            waiting.append(member)
            state = .resubscribing(members: members, waiting: waiting)
            return .joined([])
        case .live(var live):
            precondition(!live.members.contains(member), "Internal inconsistency in WebSocketFeedMachine: joined twice")
            state = .ended  // keeps the member list uniquely referenced (no copy per join)
            live.members.append(member)
            let snapshot = Snapshot(
                listName: list, position: live.position, digest: live.replica.digest, reason: .freshSubscribe,
                sections: live.replica.sections)
            state = .live(live)
            return .joined([.deliver(.snapshot(snapshot), to: [member])])
        }
    }

    /// `member` left (rule 4). Unknown members are ignored (already dropped by rule 5).
    public mutating func leave(_ member: Member) -> [Action] {
        switch state {
        case .idle, .ended:
            return []
        case .subscribing(var waiting):
            guard let index = waiting.firstIndex(of: member) else { return [] }
            waiting.remove(at: index)
            guard !waiting.isEmpty else { return end() }
            state = .subscribing(waiting: waiting)
        case .resubscribing(var members, var waiting):
            if let index = members.firstIndex(of: member) {
                members.remove(at: index)
            } else if let index = waiting.firstIndex(of: member) {
                waiting.remove(at: index)
            } else {
                return []
            }
            guard !members.isEmpty || !waiting.isEmpty else { return end() }
            state = .resubscribing(members: members, waiting: waiting)
        case .live(var live):
            guard let index = live.members.firstIndex(of: member) else { return [] }
            state = .ended  // keeps the replica uniquely referenced (no copy on write)
            live.members.remove(at: index)
            guard !live.members.isEmpty else { return end() }
            state = .live(live)
        }
        return []
    }

    /// The daemon sent a Snapshot of the list (rule 2, rule 3).
    public mutating func receivedSnapshot(_ snapshot: Snapshot) -> [Action] {
        let hadSnapshot: [Member]
        let waiting: [Member]
        switch state {
        case .idle:
            preconditionFailure("Internal inconsistency in WebSocketFeedMachine: a Snapshot before any Subscribe")
        case .ended:
            return []
        case .subscribing(let w):
            hadSnapshot = []
            waiting = w
        case .resubscribing(let members, let w):
            hadSnapshot = members
            waiting = w
        case .live(let live):
            // The daemon's own resync (a slow gateway link), or a resubscribe's answer
            // behind an older resync: either way a whole state, passed on as a resync.
            hadSnapshot = live.members
            waiting = []
        }
        state = .ended  // the old replica is dropped before the new one is built
        guard let replica = try? Director(sections: snapshot.sections, limits: Self.replicaLimits),
            replica.digest == snapshot.digest
        else {
            // Rule 5: the daemon's own snapshot does not add up.
            return [.linkLost(members: hadSnapshot + waiting), .end]
        }
        state = .live(Live(replica: replica, position: snapshot.position, members: hadSnapshot + waiting))
        var actions: [Action] = []
        if !hadSnapshot.isEmpty {
            var resync = snapshot
            resync.reason = snapshot.reason == .freshSubscribe ? .resyncRequested : snapshot.reason
            actions.append(.deliver(.snapshot(resync), to: hadSnapshot))
        }
        if !waiting.isEmpty {
            var fresh = snapshot
            fresh.reason = .freshSubscribe
            actions.append(.deliver(.snapshot(fresh), to: waiting))
        }
        return actions
    }

    /// The daemon sent a Diff of the list (rule 3).
    public mutating func receivedDiff(_ diff: Diff) -> [Action] {
        switch state {
        case .idle:
            preconditionFailure("Internal inconsistency in WebSocketFeedMachine: a Diff before any Subscribe")
        case .ended, .subscribing, .resubscribing:
            // Subscribing: the daemon's first answer is a Snapshot, so nothing to pass on;
            // resubscribing: the old subscription's Diffs, before the new Snapshot.
            return []
        case .live(var live):
            if diff.from == live.position && diff.to == live.position { return [] }  // nothing happened
            state = .ended  // keeps the replica uniquely referenced while it changes
            guard diff.from == live.position, (try? diff.changeset.apply(to: &live.replica)) != nil,
                live.replica.digest == diff.digest
            else {
                state = .resubscribing(members: live.members, waiting: [])
                return [.resubscribe]
            }
            live.position = diff.to
            let members = live.members
            state = .live(live)
            return [.deliver(.diff(diff), to: members)]
        }
    }

    /// The daemon refused the subscription, or ended it with an error, or the link could
    /// not be opened (rule 5).
    public mutating func subscriptionRefused(_ problem: Problem) -> [Action] {
        let everyone = allMembers
        guard !hasEnded else { return [] }
        state = .ended
        return [.refuse(problem, members: everyone), .end]
    }

    /// The feed's daemon link ended (rule 5).
    public mutating func linkLost() -> [Action] {
        let everyone = allMembers
        guard !hasEnded else { return [] }
        state = .ended
        return [.linkLost(members: everyone), .end]
    }

    // MARK: Helpers

    private var allMembers: [Member] {
        switch state {
        case .idle, .ended: return []
        case .subscribing(let waiting): return waiting
        case .live(let live): return live.members
        case .resubscribing(let members, let waiting): return members + waiting
        }
    }

    private mutating func end() -> [Action] {
        state = .ended
        return [.end]
    }

    /// Traps if the members are not distinct (debug and tests).
    public func checkInvariants() {
        let everyone = allMembers
        precondition(
            Set(everyone).count == everyone.count, "Internal inconsistency in WebSocketFeedMachine: a member twice")
        switch state {
        case .subscribing(let waiting):
            precondition(!waiting.isEmpty, "Internal inconsistency in WebSocketFeedMachine: subscribing for nobody")
        case .live(let live):
            precondition(!live.members.isEmpty, "Internal inconsistency in WebSocketFeedMachine: live for nobody")
            precondition(
                live.replica.digest == StateDigest.compute(live.replica.sections),
                "Internal inconsistency in WebSocketFeedMachine: the replica's digest")
        case .resubscribing(let members, let waiting):
            precondition(
                !members.isEmpty || !waiting.isEmpty,
                "Internal inconsistency in WebSocketFeedMachine: resubscribing for nobody")
        case .idle, .ended:
            break
        }
    }
}
