import FlowSyncCore
import FlowSyncProtocol

/// A batch another node committed, as a replica receives it: the commit to replay and
/// its Diff frame — the same bytes the owner sent its own subscribers.
public struct ReplicatedBatch: Sendable {
    public let commit: Sequencer.Commit
    public let frame: [UInt8]

    public init(commit: Sequencer.Commit, frame: [UInt8]) {
        self.commit = commit
        self.frame = frame
    }
}

/// A write another node forwarded to this one, the list's owner.
public struct ForwardedWrite: Sendable {
    /// The node to answer.
    public let origin: String
    public let mutate: Mutate

    public init(origin: String, mutate: Mutate) {
        self.origin = origin
        self.mutate = mutate
    }
}

/// The owner's answer to a forwarded write: the version that committed it, or why not.
public struct WriteAnswer: Sendable {
    public let origin: String
    public let list: String
    public let clientID: String
    public let seq: UInt64
    public let result: Result

    public enum Result: Sendable, Equatable {
        case committed(ListVersion)
        case rejected(ErrorCode, String)
    }

    public init(origin: String, list: String, clientID: String, seq: UInt64, result: Result) {
        self.origin = origin
        self.list = list
        self.clientID = clientID
        self.seq = seq
        self.result = result
    }
}

/// How ``ClusterNode/takeOver(_:completion:)`` ended.
public enum TakeOverOutcome: Sendable {
    /// This node owns the list now; every batch committed before was delivered first.
    case owned
    /// Another live node still owns it.
    case ownedElsewhere
    case failed(StoreError)
}

/// How ``ClusterNode/handOver(_:completion:)`` ended.
public enum HandOverOutcome: Sendable, Equatable {
    /// Released to the node placement prefers: this node follows the list as a replica
    /// from the head it had (its subscribers stay; its writes are forwarded).
    case released
    /// Not released (PostgreSQL failed): still owned here.
    case kept
    /// Another node had claimed it: this node may not append to it any more.
    case fenced
}

/// A cluster node's coordination with the others (cluster mode; docs/CLUSTER.md,
/// "Replicas") — not storage: the node's store commits and loads
/// (``CommittingStore``, ``LoopLoadingStore``); this is what the server asks of the node
/// about lists owned elsewhere (issue #30: it was `ReplicatingStore`, a kind of store).
/// ``ClusterStore`` is both. Every callback runs on the loop thread.
///
/// - A replica follows its owner's batches: ``onReplicated`` hands them over in
///   version order, each once; the server replays them and fans their frames out.
/// - A write to a replica is ``forward(_:)``ed to the owner; the owner's server gets
///   it through ``onForwarded`` and answers through ``answer(_:)``; the answers come
///   back through ``onAnswers`` on the node it came from.
/// - ``takeOver(_:completion:)`` makes a replica this node's when its owner's lease
///   has lapsed.
public protocol ClusterNode: AnyObject {
    var onReplicated: ((String, [ReplicatedBatch]) -> Void)? { get set }
    var onForwarded: ((String, [ForwardedWrite]) -> Void)? { get set }
    var onAnswers: (([WriteAnswer]) -> Void)? { get set }
    /// A replica cannot follow its list any more (its log does not decode): the server
    /// drops the list and closes its subscribers; the next use loads it again.
    var onReplicaBroken: ((String) -> Void)? { get set }
    /// A list this node serves as its owner is not its own any more (another node
    /// claimed it at a later term): the server drops it as after a fenced append and
    /// closes its clients with 5001 and `reason`'s message; its next use loads it again.
    var onOwnershipLost: ((String, FenceReason) -> Void)? { get set }
    /// Writes were forwarded to a list this node owns but has not loaded (it restarted
    /// since it claimed it): the server loads it, which takes them.
    var onInboxForUnloadedList: ((String) -> Void)? { get set }
    /// How long a forwarded write may wait for its answer before the server suspects
    /// the owner (and tries to take the list over).
    var forwardDeadlineMilliseconds: Int { get }
    /// Whether this node follows `name` as a replica (it does not own it).
    func isReplica(_ name: String) -> Bool
    /// Sends a write to the owner of its list.
    func forward(_ mutate: Mutate)
    /// Answers writes other nodes forwarded to this one (after their batch committed).
    func answer(_ answers: [WriteAnswer])
    /// A list has no owner now (its owner released it at a clean stop, or a write was
    /// forwarded to it while it had none): its preferred node (placement) claims it.
    var onOrphanedList: ((String) -> Void)? { get set }
    /// Whether placement prefers this node for `name` among the live nodes.
    func isPreferredOwner(of name: String) -> Bool
    /// A clean stop: gives up this node's lists and lease, so other nodes take them at
    /// once; `completion` runs on the loop thread when done, failed, or after a
    /// bounded wait.
    func release(_ completion: @escaping () -> Void)
    /// Forgets an idle list here (the server unloads it): a replica stops following it;
    /// an owned list stays this node's in PostgreSQL and is claimed back at its next
    /// load. `false`: not now (a read or a snapshot of it is in flight).
    func unload(_ name: String) -> Bool
    /// Claims replica `name` if its owner's lease has lapsed.
    func takeOver(_ name: String, completion: @escaping (TakeOverOutcome) -> Void)

    // MARK: Placement (issue #33)

    /// A node claimed `list` (PostgreSQL notified the claim; `owner` may be this node):
    /// the writes waiting here for it are sent to its owner now, not at their deadline.
    var onListClaimed: ((_ list: String, _ owner: String) -> Void)? { get set }
    /// A session with PostgreSQL began (the first, or one after a lost connection):
    /// what was notified meanwhile is lost, so the server sends every write still
    /// waiting for an answer again (a claim it missed, a forward the cut lost).
    var onSessionStarted: (() -> Void)? { get set }
    /// A ready peer link was lost (issue #33): writes forwarded over it may be lost in
    /// its queue, so the server sends every write still waiting again (they go through
    /// PostgreSQL now; a copy the owner committed is answered from its idempotency window).
    var onPeerLinkLost: (() -> Void)? { get set }
    /// The live nodes were read again and placement prefers another live node for these
    /// lists owned here (a node appeared, or this node took a list over): the server
    /// hands over those with nothing in flight; the others are offered again at the
    /// next read (every third of a lease).
    var onMisplacedLists: (([String]) -> Void)? { get set }
    /// Releases owned list `name` to the node placement prefers now, which is nudged to
    /// claim it; `completion` runs on the loop thread. Nothing of the list may be in
    /// flight (no batch committing, nothing waiting to be sealed).
    func handOver(_ name: String, completion: @escaping (HandOverOutcome) -> Void)
}
