/// Holds the frames of batches whose commit has not returned, and releases them in
/// order once it has (docs/ARCHITECTURE.md, "Storage", rule 7). Pure: it knows
/// connections and lists only by key, and frames only as values; the server routes
/// every frame through it while it is not idle, and carries out what it releases.
///
/// The rules:
/// 1. A commit is *begun* for one list's batch (``begin(list:)``) and ends once, as
///    committed or failed (``complete(_:_:)``), in any order.
/// 2. A frame about a list (its Diff, an Ack or Reject of its mutations, a snapshot or
///    catch-up of its state) waits for the newest commit of that list begun before it:
///    it may show that state. A frame about no list waits for nothing of its own.
/// 3. Frames to one connection leave in the order they were routed: a frame that may
///    leave waits behind any frame routed to the same connection before it.
/// 4. A frame that waits for a failed commit never leaves; the frames behind it do,
///    when their own commits allow.
///
/// So with commits completing in order, a connection receives exactly the frames of
/// the committed batches, in the order they were routed (a batch's Diff before its
/// Acks, as ``Server`` routes them).
///
/// While no commit is pending and nothing is held, ``isIdle`` is true and the server
/// writes frames straight to the connection: a store that commits synchronously
/// never routes a frame through the gate (no cost on the fan-out's hot path).
struct CommitGate<ConnectionKey: Hashable, Frame> {
    /// One begun commit. Increasing in the order commits were begun.
    struct Ticket: Hashable, Comparable, CustomStringConvertible {
        let rawValue: UInt64
        static func < (a: Ticket, b: Ticket) -> Bool { a.rawValue < b.rawValue }
        var description: String { "#\(rawValue)" }
    }

    /// How a commit ended.
    enum Outcome: Equatable {
        case committed
        /// Not committed: every frame that waits for it is dropped.
        case failed
    }

    /// A frame routed through the gate.
    enum Route {
        /// Nothing holds it: write it now.
        case sendNow(Frame)
        /// Held until the commits before it returned.
        case held
    }

    /// What a completed commit lets go.
    struct Completion {
        /// The frames that may leave now, per connection, in order.
        var released: [(ConnectionKey, [Frame])] = []
        /// The connections that lost a frame (it waited for a failed commit): their
        /// stream now has a gap, so the caller ends them.
        var dropped: [ConnectionKey] = []
    }

    private struct HeldFrame {
        let frame: Frame
        /// The commit it waits for (rule 2), if any.
        let ticket: Ticket?
    }

    /// Pending commits: the list each is for.
    private var pending: [Ticket: String] = [:]
    /// Pending commits per list, oldest first.
    private var pendingByList: [String: [Ticket]] = [:]
    /// Failed commits that held frames may still name (cleared once nothing is held).
    private var failed: Set<Ticket> = []
    /// Held frames per connection, in routing order.
    private var held: [ConnectionKey: [HeldFrame]] = [:]
    private var nextTicket: UInt64 = 1

    init() {}

    /// True when no commit is pending and no frame is held: frames go straight out.
    var isIdle: Bool { pending.isEmpty && held.isEmpty }

    /// Commits begun and not completed.
    var pendingCount: Int { pending.count }

    /// Frames held, over all connections.
    var heldCount: Int { held.values.reduce(0) { $0 + $1.count } }

    /// Whether `list` has a commit pending.
    func hasPendingCommit(of list: String) -> Bool { pendingByList[list] != nil }

    /// A commit of `list`'s batch begins; its frames are routed after this.
    mutating func begin(list: String) -> Ticket {
        let ticket = Ticket(rawValue: nextTicket)
        nextTicket += 1
        pending[ticket] = list
        pendingByList[list, default: []].append(ticket)
        return ticket
    }

    /// Routes a frame to `connection`, about `list` (rule 2) or about no list.
    mutating func route(_ frame: Frame, to connection: ConnectionKey, about list: String?) -> Route {
        let ticket = list.flatMap { pendingByList[$0]?.last }
        if ticket == nil && held[connection] == nil { return .sendNow(frame) }
        held[connection, default: []].append(HeldFrame(frame: frame, ticket: ticket))
        return .held
    }

    /// A commit ended. Returns the frames that may now leave, per connection, in order,
    /// and the connections that lost frames.
    ///
    /// - Complexity: O(connections holding frames + frames released or dropped).
    mutating func complete(_ ticket: Ticket, _ outcome: Outcome) -> Completion {
        guard let list = pending.removeValue(forKey: ticket) else {
            preconditionFailure("Internal inconsistency in CommitGate: \(ticket) completed twice or never begun")
        }
        if var tickets = pendingByList[list] {
            tickets.removeAll { $0 == ticket }
            pendingByList[list] = tickets.isEmpty ? nil : tickets
        }
        if outcome == .failed { failed.insert(ticket) }
        var completion = Completion()
        var remaining: [(ConnectionKey, [HeldFrame]?)] = []
        for (connection, frames) in held {
            var index = 0
            var out: [Frame] = []
            var lost = false
            while index < frames.count {
                let head = frames[index]
                if let waited = head.ticket {
                    if pending[waited] != nil { break }
                    if failed.contains(waited) {
                        lost = true
                        index += 1
                        continue
                    }
                }
                out.append(head.frame)
                index += 1
            }
            guard index > 0 else { continue }
            remaining.append((connection, index == frames.count ? nil : Array(frames[index...])))
            if !out.isEmpty { completion.released.append((connection, out)) }
            if lost { completion.dropped.append(connection) }
        }
        for (connection, frames) in remaining { held[connection] = frames }
        if held.isEmpty { failed = [] }
        return completion
    }

    /// The connection is gone: its held frames are dropped.
    mutating func forget(_ connection: ConnectionKey) {
        held[connection] = nil
        if held.isEmpty { failed = [] }
    }

    /// Every held frame is dropped; pending commits stay pending (their completion
    /// still comes, and releases nothing). After a storage failure nothing leaves.
    mutating func dropHeldFrames() {
        held = [:]
        failed = []
    }
}
