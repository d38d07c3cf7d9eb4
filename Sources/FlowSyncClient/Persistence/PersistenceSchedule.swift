/// When to write a list's confirmed state to disk: after ``everyBatches`` batches, or
/// ``everyMilliseconds`` after the first batch not on disk, whichever comes first — and
/// at once when the app pauses or closes the client (when ``isDirty``).
///
/// Why a cadence: each write is the whole list (atomic replace), so writing after every
/// batch would cost O(n) bytes per O(k) change. With the defaults (100 batches or 5 s),
/// a list changing 20 times a second is written about once every 5 s, and a relaunch
/// fetches at most that much again as a Diff. Pure: the caller passes the time.
struct PersistenceSchedule: Sendable, Equatable {
    /// Batches after which the state is written.
    let everyBatches: Int
    /// Milliseconds after the first unsaved batch at which the state is written.
    let everyMilliseconds: UInt64
    /// Batches applied since the last write.
    private(set) var unsavedBatches = 0
    /// When the first of them arrived.
    private var firstUnsavedAt: UInt64?

    init(everyBatches: Int, everyMilliseconds: UInt64) {
        precondition(
            everyBatches >= 1, "Internal inconsistency in PersistenceSchedule: everyBatches must be at least 1")
        self.everyBatches = everyBatches
        self.everyMilliseconds = everyMilliseconds
    }

    /// Whether the state on disk is behind.
    var isDirty: Bool { unsavedBatches > 0 }

    /// The confirmed state advanced by `batches` (a Snapshot counts as one).
    mutating func advanced(batches: Int, now: UInt64) {
        guard batches > 0 else { return }
        if firstUnsavedAt == nil { firstUnsavedAt = now }
        unsavedBatches += batches
    }

    /// Whether to write now: enough batches, or the oldest unsaved one is old enough.
    /// Stays true until ``wrote()`` (a write the caller had to put off stays due).
    func isDue(now: UInt64) -> Bool {
        guard let first = firstUnsavedAt else { return false }
        return unsavedBatches >= everyBatches || now &- first >= everyMilliseconds
    }

    /// The state was captured for writing.
    mutating func wrote() {
        unsavedBatches = 0
        firstUnsavedAt = nil
    }
}
