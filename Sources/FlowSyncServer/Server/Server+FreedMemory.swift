#if canImport(Glibc)
/// glibc's `int malloc_trim(size_t pad)` (`<malloc.h>`, which the Glibc module does not
/// export).
@_silgen_name("malloc_trim")
private func glibcMallocTrim(_ pad: Int) -> Int32
#endif

/// Giving freed queue memory back to the system (issue #33, item 8).
///
/// Slow consumers make large, short-lived allocations: the part of a write libuv keeps
/// is copied into one block per write (up to the high watermark per subscriber), and a
/// catch-up snapshot is a frame the size of the list. glibc's allocator keeps what such
/// blocks leave free: once a large block obtained with `mmap` is freed it raises its mmap
/// threshold (up to 32 MiB), so later blocks of that size come from the heap, and heap
/// memory freed below the top is not returned. The daemon's RSS then stayed tens of MiB
/// above its baseline after the slow consumers had caught up or gone.
///
/// So the 100 ms sweep watches the bytes queued over all connections: once they were
/// high (≥ ``trimAfterQueuedBytes`` since the last trim) and have fallen to a quarter of
/// that, it calls `malloc_trim(0)`, which hands every free page of every arena back
/// (`madvise(MADV_DONTNEED)`), at most once a second. The cost is a walk of the free
/// chunks, on the loop — a millisecond or so for a heap of a few hundred MiB — and it
/// runs only after a queue burst, never in a steady state.
///
/// Not guaranteed: memory still in use stays (a list's history, cached snapshots), and
/// on a C library other than glibc nothing is trimmed.
extension Server {
    /// Bytes queued over all connections (at one sweep) that make a later trim due.
    static let trimAfterQueuedBytes = 8 << 20

    func returnFreedMemory(queuedBytes total: Int, now: UInt64) {
        housekeeping.queuedHighSinceTrim = max(housekeeping.queuedHighSinceTrim, total)
        let high = housekeeping.queuedHighSinceTrim
        guard high >= Self.trimAfterQueuedBytes, total <= high / 4, now >= housekeeping.lastTrim + 1_000 else { return }
        housekeeping.queuedHighSinceTrim = total
        housekeeping.lastTrim = now
        #if canImport(Glibc)
        _ = glibcMallocTrim(0)
        #endif
        events.memoryTrimmed()
    }
}
