/// A follower's side of peer links (issue #33, items 4 and 5; docs/CLUSTER.md, "Not built
/// yet"): what a node does with the batches an owner pushes to it for one list it
/// follows, and when it reads `fs_batches` instead. Pure; **not wired yet** — no link
/// carries pushes today, and replicas follow through PostgreSQL's notifications only
/// (``BatchAnnouncements``). It is the rules a link must keep, written and tested first.
///
/// Rules, each with its reason:
/// 1. **Apply only the next version.** A pushed batch `head + 1` of the followed epoch is
///    applied at once; the owner pushes only after its fenced append committed, so the
///    follower never shows what the log lacks.
/// 2. **A gap is filled from the log.** A pushed batch past `head + 1` (one was lost or
///    reordered with a link's loss) is held, and `fs_batches` is read after `head`; the
///    read's batches are applied, then the held ones that follow. One read at a time
///    per list; a newer gap found meanwhile is read when it returns.
/// 3. **Old and duplicate batches are dropped** (a push and a read of the same version,
///    or a push that arrives after the read covered it).
/// 4. **Another epoch or a term older than the newest seen is not applied**: a new
///    epoch means the list must be loaded again (`.reload`); a push from an older term
///    is from an owner that has since been fenced, and is ignored.
/// 5. **Without a link, PostgreSQL.** When the link to the owner is lost, every
///    announcement (`fs_batches` notification) past `head` reads the log, as today.
///
/// Not guaranteed: that what is held stays bounded by anything but ``holdLimit``; past
/// it the oldest held batches are dropped and the read fills them.
struct PushedBatches {
    /// What the store does, in this order: apply `apply` (the head is then the last
    /// one), then read `fs_batches` after `readAfter` and report it with ``read(_:)``;
    /// or, with `reload`, load the list again (another epoch, or a gap the log cannot
    /// fill).
    struct Step: Equatable {
        var apply: [Batch] = []
        var readAfter: Int64?
        var reload = false

        static let none = Step()
    }

    struct Batch: Equatable {
        var version: Int64
        var frame: [UInt8]
    }

    /// How many pushed batches past a gap are held at most.
    static let holdLimit = 1_024

    let epoch: Int64
    private(set) var head: Int64
    /// The newest owner term seen (rule 4).
    private(set) var term: Int64
    private var held: [Int64: [UInt8]] = [:]
    private var reading = false
    /// A gap or announcement seen while a read was out: read again when it returns.
    private var readAgain = false
    private(set) var linked: Bool

    /// How many pushed batches wait behind a gap (for tests and stats).
    var heldCount: Int { held.count }

    init(epoch: Int64, head: Int64, term: Int64, linked: Bool) {
        self.epoch = epoch
        self.head = head
        self.term = term
        self.linked = linked
    }

    /// The owner pushed batch `version` of `epoch` at `term` (rules 1–4).
    mutating func pushed(epoch: Int64, term: Int64, version: Int64, frame: [UInt8]) -> Step {
        guard epoch == self.epoch else { return epoch > self.epoch ? Step(reload: true) : .none }
        guard term >= self.term else { return .none }
        self.term = term
        guard version > head else { return .none }
        if version == head + 1 {
            head = version
            return Step(apply: [Batch(version: version, frame: frame)] + drainHeld())
        }
        held[version] = frame
        if held.count > Self.holdLimit, let oldest = held.keys.min() { held[oldest] = nil }
        return Step(readAfter: startRead())
    }

    /// An `fs_batches` notification (rule 5). With a link up it adds nothing: the next
    /// push shows whether the link fell behind.
    mutating func announced(version: Int64) -> Step {
        guard !linked, version > head else { return .none }
        return Step(readAfter: startRead())
    }

    /// The link to the owner was lost, or is back (rule 5).
    mutating func linkChanged(up: Bool) -> Step {
        linked = up
        // What may have been pushed and lost meanwhile: one read covers it.
        return up ? .none : Step(readAfter: startRead())
    }

    /// The read asked for returned the batches after the head it named, in order
    /// (`nil`: it failed; what is held, or the next push or announcement, asks again).
    ///
    /// A read that starts past `head + 1`, or that leaves held batches it should have
    /// reached (a push comes only after its commit, so a read that started after it
    /// holds it), means the log no longer has what this node misses (a snapshot
    /// trimmed it): the list loads again.
    mutating func read(_ batches: [Batch]?) -> Step {
        precondition(reading, "Internal inconsistency in PushedBatches: a read returned that was not asked for")
        reading = false
        let raced = readAgain
        readAgain = false
        var step = Step()
        if let batches {
            let fresh = batches.filter { $0.version > head }
            if let first = fresh.first, first.version != head + 1 { return Step(reload: true) }
            for batch in fresh {
                guard batch.version == head + 1 else { break }
                step.apply.append(batch)
                head = batch.version
            }
        }
        step.apply += drainHeld()
        if batches != nil && !raced && !held.isEmpty { return Step(apply: step.apply, reload: true) }
        if raced || !held.isEmpty { step.readAfter = startRead() }
        return step
    }

    /// `nil` when a read is already out (it is asked again when that one returns).
    private mutating func startRead() -> Int64? {
        if reading {
            readAgain = true
            return nil
        }
        reading = true
        return head
    }

    /// The held batches that now follow the head, in order; older ones are forgotten.
    private mutating func drainHeld() -> [Batch] {
        for version in held.keys where version <= head { held[version] = nil }
        var out: [Batch] = []
        while let frame = held.removeValue(forKey: head + 1) {
            head += 1
            out.append(Batch(version: head, frame: frame))
        }
        return out
    }
}
