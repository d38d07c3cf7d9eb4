/// What the 100 ms sweep remembers between its runs: when it last ran (loop lag), when
/// it last scanned for idle lists and sampled the list gauges (each at most so often:
/// both cost O(lists loaded)), and the count of stored lists a worker takes now and
/// then (lists on demand). Loop times in milliseconds.
struct Housekeeping {
    /// Loop time of the previous sweep (loop lag is measured against it).
    var lastSweep: UInt64 = 0
    /// Loop time of the last idle scan.
    var lastIdleScan: UInt64 = 0
    /// Loop time of the last sample of the list gauges.
    var lastListSample: UInt64 = 0
    /// A count of the stored lists is running on a worker.
    var countingStoredLists = false
    /// The stored lists at the last count (on demand; -1 before the first).
    var storedListCount = -1
    /// When to give the allocator's free pages back (``AllocatorTrimPolicy``).
    var trim = AllocatorTrimPolicy()
    /// The background check of the stored lists, once started (lists on demand).
    var storedListCheck: StoredListCheckProgress?

    struct StoredListCheckProgress {
        /// Loop time it started.
        var startedAt: UInt64
        var checked = 0
        var damaged = 0
        var finished = false
    }
}
